"""``factool``: FacTool's knowledge-based QA pipeline (a baseline).

Claims are extracted from the input (the shared stage, `veracity.evidence.claims`:
decomposition only, as FacTool writes self-contained claims in one step); for each
claim the model writes search queries (`prompts/queries.j2`), each query is searched,
and the model verifies the claim against what came back (`prompts/verify.j2`):
reasoning, the error, a correction, and factuality true / false, read with the shared
`ask_choice`. The input's label is the conjunction of its claims. See README.md.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.context import CheckContext
from veracity.core.events import Note
from veracity.core.types import CheckInput, Document, Evidence, Verdict
from veracity.evidence.claims import ExtractedClaim, conjunction_label
from veracity.llm.choice import ask_choice
from veracity.llm.structured import complete_structured
from veracity.methods.base import OneSourceMethod
from veracity.methods.factool.config import FacToolConfig
from veracity.methods.labelling import whole_sentences
from veracity.prompt_layout import claim_prefix, render_laid_out
from veracity.prompting import truncate_chars
from veracity.retrieval.recorded.source import claim_binding
from veracity.tools.searching import source_tool, traced_search

PROMPTS = "veracity.methods.factool"
TAGS = ("claim", "evidence")  # every tag the per-claim prompts fence


def queries_model(n: int, chars: int) -> type[BaseModel]:
    query = Annotated[str, Field(min_length=1, max_length=chars)]
    return create_model(
        "FacToolQueries",
        queries=(list[query], Field(min_length=1, max_length=n)),  # type: ignore[valid-type]
    )


def verification_model(chars: int) -> type[BaseModel]:
    return create_model(
        "FacToolVerification",
        reasoning=(str, Field(max_length=chars)),
        error=(str, Field(max_length=400)),
        correction=(str, Field(max_length=400)),
        factuality=(Literal["true", "false"], Field(description="the evidence backs the claim")),
    )


class ClaimResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    spans: list[tuple[int, int]]
    queries: list[str]
    factual: bool
    reasoning: str
    error: str
    correction: str
    documents: list[Document] = Field(default_factory=list)


class FacToolMethod(OneSourceMethod):
    """Claims, queries, search, agreement verification (FacTool, KB-QA)."""

    name = "factool"
    config_class = FacToolConfig
    search_purpose = "FacTool's searches"
    description = "FacTool: claims, search queries, evidence, agreement verification (baseline)"
    config: FacToolConfig

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        text = truncate_chars(item.content, cfg.max_input_chars)
        with claim_binding(item.content):
            extractor = self.claim_extractor(cfg.extraction, "claims")
            claims = (await extractor.extract(text)).checkworthy[: cfg.max_claims]
            if not claims:
                ctx.emit(Note(name=self.name, text="no claims extracted: checking the input whole"))
                whole = " ".join(text.split())
                claims = [ExtractedClaim(id="c1", text=whole, atomic=whole,
                                         spans=[(0, len(text))], sentence=0)]  # fmt: skip
            results = [await self._claim(item, c) for c in claims]
        return self._verdict(results)

    async def _claim(self, item: CheckInput, claim: ExtractedClaim) -> ClaimResult:
        cfg = self.config
        prefix = claim_prefix(cfg.prompt_layout, claim.text, TAGS)  # queries, then verify
        reply = await complete_structured(
            self.llm,
            render_laid_out(
                PROMPTS, "queries.j2", prefix, claim=claim.text, n=cfg.queries_per_claim
            ),
            queries_model(cfg.queries_per_claim, cfg.query_chars),
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=f"{self.name}:{claim.id}:queries",
        )
        queries = list(dict.fromkeys(" ".join(q.split()) for q in reply.value.queries))  # type: ignore[attr-defined]
        tool = source_tool(
            self.source, top_k=cfg.top_k, max_chars=cfg.max_result_chars, before=item.cutoff
        )
        evidence, docs = [], []
        for q in queries:
            obs = await traced_search(tool, q, actor=self.name, claim=claim.id)
            evidence.append(obs.text)
            docs += obs.documents
        checked = await ask_choice(
            self.llm,
            render_laid_out(PROMPTS, "verify.j2", prefix, claim=claim.text, evidence=evidence),
            verification_model(cfg.max_reasoning_chars),
            "factuality",
            ("true", "false"),
            tag=f"{self.name}:{claim.id}:verify",
            policy=cfg.choice,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )
        v = checked.value
        return ClaimResult(
            id=claim.id, text=claim.text, spans=claim.spans, queries=queries,
            factual=checked.label == "true", reasoning=whole_sentences(v.reasoning),
            error=v.error, correction=v.correction, documents=docs,
        )  # fmt: skip

    def _verdict(self, results: list[ClaimResult]) -> Verdict:
        holds = [r.factual for r in results]
        share = sum(holds) / len(holds)
        wrong = [r for r in results if not r.factual]
        rationale = " ".join(f"{r.text}: {r.reasoning}" for r in (wrong or results))
        evidence, seen = [], set()
        for r in results:
            for d in r.documents:
                if d.id not in seen:
                    seen.add(d.id)
                    evidence.append(Evidence(document=d, note=f"claim {r.id}: {r.text}"))
        return self.verdict(
            label=conjunction_label(self.label_space, holds),
            score=share,
            rationale=truncate_chars(rationale, 2000),
            evidence=evidence,
            metadata={
                "factuality": share,
                "claims": [r.model_dump(exclude={"documents"}) for r in results],
            },
        )
