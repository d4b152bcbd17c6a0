"""`RecordedSource`: replay the search results a recorded run saw.

The default recording is MERMAID's GPT-4o ReAct runs on BingCheck, Factcheck-Bench and
FacTool-QA (``mermaid_eval_sets/recorded_gpt4o_traces`` in the data directory): the
Google and Wikipedia results seen then, so an offline run on those claims gets the same
web evidence. The index is built from the data directory on first use; nothing from it
is stored in the package.

A query is answered from the recorded search that matches it best:

1. the same query after normalisation (case, punctuation, spacing);
2. else the recorded query with the highest word overlap (Dice coefficient over content
   words) at or above ``lexical_threshold``, or, with ``matcher="embedding"`` or
   ``"both"``, the highest embedding cosine at or above ``embedding_threshold``.

When the claim is known (``claim=``, `bind`, or the running check's ``claim``, which a
method that checks one claim sets on its `CheckContext`) and was recorded, only that
claim's searches are candidates. Each Document
names the recorded search it came from in ``metadata`` (``recorded_query``,
``recorded_claim``, ``match``, ``match_score``, ``tool``, ``dataset``). A query that
matches nothing returns ``[]`` with a ``note`` event in the trace giving the best score
seen.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from veracity.core import context
from veracity.core.events import Note
from veracity.core.types import Document
from veracity.retrieval.base import Query, SourceUnreachable, apply_rules
from veracity.retrieval.engines.common import SourceOptions, doc_id, strip_html
from veracity.retrieval.recorded.traces import SEARCH_TOOLS, RecordedSearch, load_trace_file

TRACES_SUBDIR = Path("mermaid_eval_sets") / "recorded_gpt4o_traces"
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    _WORD.findall(
        "a an and are as at be by did do does for from has have how in is it of on or the to "
        "was were what when where which who why with"
    )
)


class RecordedOptions(SourceOptions):
    path: str | None = None  # a trace file or folder; default: the data dir's recording
    tools: tuple[str, ...] = SEARCH_TOOLS
    matcher: Literal["lexical", "embedding", "both"] = "lexical"
    lexical_threshold: float = Field(default=0.5, ge=0.0, le=1.0)
    embedding_threshold: float = Field(default=0.75, ge=-1.0, le=1.0)
    embedding_model: str | None = None  # default: the shared embedder


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def content_words(text: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(text.lower()) if w not in _STOP)


def dice(a: frozenset[str], b: frozenset[str]) -> float:
    return 2 * len(a & b) / (len(a) + len(b)) if a and b else 0.0


@dataclass
class _Index:
    searches: list[RecordedSearch]
    by_claim: dict[str, list[int]]
    norm: list[str]
    words: list[frozenset[str]]
    vectors: Any = None  # embedding matrix, built on first embedding match


class RecordedSource:
    """Replays recorded search results (see the module docstring).

    Args:
        name: instance name.
        claim: the claim being checked, to restrict matching to its recorded searches.
        **options: see `RecordedOptions`.

    Raises:
        SourceUnreachable: the recording is not where it should be.
    """

    kind = "recorded"

    def __init__(self, *, name: str = "recorded", claim: str | None = None, **options: Any):
        self.options = RecordedOptions(**options)
        self.name = name
        self.claim = claim
        self.files = self._files()
        self._index: _Index | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RecordedSource(name={self.name!r}, files={len(self.files)})"

    def _files(self) -> list[Path]:
        # the composition root hands the data directory's traces folder to a source that
        # names none (`veracity.runtime`); nothing here reads the environment
        root = Path(self.options.path) if self.options.path else None
        found = [] if root is None else sorted(root.glob("*.json")) if root.is_dir() else []
        files = found or ([root] if root is not None and root.is_file() else [])
        if not files:
            where = f"at {root}" if root is not None else "given (path=)"
            raise SourceUnreachable(
                self.name,
                f"no recorded traces {where}; get them with `veracity datasets get "
                "mermaid_eval_sets` (or set VERACITY_DATA_DIR, or path=)",
            )
        return files

    def bind(self, claim: str) -> RecordedSource:
        """A view of this source restricted to `claim` (the index is shared)."""
        view = object.__new__(RecordedSource)
        view.__dict__.update(self.__dict__)
        view.claim = claim
        return view

    def index(self) -> _Index:
        """The parsed recording (built on first use)."""
        with self._lock:
            if self._index is None:
                searches: list[RecordedSearch] = []
                for path in self.files:
                    searches += load_trace_file(path, tuple(self.options.tools))
                searches = [s for s in searches if s.status != "error"]
                by_claim: dict[str, list[int]] = {}
                for i, s in enumerate(searches):
                    by_claim.setdefault(normalise(s.claim), []).append(i)
                self._index = _Index(
                    searches,
                    by_claim,
                    [normalise(s.query) for s in searches],
                    [content_words(s.query) for s in searches],
                )
            return self._index

    def claims(self) -> list[str]:
        """Every claim the recording holds searches for."""
        return sorted({s.claim for s in self.index().searches})

    # ------------------------------------------------------------------ matching

    def _candidates(self, idx: _Index) -> tuple[list[int], bool]:
        # the claim comes with the check (methods send only their own queries)
        claim = self.claim if self.claim is not None else context.current().claim
        if claim is not None:
            own = idx.by_claim.get(normalise(claim))
            if own:
                return own, True
        return list(range(len(idx.searches))), False

    def _embedding_scores(self, idx: _Index, text: str, pool: list[int]) -> list[float]:
        from veracity.nlp.embeddings import get_embedder

        embedder = get_embedder(self.options.embedding_model)
        if idx.vectors is None:
            idx.vectors = embedder.embed([s.query for s in idx.searches])
        query_vector = embedder.embed([text])[0]
        return [float(idx.vectors[i] @ query_vector) for i in pool]

    def match(self, text: str) -> tuple[list[int], str, float, bool]:
        """Indices of the best-matching recorded searches, how they matched, the score,
        and whether the match was restricted to the bound claim."""
        idx = self.index()
        pool, restricted = self._candidates(idx)
        wanted = normalise(text)
        exact = [i for i in pool if idx.norm[i] == wanted]
        if exact:
            return exact, "exact", 1.0, restricted
        best: tuple[list[int], str, float] = ([], "none", 0.0)
        if self.options.matcher in ("lexical", "both"):
            words = content_words(text)
            scores = [dice(words, idx.words[i]) for i in pool]
            top = max(scores, default=0.0)
            if top >= self.options.lexical_threshold and top > 0:
                return (
                    [i for i, s in zip(pool, scores, strict=True) if s == top],
                    "lexical",
                    top,
                    restricted,
                )
            best = ([], "none", top)
        if self.options.matcher in ("embedding", "both") and pool:
            scores = self._embedding_scores(idx, text, pool)
            top = max(scores)
            if top >= self.options.embedding_threshold:
                chosen = [i for i, s in zip(pool, scores, strict=True) if s == top]
                return chosen, "embedding", top, restricted
            best = ([], "none", max(best[2], top))
        return best[0], best[1], best[2], restricted

    # ------------------------------------------------------------------ search

    async def search(self, query: Query) -> list[Document]:
        """The recorded results of the best-matching recorded search (see the module docstring).

        Raises:
            SourceUnreachable: the recording cannot be found.
            SourceBadResponse: the recording is not in the expected format.
        """
        text = query.render(quote=False)
        chosen, how, score, restricted = self.match(text)
        if not chosen:
            context.current().emit(
                Note(
                    name=self.name,
                    detail={
                        "message": "no recorded search matched",
                        "query": text,
                        "best_score": round(score, 3),
                    },
                )
            )
            return []
        idx = self.index()
        docs: list[Document] = []
        seen: set[str] = set()
        for i in chosen:
            search = idx.searches[i]
            for rank, result in enumerate(search.results, start=1):
                doc = self._doc(search, result, rank, how, score, restricted)
                if doc.id not in seen:
                    seen.add(doc.id)
                    docs.append(doc)
        return apply_rules(query, docs)

    def _doc(
        self,
        search: RecordedSearch,
        result: dict[str, Any],
        rank: int,
        how: str,
        score: float,
        restricted: bool,
    ) -> Document:
        title = strip_html(str(result.get("title") or ""))
        snippet = strip_html(str(result.get("snippet") or ""))
        url = result.get("link") or None
        if search.tool == "search_wikipedia" and title:
            url = "https://en.wikipedia.org/wiki/" + title.replace(" ", "_")
        key = url or f"{search.query}|{title}|{snippet}"
        return Document(
            id=doc_id("recorded", key),
            text=snippet or title,
            title=title,
            url=url,
            source=self.name,
            score=round(score / rank, 6),
            metadata={
                "recorded_query": search.query,
                "recorded_claim": search.claim,
                "claim_matched": restricted,
                "match": how,
                "match_score": round(score, 4),
                "tool": search.tool,
                "dataset": search.dataset,
                "position": result.get("position", rank),
                "site": result.get("source"),
                "truncated": bool(result.get("truncated")),
                "last_edited": result.get("timestamp"),
            },
        )
