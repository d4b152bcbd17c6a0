"""Stage I: the shared evidence pool, and how much of it fits the model's context window.

The pool is the claim's top-m passages from a source (the "retrieved evidence" setting)
or the evidence supplied with the claim (the "full evidence" setting). Every agent, the
stop agent and the judge see the same pool, numbered [E1], [E2], ... in rank order.

Prompt budget (tokens estimated as characters / 4): of the window, a headroom share is
kept free, then the judge's reply and a fixed allowance for instructions are set aside;
the pool may take up to `evidence_share` of the rest, and the debate transcript gets what
the pool leaves, split evenly over the most turns the debate can have. Passages that do
not fit are dropped from the bottom of the ranking, and the trace says how many.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from veracity.core import context
from veracity.core.events import Note
from veracity.core.types import Claim, Document, Evidence
from veracity.methods.base import MethodConfigError
from veracity.methods.radar.config import RadarBaseConfig
from veracity.prompting import truncate_chars
from veracity.retrieval.base import Query, Source
from veracity.retrieval.guards import guard_query

CHARS_PER_TOKEN = 4
MIN_TURN_CHARS = 400  # a turn shown in a prompt is never cut shorter than this
MIN_PASSAGE_CHARS = 200  # a top passage is cut to fit only if this much room is left


class PassagePool(BaseModel):
    """The passages every participant sees, with the prompt budget they leave.

    Attributes:
        passages: the passages in prompt order ([E1] first), each possibly shortened.
        origin: "retrieved" or "given".
        source: name of the source searched (retrieved setting).
        candidates: passages before fitting to the budget.
        dropped: passages left out because they did not fit.
        shortened: passages cut to `max_passage_chars` or to the remaining budget.
        budget_chars: characters allowed for the pool.
        turn_chars: characters each debate turn may take when shown in a prompt.
        context_window: the window the budget was computed for.
    """

    model_config = ConfigDict(extra="forbid")

    passages: list[Document] = Field(default_factory=list)
    origin: str
    source: str | None = None
    candidates: int = 0
    dropped: int = 0
    shortened: int = 0
    budget_chars: int = 0
    turn_chars: int = 0
    context_window: int = 0

    def render(self) -> str:
        """The pool as prompt text, one ``[E#]`` block per passage."""
        return "\n\n".join(_passage_line(i, d) for i, d in enumerate(self.passages, 1))

    def evidence(self, cited: set[int] | frozenset[int] = frozenset()) -> list[Evidence]:
        """The pool as Verdict evidence; `cited` holds the ``E`` numbers the judge cited."""
        out = []
        for i, doc in enumerate(self.passages, 1):
            note = f"E{i}" + ("; cited in the verdict" if i in cited else "")
            out.append(Evidence(document=doc, note=note))
        return out


def _passage_line(i: int, doc: Document) -> str:
    head = f"[E{i}]"
    if doc.title:
        head += f" {doc.title}"
    if doc.published_at:
        head += f" ({doc.published_at.date().isoformat()})"
    return f"{head}: {doc.text.strip()}"


async def gather_candidates(
    claim: Claim, cfg: RadarBaseConfig, source: Source | None
) -> tuple[list[Document], str | None]:
    """The candidate passages of the claim and the name of the source searched.

    The retrieved setting asks the source for the top-m passages published before the
    claim's date (and applies the evaluation guards when an evaluation is running).
    """
    if cfg.evidence == "given":
        return list(claim.evidence), None
    if source is None:
        raise MethodConfigError("RADAR retrieves evidence but has no source configured")
    query = guard_query(Query(text=claim.text, top_k=cfg.top_m, before=claim.date))
    docs = await source.search(query)
    return docs[: cfg.top_m], source.name


def budget(cfg: RadarBaseConfig, window: int) -> tuple[int, int]:
    """Characters allowed for the pool, and for pool and debate together.

    Raises:
        MethodConfigError: the window cannot hold the judge's reply and instructions.
    """
    usable = int(window * (1 - cfg.context_headroom)) - cfg.max_tokens_judge
    usable -= cfg.prompt_overhead_tokens
    if usable < 512:
        raise MethodConfigError(
            f"a context window of {window} tokens leaves {usable} for evidence and debate; "
            "use a model with a larger window or lower max_tokens_judge"
        )
    return int(usable * cfg.evidence_share) * CHARS_PER_TOKEN, usable * CHARS_PER_TOKEN


def fit_pool(
    docs: list[Document],
    cfg: RadarBaseConfig,
    *,
    window: int,
    turns: int,
    origin: str,
    source: str | None,
) -> PassagePool:
    """Keep passages in rank order while they fit the budget; see the module docstring."""
    pool_chars, total_chars = budget(cfg, window)
    kept: list[Document] = []
    used = shortened = 0
    for doc in docs:
        text = doc.text.strip()
        if len(text) > cfg.max_passage_chars:
            text = truncate_chars(text, cfg.max_passage_chars)
        header = len(_passage_line(len(kept) + 1, doc)) - len(doc.text.strip())
        room = pool_chars - used - header
        if len(text) > room:
            # Lower-ranked passages go first; only a lone top passage is cut to fit.
            if kept or room < MIN_PASSAGE_CHARS:
                break
            text = truncate_chars(text, room)
        if text != doc.text.strip():
            shortened += 1
            doc = doc.model_copy(update={"text": text})
        kept.append(doc)
        used += len(_passage_line(len(kept), doc)) + 2
    turn_chars = max(MIN_TURN_CHARS, (total_chars - used) // max(turns, 1))
    pool = PassagePool(
        passages=kept,
        origin=origin,
        source=source,
        candidates=len(docs),
        dropped=len(docs) - len(kept),
        shortened=shortened,
        budget_chars=pool_chars,
        turn_chars=turn_chars,
        context_window=window,
    )
    context.current().emit(
        Note(
            name="evidence_pool",
            detail={
                "origin": origin,
                "source": source,
                "candidates": pool.candidates,
                "kept": len(kept),
                "dropped": pool.dropped,
                "shortened": shortened,
                "budget_chars": pool_chars,
                "turn_chars": turn_chars,
                "context_window": window,
                "ids": [d.id for d in kept],
            },
        )
    )
    return pool
