"""ZoFia: fake-news detection without training data, from entity-driven search and LLM agents.

Stage 1 (`retrieval.py`) turns the news into a conjunctive entity query for the open
web and disambiguated Wikipedia summaries. Stage 2 runs the linguist, the domain expert
and claim extraction + verification concurrently (`analysis.py`), then a pro/con debate
with a ternary judge (`debate.py`). See README.md for the paper → code map.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from veracity.core.context import CheckContext
from veracity.core.events import Fault
from veracity.core.types import Article, CheckInput, Claim, Evidence, Stance, Verdict
from veracity.deliberation import verdict_fields
from veracity.methods.base import BaseMethod, MethodConfig, MethodConfigError
from veracity.methods.zofia.analysis import AnalystReports, Analysts, ExtractedClaims
from veracity.methods.zofia.config import ZoFiaConfig
from veracity.methods.zofia.debate import build_debate, judge_without_debate
from veracity.methods.zofia.rag import ClaimRAG
from veracity.methods.zofia.retrieval import (
    Encyclopedia,
    EntityGuidedRetrieval,
    Stage1Result,
    as_encyclopedia,
)
from veracity.nlp.embeddings import Embedder, get_embedder
from veracity.prompting import truncate_chars
from veracity.retrieval.base import Source, SourceAuthError, SourceError
from veracity.retrieval.defaults import SourceNeed


class ZoFiaMethod(BaseMethod):
    """ZoFia over an Article (title + body) or a Claim; REAL / FAKE.

    Args:
        llm: the model for every agent.
        config: a ZoFiaConfig or mapping (the Table 2/3 ablations: its settings).
        sources: must hold the open-web source under ``config.web_source`` (unless web
            retrieval is off) and may hold the encyclopedia under ``config.wiki_source``.
        encyclopedia: the encyclopedia, when not given among `sources`.
        embedder: SBERT embedder (default: the shared all-MiniLM-L6-v2).
        ner: a NER backend instance (default: built from the config).
    """

    name = "zofia"
    config_class = ZoFiaConfig
    default_labels = "real_fake"
    extra_parts = ("encyclopedia", "embedder", "ner")  # a test's stand-ins
    allowed_labels = ("real_fake",)
    input_kinds = ("article", "claim")
    description = "ZoFia: entity-guided retrieval + linguist/expert/claim agents + debate"
    config: ZoFiaConfig

    def setup(self) -> None:
        super().setup()
        cfg, extras = self.config, self.parts.extras
        self.web: Source | None = None
        if cfg.use_web:
            self.web = self.pick_source(
                cfg.web_source,
                missing=f"zofia needs an open-web source named {cfg.web_source!r}: give one with "
                f"--source {cfg.web_source}=duckduckgo (or web:brave, ...; see `veracity sources`) "
                f"or a local index standing in for the web, --source {cfg.web_source}=local:INDEX "
                "(ablation without it: --set use_web=false)",
            )
        self.wiki: Encyclopedia | None = None
        if cfg.use_wikipedia:
            try:
                given = extras.get("encyclopedia") or self.sources.get(cfg.wiki_source)
                self.wiki = as_encyclopedia(given)
            except TypeError as exc:
                given = self.sources.get(cfg.wiki_source)
                what = "none is given" if given is None else f"{exc}"
                raise MethodConfigError(
                    f"zofia needs Wikipedia as a source named {cfg.wiki_source!r} ({what}): give "
                    f"it with --source {cfg.wiki_source}=wikipedia (ablation without it: --set "
                    "use_wikipedia=false)"
                ) from exc
        self._embedder: Embedder | None = extras.get("embedder")
        self._ner = extras.get("ner")

    @classmethod
    def source_needs(cls, config: MethodConfig | Mapping[str, Any]) -> list[SourceNeed]:
        cfg = config
        if not isinstance(cfg, ZoFiaConfig):
            try:
                cfg = ZoFiaConfig.model_validate(dict(config))
            except ValidationError:
                return []
        needs = []
        if cfg.use_web:
            needs.append(SourceNeed(cfg.web_source, purpose="open-web search"))
        if cfg.use_wikipedia:
            needs.append(
                SourceNeed(
                    cfg.wiki_source,
                    "encyclopedia",
                    off={"use_wikipedia": False},
                    purpose="Wikipedia retrieval",
                )
            )
        return needs

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.config.embedder)
        return self._embedder

    def _news(self, item: CheckInput) -> tuple[str, str]:
        """(text for retrieval, text shown to agents)."""
        if isinstance(item, Article):
            full = f"{item.title}\n\n{item.body}" if item.title else item.body
        elif isinstance(item, Claim):
            full = item.text
        else:  # input kinds are checked in BaseMethod.check
            raise TypeError(f"zofia cannot check a {item.kind}")
        shown = truncate_chars(full, self.config.max_article_chars)
        return full, shown

    async def _stage1(self, text: str, item: CheckInput, core: str | None) -> Stage1Result:
        if self.web is None and self.wiki is None:
            return Stage1Result(mode="off", notes=["retrieval is off in this variant"])
        retrieval = EntityGuidedRetrieval(
            self.config, self.llm, self.embedder, web=self.web, wiki=self.wiki, ner=self._ner
        )
        return await retrieval.run(text, item.cutoff, core_claim=core)

    async def _analyses(
        self, news: str, stage1: Stage1Result, extracted: ExtractedClaims | None
    ) -> AnalystReports:
        cfg = self.config
        analysts = Analysts(self.llm, cfg)
        pool = AnalystReports()
        jobs: dict[str, Any] = {}
        if cfg.linguist:
            jobs["linguist"] = analysts.linguist(news)
        if cfg.expert:
            jobs["expert"] = analysts.expert(news, stage1.wiki_text())
        if cfg.claim_verification:
            jobs["claims"] = self._claims(analysts, news, stage1, extracted)
        results = dict(zip(jobs, await asyncio.gather(*jobs.values()), strict=True))
        pool.linguist = results.get("linguist", {})
        if "expert" in results:
            pool.triage, pool.expert = results["expert"]
        pool.claims = results.get("claims", [])
        return pool

    async def _claims(self, analysts, news, stage1, extracted):
        cfg = self.config
        rag = await asyncio.to_thread(
            ClaimRAG,
            stage1.web,
            self.embedder,
            top_k=cfg.rag_top_k,
            theta_sim=cfg.theta_sim,
            chunk_words=cfg.chunk_words,
        )
        if extracted is None:
            extracted = await analysts.extract_claims(news)
        todo = [(extracted.core_claim, True)] + [(s, False) for s in extracted.sub_claims]
        return list(await asyncio.gather(*(analysts.verify(c, k, rag) for c, k in todo)))

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        text, news = self._news(item)
        extracted = None
        if cfg.query_mode == "core_claim" and self.web is not None:
            extracted = await Analysts(self.llm, cfg).extract_claims(news)
        try:
            stage1 = await self._stage1(text, item, extracted.core_claim if extracted else None)
        except SourceAuthError:
            raise
        except SourceError as exc:
            if cfg.on_source_error == "fail":
                raise
            ctx.emit(Fault(name="zofia:retrieval", error=str(exc), detail={"continued": True}))
            stage1 = Stage1Result(mode=cfg.query_mode, notes=[f"retrieval failed: {exc}"])
        pool = await self._analyses(news, stage1, extracted)
        pool_text = pool.render(cfg.max_pool_chars)
        if cfg.debate:
            result = await build_debate(self.llm, self.label_space, cfg, news, pool_text).run()
        else:
            result = await judge_without_debate(self.llm, self.label_space, cfg, news, pool_text)
        return self.verdict(
            **verdict_fields(result, self.label_space),
            evidence=_evidence(pool, stage1),
            metadata={
                "keywords": [k.model_dump() for k in stage1.keywords],
                "query": stage1.query.model_dump(mode="json") if stage1.query else None,
                "retrieval_notes": stage1.notes,
                "debate_rounds": result.rounds_run,
                "stop_reason": result.stop_reason,
                "analyses": pool.model_dump(mode="json", exclude={"claims"}),
                "claims": [
                    {"claim": c.claim, "core": c.core, "label": c.label, "reason": c.reason}
                    for c in pool.claims
                ],
            },
        )


def _evidence(pool: AnalystReports, stage1: Stage1Result) -> list[Evidence]:
    """Quoted claim evidence first, then the Wikipedia summaries and the web results."""
    out = [e for c in pool.claims for e in c.evidence]
    out += [
        Evidence(document=w.document, stance=Stance.NEUTRAL, note=f"Wikipedia for {w.keyword}")
        for w in stage1.wiki
    ]
    quoted = {e.document.metadata.get("parent_id") for e in out}
    out += [
        Evidence(document=d, stance=Stance.UNKNOWN, note="open-web result")
        for d in stage1.web
        if d.id not in quoted
    ]
    return out
