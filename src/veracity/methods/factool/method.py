"""``factool``: FacTool's knowledge-based QA pipeline (a baseline).

Claims are extracted from the input in one call, as FacTool does: self-contained
claims under 15 words, every reference resolved (`prompts/claims.j2`; ``claim_extraction:
shared`` runs the shared stage instead). For each claim the model writes search queries
(`prompts/queries.j2`), each query is searched, and the model looks for factual errors
in the claim with what came back as optional help (`prompts/verify.j2`, after the
release's ``agreement_verification.yaml``): reasoning, the error, a correction, and
factuality true / false, read with the shared `ask_choice`; a claim is non-factual only
when several pieces of evidence contradict it. A verification with no usable reply
counts as factual, as in the release's response score. The input's label is the
conjunction of its claims. See README.md.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.context import CheckContext
from veracity.core.errors import StructuredOutputError
from veracity.core.events import Note
from veracity.core.types import CheckInput, Document, Verdict
from veracity.evidence.claims import ExtractedClaim, conjunction_label, word_overlap
from veracity.llm.choice import ask_choice
from veracity.llm.structured import complete_structured
from veracity.methods.base import OneSourceMethod
from veracity.methods.factool.config import FacToolConfig
from veracity.methods.kit import check_tool, claims_or_whole, gathered_evidence
from veracity.methods.labelling import whole_sentences
from veracity.nlp.text import sentence_spans
from veracity.prompt_layout import claim_material, make_layout
from veracity.prompting import render_messages, truncate_chars
from veracity.tools.searching import traced_search

PROMPTS = "veracity.methods.factool"
TAGS = ("claim", "evidence")  # every tag the per-claim prompts fence


def queries_model(n: int, chars: int) -> type[BaseModel]:
    query = Annotated[str, Field(min_length=1, max_length=chars)]
    return create_model(
        "FacToolQueries",
        queries=(list[query], Field(min_length=1, max_length=n)),  # type: ignore[valid-type]
    )


def claims_model(chars: int) -> type[BaseModel]:
    claim = Annotated[str, Field(min_length=1, max_length=chars)]
    return create_model(
        "FacToolClaims",
        claims=(list[claim], Field(min_length=0, max_length=50)),  # type: ignore[valid-type]
    )


def verification_model(chars: int, backed: bool = False) -> type[BaseModel]:
    meaning = "the evidence backs the claim" if backed else "the claim has no factual error"
    return create_model(
        "FacToolVerification",
        reasoning=(str, Field(max_length=chars)),
        error=(str, Field(max_length=400)),
        correction=(str, Field(max_length=400)),
        factuality=(Literal["true", "false"], Field(description=meaning)),
    )


def source_spans(text: str, claim: str) -> list[tuple[int, int]]:
    """The span of the sentence of `text` whose words overlap `claim`'s most (the whole
    text when it has no sentence)."""
    spans = sentence_spans(text)
    if not spans:
        return [(0, len(text))]
    return [max(spans, key=lambda s: word_overlap(text[s[0] : s[1]], claim))]


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
    verified: bool = True  # False: no usable verification reply (counted as factual)
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
        ctx.claim = item.content  # recorded sources replay this claim's searches
        found = (await self._extract(text))[: cfg.max_claims]
        claims = claims_or_whole(found, text, actor=self.name, none_found="no claims extracted")
        results = [await self._claim(item, c, ctx) for c in claims]
        return self._verdict(results)

    async def _extract(self, text: str) -> list[ExtractedClaim]:
        """The input's claims: FacTool's one call over the whole text, or the shared stage."""
        cfg = self.config
        if cfg.claim_extraction == "shared":
            extractor = self.claim_extractor(cfg.extraction, "claims")
            return (await extractor.extract(text)).checkworthy
        reply = await complete_structured(
            self.llm,
            render_messages(PROMPTS, "claims.j2", text=text, max_words=cfg.max_claim_words,
                            max_claims=cfg.max_claims),
            claims_model(cfg.extraction.max_claim_chars),
            temperature=cfg.temperature, max_tokens=cfg.max_tokens,
            tag=f"{self.name}:claims:extract",
        )  # fmt: skip
        found = list(dict.fromkeys(" ".join(c.split()) for c in reply.value.claims))  # type: ignore[attr-defined]
        return [
            ExtractedClaim(id=f"c{i}", text=c, atomic=c, spans=source_spans(text, c), sentence=0)
            for i, c in enumerate((c for c in found if c), 1)
        ]

    async def _claim(
        self, item: CheckInput, claim: ExtractedClaim, ctx: CheckContext
    ) -> ClaimResult:
        cfg = self.config
        layout = make_layout(cfg.prompt_layout, TAGS)
        material = claim_material(claim.text)  # the queries' and the verification's
        reply = await complete_structured(
            self.llm,
            layout.messages(PROMPTS, "queries.j2", material=material, n=cfg.queries_per_claim),
            queries_model(cfg.queries_per_claim, cfg.query_chars),
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=f"{self.name}:{claim.id}:queries",
        )
        queries = list(dict.fromkeys(" ".join(q.split()) for q in reply.value.queries))  # type: ignore[attr-defined]
        tool = check_tool(self.source, cfg, item)
        evidence, docs = [], []
        for q in queries:
            obs = await traced_search(tool, q, actor=self.name, claim=claim.id)
            evidence.append(obs.text)
            docs += obs.documents
        backed = cfg.criterion == "evidence_backed"
        template = "verify_backed.j2" if backed else "verify.j2"
        try:
            checked = await ask_choice(
                self.llm,
                layout.messages(PROMPTS, template, material=material, evidence=evidence),
                verification_model(cfg.max_reasoning_chars, backed),
                "factuality",
                ("true", "false"),
                tag=f"{self.name}:{claim.id}:verify",
                policy=cfg.choice,
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
            )
        except StructuredOutputError as exc:
            if cfg.failed_verification == "error":
                raise
            ctx.emit(Note(name=self.name, text=f"claim {claim.id}: no usable verification "
                          f"({str(exc)[:200]}); counted as factual, as FacTool does"))  # fmt: skip
            return ClaimResult(
                id=claim.id, text=claim.text, spans=claim.spans, queries=queries, factual=True,
                reasoning="", error="", correction="", verified=False, documents=docs,
            )  # fmt: skip
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
        evidence = gathered_evidence((f"claim {r.id}: {r.text}", r.documents) for r in results)
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
