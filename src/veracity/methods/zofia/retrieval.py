"""ZoFia stage 1, entity-guided retrieval (section 3, Algorithms 2–3, Eq. 6–7).

Keywords come from NER with a dynamic confidence threshold, hierarchical salience and
SC-MMR (or from one of the Table 3 query variants). They form one conjunctive query for
the open web; in parallel each keyword is looked up in the encyclopedia, the sense that
best fits the keyword's local context is chosen (Eq. 7), and the first sentences of its
summary are kept.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import re
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, Field

from veracity.core import context
from veracity.core.events import Decision, Stage
from veracity.core.types import Document
from veracity.llm.base import LLM
from veracity.llm.structured import complete_structured
from veracity.methods.zofia.config import ZoFiaConfig
from veracity.nlp.disambiguation import SenseCandidate, disambiguate
from veracity.nlp.embeddings import Embedder
from veracity.nlp.entities import (
    EntitySpan,
    ThresholdConfig,
    extract_entities,
    merge_duplicates,
    with_sentences,
)
from veracity.nlp.keywords import SCMMRConfig, select_keywords, tfidf_keywords
from veracity.nlp.ner_backends import shared_ner
from veracity.nlp.salience import hierarchical_salience, local_context, most_salient_sentence
from veracity.nlp.text import split_sentences
from veracity.prompting import render_messages
from veracity.retrieval.base import Query, Source, SourceBadResponse, SourceError
from veracity.retrieval.guards import guard_query


class Encyclopedia(Protocol):
    """What ZoFia needs from Wikipedia: candidate senses and summaries."""

    async def candidates(self, entity: str, limit: int = 10) -> list[SenseCandidate]: ...

    async def summary(self, title: str, sentences: int = 3) -> Document: ...


class WikipediaEncyclopedia:
    """`Encyclopedia` over `veracity.retrieval.engines.wikipedia.WikipediaSource`.

    Converts its candidates (a blank description falls back to the page title, which
    Eq. 7 can still compare) and page summaries into the shapes stage 1 uses, and
    records each lookup as a search in the check's trace.
    """

    def __init__(self, wiki: Any, name: str = "wikipedia"):
        self.wiki = wiki
        self.name = name

    async def _lookup(self, call: Any, query: dict[str, str]) -> Any:
        """Await one lookup; a failure is recorded as a failed search and raised."""
        try:
            return await call
        except SourceError as exc:
            context.current().record_search_failure(
                name=self.name, error=f"{type(exc).__name__}: {exc}", query=query
            )
            raise

    async def candidates(self, entity: str, limit: int = 10) -> list[SenseCandidate]:
        found = await self._lookup(self.wiki.candidates(entity, limit=limit), {"senses_of": entity})
        context.current().record_search(
            name=self.name,
            cached=False,
            query={"senses_of": entity},
            results=[c.title for c in found],
        )
        return [
            SenseCandidate(title=c.title, description=c.description.strip() or c.title, ref=c.url)
            for c in found
        ]

    async def summary(self, title: str, sentences: int = 3) -> Document:
        page = await self._lookup(
            self.wiki.summary(title, sentences=sentences), {"summary_of": title}
        )
        context.current().record_search(
            name=self.name,
            cached=False,
            query={"summary_of": title},
            results=[page.title] if page else [],
        )
        if page is None:
            raise SourceBadResponse(self.name, f"page {title!r} vanished between lookups")
        return Document(
            id=f"wikipedia:{page.language}:{page.title}",
            title=page.title,
            text=page.extract,
            url=page.url,
            source=self.name,
            metadata={"description": page.description},
        )


def as_encyclopedia(obj: Any) -> Encyclopedia:
    """`obj` as an Encyclopedia: a (managed) Wikipedia source (kind ``wikipedia``, as
    `veracity.retrieval.engines.wikipedia.WikipediaSource`) is adapted, anything that
    already has candidates() and summary() is used as it is."""
    inner = getattr(obj, "inner", obj)
    if getattr(inner, "kind", None) == "wikipedia":
        return WikipediaEncyclopedia(inner, name=getattr(obj, "name", "wikipedia"))
    if hasattr(obj, "candidates") and hasattr(obj, "summary"):
        return obj
    raise TypeError(f"{type(obj).__name__} offers no candidates() and summary()")


class Keyword(BaseModel):
    text: str
    salience: float | None = None
    mmr: float | None = None
    context: str | None = None  # local context C(U) used for disambiguation


class WikiEntry(BaseModel):
    keyword: str
    chosen: str
    how: str = "disambiguated"
    scores: dict[str, float] = Field(default_factory=dict)
    document: Document


class Stage1Result(BaseModel):
    """Everything stage 1 produced, kept whole for the trace."""

    mode: str
    keywords: list[Keyword] = Field(default_factory=list)
    query: Query | None = None
    web: list[Document] = Field(default_factory=list)
    wiki: list[WikiEntry] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def wiki_text(self) -> str:
        return "\n".join(f"- {e.chosen}: {e.document.text}" for e in self.wiki)


class LLMKeywords(BaseModel):
    keywords: list[Annotated[str, Field(max_length=80)]] = Field(
        max_length=10, description="the key entities or terms, most important first"
    )


class EntityGuidedRetrieval:
    """Stage 1 for one configuration.

    Args:
        config: ZoFia config.
        llm: the model (used by LLM-based NER and the LLM keyword variant).
        embedder: SBERT embedder for salience, SC-MMR and disambiguation.
        web: open-web source (None when retrieval from the web is off).
        wiki: encyclopedia (None when Wikipedia retrieval is off).
        ner: NER backend for the "entities" mode (built lazily when None).
    """

    def __init__(
        self,
        config: ZoFiaConfig,
        llm: LLM,
        embedder: Embedder,
        *,
        web: Source | None = None,
        wiki: Encyclopedia | None = None,
        ner: Any = None,
    ):
        self.cfg = config
        self.llm = llm
        self.embedder = embedder
        self.web = web
        self.wiki = wiki
        self._ner = ner

    # ------------------------------------------------------------------ keywords

    def _ner_backend(self) -> Any:
        if self._ner is None:
            self._ner = shared_ner(self.cfg.ner_backend, self.cfg.hf_ner_model)
        return self._ner

    def _threshold(self) -> ThresholdConfig:
        c = self.cfg
        return ThresholdConfig(
            lambda_init=c.lambda_init, delta=c.lambda_step, floor=c.lambda_floor, n_min=c.n_min
        )

    def _scmmr(self) -> SCMMRConfig:
        c = self.cfg
        return SCMMRConfig(
            lambda_min=c.lambda_min,
            lambda_max=c.lambda_max,
            alpha=c.alpha,
            beta=c.beta,
            gamma=c.gamma,
            mmr_prev_init=c.mmr_prev_init,
            fixed_k=c.fixed_keywords,
        )

    async def _entities(self, text: str) -> tuple[list[Any], dict[str, Any]]:
        if self.cfg.ner_backend == "llm" or self.cfg.query_mode == "llm_ner":
            from veracity.nlp.ner_llm import LLMNER, aextract_entities

            extraction = await aextract_entities(
                text, LLMNER(self.llm, tag="zofia:ner"), self._threshold()
            )
        else:
            extraction = await asyncio.to_thread(
                extract_entities, text, self._ner_backend(), self._threshold()
            )
        f = extraction.filtered
        info = {
            "backend": extraction.backend,
            "raw": [(e.text, round(e.confidence, 4)) for e in extraction.raw],
            "threshold": f.threshold,
            "kept": [e.text for e in f.selected],
        }
        return list(f.selected), info

    async def keywords_from_entities(self, text: str) -> tuple[list[Keyword], dict[str, Any]]:
        entities, info = await self._entities(text)
        return await self._salient_keywords(text, entities, info)

    async def _salient_keywords(
        self, text: str, entities: list[Any], info: dict[str, Any]
    ) -> tuple[list[Keyword], dict[str, Any]]:
        """Hierarchical salience, then SC-MMR, over `entities` (section 3.2-3.3)."""
        if not entities:
            return [], info
        scored = await asyncio.to_thread(
            hierarchical_salience, text, entities, embedder=self.embedder
        )
        by_text = {s.text: s for s in scored}
        result = await asyncio.to_thread(
            select_keywords,
            {s.text: s.salience for s in scored},
            embedder=self.embedder,
            config=self._scmmr(),
        )
        info["salience"] = {s.text: round(s.salience, 4) for s in scored}
        info["sc_mmr_stop"] = result.stop_reason
        keywords = [
            Keyword(text=k.text, salience=k.salience, mmr=k.mmr, context=by_text[k.text].context)
            for k in result.selected
        ]
        return keywords, info

    async def keywords_from_tfidf(self, text: str) -> tuple[list[Keyword], dict[str, Any]]:
        """Table 3's TF-IDF row: TF-IDF terms replace the entities (the acquisition step
        only); hierarchical salience and SC-MMR then run over them as over entities."""
        terms = tfidf_keywords(text, top_n=10)
        info: dict[str, Any] = {"tfidf": {t.term: round(t.score, 4) for t in terms}}
        top = max((t.score for t in terms), default=0.0) or 1.0
        spans = []
        for t in terms:
            for m in re.finditer(rf"(?<!\w){re.escape(t.term)}(?!\w)", text, re.IGNORECASE):
                spans.append(
                    EntitySpan(
                        text=m.group(), label="TERM", start=m.start(), end=m.end(),
                        confidence=min(1.0, t.score / top),
                    )
                )  # fmt: skip
        spans.sort(key=lambda s: s.start)
        entities = merge_duplicates(with_sentences(text, spans))
        return await self._salient_keywords(text, entities, info)

    async def keywords_from_llm(self, text: str) -> tuple[list[Keyword], dict[str, Any]]:
        result = await complete_structured(
            self.llm,
            render_messages("veracity.methods.zofia", "llm_keywords.j2", news=text),
            LLMKeywords,
            temperature=self.cfg.temperature,
            max_tokens=200,
            tag="zofia:llm_keywords",
        )
        words = [k.strip() for k in result.value.keywords if k.strip()][:6]
        return [Keyword(text=w) for w in dict.fromkeys(words)], {"llm_keywords": words}

    async def build_query(
        self, text: str, cutoff: _dt.date | None, core_claim: str | None = None
    ) -> tuple[Query | None, list[Keyword], dict[str, Any]]:
        """Keywords and the web query for the configured query mode."""
        mode = self.cfg.query_mode
        base = {
            "top_k": self.cfg.web_top_k,
            "before": cutoff,
            "exclude_domains": self.cfg.exclude_domains,
        }
        if mode in ("sentence_salience", "core_claim"):
            # these rows change the open-web query only: Wikipedia still looks up the
            # entity keywords, as in the full method
            keywords, info = await self.keywords_from_entities(text)
            if mode == "core_claim":
                if not core_claim:
                    raise ValueError("query_mode 'core_claim' needs the extracted core claim")
                return Query(text=core_claim, **base), keywords, {**info, "core_claim": core_claim}
            best = await asyncio.to_thread(most_salient_sentence, text, embedder=self.embedder)
            return Query(text=best.text, **base), keywords, {**info, "sentence": best.text}
        if mode == "tfidf":
            keywords, info = await self.keywords_from_tfidf(text)
        elif mode == "llm_keywords":
            keywords, info = await self.keywords_from_llm(text)
        else:
            keywords, info = await self.keywords_from_entities(text)
        if not keywords:
            return None, [], info
        query = Query(keywords=[k.text for k in keywords], operator=self.cfg.operator, **base)
        return query, keywords, info

    # ------------------------------------------------------------------ retrieval

    async def search_web(self, query: Query) -> list[Document]:
        assert self.web is not None
        return await self.web.search(guard_query(query))

    async def lookup(self, keyword: Keyword, text: str) -> WikiEntry | None:
        """Disambiguate `keyword` against encyclopedia senses; None when nothing is found."""
        assert self.wiki is not None
        candidates = await self.wiki.candidates(keyword.text, limit=self.cfg.wiki_candidates)
        if not candidates:
            return None
        ctx_text = keyword.context or _context_of(keyword.text, text)
        scores: dict[str, float] = {}
        how = "disambiguated"
        if len(candidates) == 1:
            chosen, how = candidates[0], "single candidate"
        elif ctx_text is None:
            chosen, how = candidates[0], "keyword not found in the text: top search result"
        else:
            try:
                result = await asyncio.to_thread(
                    disambiguate, keyword.text, ctx_text, candidates, embedder=self.embedder
                )
            except ValueError as exc:  # the mention's surface form is not in the context
                chosen, how = candidates[0], f"no disambiguation ({exc}): top search result"
            else:
                chosen = result.best
                scores = {s.candidate.title: round(s.score, 4) for s in result.scores}
        context.current().emit(
            Decision(
                name="zofia:disambiguation",
                detail={
                    "keyword": keyword.text,
                    "chosen": chosen.title,
                    "how": how,
                    "scores": scores,
                },
            )
        )
        doc = await self.wiki.summary(chosen.title, sentences=self.cfg.wiki_sentences)
        return WikiEntry(
            keyword=keyword.text, chosen=chosen.title, how=how, scores=scores, document=doc
        )

    async def run(
        self, text: str, cutoff: _dt.date | None, core_claim: str | None = None
    ) -> Stage1Result:
        ctx = context.current()
        query, keywords, info = await self.build_query(text, cutoff, core_claim)
        result = Stage1Result(mode=self.cfg.query_mode, keywords=keywords, query=query)
        ctx.emit(
            Stage(
                name="zofia:keywords",
                detail={
                    **info,
                    "mode": self.cfg.query_mode,
                    "keywords": [k.model_dump() for k in keywords],
                    "query": query.model_dump(mode="json") if query else None,
                },
            )
        )
        tasks = []
        if self.web is not None and query is not None:
            tasks.append(self.search_web(query))
        if self.wiki is not None and keywords:
            tasks.append(_settled(*(self.lookup(k, text) for k in keywords)))
        done = await _settled(*tasks)
        if self.web is not None and query is not None:
            result.web = done.pop(0)
        if self.wiki is not None and keywords:
            result.wiki = [e for e in done.pop(0) if e is not None]
        if query is None:
            result.notes.append("no keywords were found, so no open-web query was made")
        ctx.emit(
            Stage(
                name="zofia:retrieval",
                detail={
                    "web": [d.url or d.id for d in result.web],
                    "wiki": {e.keyword: e.chosen for e in result.wiki},
                    "notes": result.notes,
                },
            )
        )
        return result


async def _settled(*aws: Any) -> list[Any]:
    """Await all of `aws`, then raise the first failure: a search that fails does not
    leave the others running past the check (their failures would land in no verdict)."""
    done = await asyncio.gather(*aws, return_exceptions=True)
    for outcome in done:
        if isinstance(outcome, BaseException):
            raise outcome
    return list(done)


def _context_of(keyword: str, text: str) -> str | None:
    """Local context (previous + current + next sentence) of the first mention."""
    sentences = split_sentences(text)
    rx = re.compile(re.escape(keyword), re.IGNORECASE)
    for j, sentence in enumerate(sentences):
        if rx.search(sentence):
            return local_context(sentences, j)
    return None
