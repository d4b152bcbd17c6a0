"""``factcheck_gpt``: the FactCheck-GPT pipeline of Factcheck-Bench (a baseline).

The input goes through the shared claim-extraction stage (`veracity.evidence.claims`):
decomposition, decontextualisation and check-worthiness, the pipeline's first three
subtasks. For each check-worthy claim the model writes queries (`prompts/queries.j2`),
the passages they retrieve are each given a stance (support, partial, refute,
irrelevant; `prompts/stance.j2`, one call per claim), and the stances are aggregated
into the claim's verdict (`aggregate`). The input's label is the conjunction of its
claims. See README.md for the map and the choices made where the paper is silent.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.context import CheckContext
from veracity.core.events import Note
from veracity.core.types import CheckInput, Document, Evidence, Verdict
from veracity.evidence.claims import ExtractedClaim, conjunction_label
from veracity.llm.structured import complete_structured
from veracity.methods.base import OneSourceMethod
from veracity.methods.factcheck_gpt.config import FactCheckGPTConfig
from veracity.prompt_layout import SharedPrefix, claim_prefix, render_laid_out
from veracity.prompting import truncate_chars
from veracity.retrieval.recorded.source import claim_binding
from veracity.tools.searching import source_tool, traced_search

PROMPTS = "veracity.methods.factcheck_gpt"
TAGS = ("claim", "passage")  # every tag the per-claim prompts fence
Stance = Literal["support", "partial", "refute", "irrelevant"]
_WEIGHT = {"support": 1.0, "partial": 0.5, "refute": -1.0, "irrelevant": 0.0}


def queries_model(n: int, chars: int) -> type[BaseModel]:
    query = Annotated[str, Field(min_length=1, max_length=chars)]
    return create_model(
        "FactCheckGPTQueries",
        queries=(list[query], Field(min_length=1, max_length=n)),  # type: ignore[valid-type]
    )


def stances_model(n: int) -> type[BaseModel]:
    return create_model(
        "FactCheckGPTStances", stances=(list[Stance], Field(min_length=n, max_length=n))
    )


def aggregate(stances: list[str]) -> bool:
    """A claim holds when its passages lean to support: support counts 1, partial 0.5,
    refute -1, irrelevant 0, and the sum must be above 0 (no relevant passage: not
    supported)."""
    return sum(_WEIGHT[s] for s in stances) > 0


class ClaimResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    spans: list[tuple[int, int]]
    queries: list[str]
    stances: list[str]
    holds: bool
    documents: list[Document] = Field(default_factory=list)


class FactCheckGPTMethod(OneSourceMethod):
    """Extract, retrieve, judge each passage's stance, aggregate (FactCheck-GPT)."""

    name = "factcheck_gpt"
    config_class = FactCheckGPTConfig
    search_purpose = "FactCheck-GPT's evidence retrieval"
    description = "FactCheck-GPT: check-worthy claims, evidence stances, aggregation (baseline)"
    config: FactCheckGPTConfig

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        text = truncate_chars(item.content, cfg.max_input_chars)
        with claim_binding(item.content):
            extractor = self.claim_extractor(cfg.extraction, "claims")
            claims = (await extractor.extract(text)).checkworthy[: cfg.max_claims]
            if not claims:
                ctx.emit(
                    Note(name=self.name, text="no check-worthy claim: checking the input whole")
                )
                whole = " ".join(text.split())
                claims = [ExtractedClaim(id="c1", text=whole, atomic=whole,
                                         spans=[(0, len(text))], sentence=0)]  # fmt: skip
            results = [await self._claim(item, c) for c in claims]
        return self._verdict(results)

    async def _ask(
        self, template: str, model: type, tag: str, prefix: SharedPrefix | None, **variables: Any
    ) -> Any:
        cfg = self.config
        reply = await complete_structured(
            self.llm, render_laid_out(PROMPTS, template, prefix, **variables), model,
            temperature=cfg.temperature, max_tokens=cfg.max_tokens, tag=f"{self.name}:{tag}",
        )  # fmt: skip
        return reply.value

    async def _claim(self, item: CheckInput, claim: ExtractedClaim) -> ClaimResult:
        cfg = self.config
        n = cfg.queries_per_claim
        prefix = claim_prefix(cfg.prompt_layout, claim.text, TAGS)  # queries, then stances
        written = await self._ask("queries.j2", queries_model(n, cfg.query_chars),
                                  f"{claim.id}:queries", prefix, claim=claim.text, n=n)  # fmt: skip
        queries = list(dict.fromkeys(" ".join(q.split()) for q in written.queries))
        tool = source_tool(
            self.source, top_k=cfg.top_k, max_chars=cfg.max_result_chars, before=item.cutoff
        )
        docs: dict[str, Document] = {}
        for q in queries:
            obs = await traced_search(tool, q, actor=self.name, claim=claim.id)
            for d in obs.documents:
                docs.setdefault(d.id, d)
        passages = [truncate_chars(f"{d.title}\n{d.text}".strip(), cfg.max_result_chars)
                    for d in docs.values()]  # fmt: skip
        stances: list[str] = []
        if passages:
            model = stances_model(len(passages))
            judged = await self._ask(
                "stance.j2",
                model,
                f"{claim.id}:stance",
                prefix,
                claim=claim.text,
                passages=passages,
            )
            stances = list(judged.stances)
        return ClaimResult(
            id=claim.id, text=claim.text, spans=claim.spans, queries=queries, stances=stances,
            holds=aggregate(stances), documents=list(docs.values()),
        )  # fmt: skip

    def _verdict(self, results: list[ClaimResult]) -> Verdict:
        holds = [r.holds for r in results]
        share = sum(holds) / len(holds)
        lines = [
            f"{r.text}: {'supported' if r.holds else 'not supported'} "
            f"({', '.join(r.stances) or 'no passages'})"
            for r in results
        ]
        evidence = [
            Evidence(document=d, note=f"claim {r.id}: {s}")
            for r in results
            for d, s in zip(
                r.documents, r.stances or ["not judged"] * len(r.documents), strict=True
            )
        ]
        return self.verdict(
            label=conjunction_label(self.label_space, holds),
            score=share,
            rationale=truncate_chars(" ".join(lines), 2000),
            evidence=evidence,
            metadata={
                "factuality": share,
                "claims": [r.model_dump(exclude={"documents"}) for r in results],
            },
        )
