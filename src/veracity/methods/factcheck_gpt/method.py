"""``factcheck_gpt``: the FactCheck-GPT pipeline of Factcheck-Bench (a baseline).

The input goes through the shared claim-extraction stage (`veracity.evidence.claims`):
decomposition, decontextualisation and check-worthiness, the pipeline's first three
subtasks. For each check-worthy claim the model writes queries (`prompts/queries.j2`,
sampled twice from a prompt with 6 worked examples, as the release does), each is
searched and the results become ranked passages (`passages`, after the release's
``src/retrieve.py``). The release's verifier (``src/verify.py``) then judges the claim
over all its passages in one reply: reasoning, the error, a correction and
the factuality (`prompts/verify.j2`, reply `verification_model`). Only when that reply
stays unusable are the passages given a stance each (support, refute, irrelevant;
`prompts/stance.j2`, one call per passage as the release does), and one supporting
passage makes the claim true. The input's label is the conjunction of its claims.
``verdict_rule: weighted_stances`` keeps our rule before issue 40 (4-way stances in one
call per claim, summed). See README.md.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.context import CheckContext
from veracity.core.errors import StructuredOutputError
from veracity.core.events import Note
from veracity.core.types import CheckInput, Document, Evidence, Verdict
from veracity.core.untrusted import Safe
from veracity.evidence.claims import ExtractedClaim, conjunction_label
from veracity.llm.structured import complete_structured
from veracity.methods.base import OneSourceMethod
from veracity.methods.factcheck_gpt.config import FactCheckGPTConfig
from veracity.methods.factcheck_gpt.examples import rendered_examples
from veracity.methods.factcheck_gpt.passages import in_turn, rank_for_query
from veracity.methods.kit import claims_or_whole
from veracity.methods.labelling import whole_sentences
from veracity.prompt_layout import claim_material, make_layout
from veracity.prompting import truncate_chars
from veracity.tools.searching import source_tool, traced_search

PROMPTS = "veracity.methods.factcheck_gpt"
TAGS = ("claim", "passage")  # every tag the per-claim prompts fence
Stance = Literal["support", "refute", "irrelevant"]  # the release's three options
WeightedStance = Literal["support", "partial", "refute", "irrelevant"]
_WEIGHT = {"support": 1.0, "partial": 0.5, "refute": -1.0, "irrelevant": 0.0}


def queries_model(n: int, chars: int) -> type[BaseModel]:
    query = Annotated[str, Field(min_length=1, max_length=chars)]
    return create_model(
        "FactCheckGPTQueries",
        queries=(list[query], Field(min_length=1, max_length=n)),  # type: ignore[valid-type]
    )


def verification_model(chars: int) -> type[BaseModel]:
    """The release verifier's reply: reasoning, error, correction, factuality."""
    return create_model(
        "FactCheckGPTVerification",
        __config__=ConfigDict(extra="forbid"),
        reasoning=(str, Field(max_length=chars)),
        error=(str, Field(max_length=400)),
        correction=(str, Field(max_length=400)),
        factuality=(bool, Field(description="true: the claim holds no factual error")),
    )


def stance_model() -> type[BaseModel]:
    """One passage's stance (the release's fallback, one call per passage)."""
    return create_model("FactCheckGPTStance", stance=(Stance, ...))


def stances_model(n: int) -> type[BaseModel]:
    """Every passage's 4-way stance in one reply (``verdict_rule: weighted_stances``)."""
    return create_model(
        "FactCheckGPTStances",
        stances=(list[WeightedStance], Field(min_length=n, max_length=n)),
    )


def by_stances(stances: list[str]) -> bool:
    """The release's fallback rule (``verify_by_stance``): one supporting passage makes
    the claim true; otherwise (refuting or irrelevant passages, or none) it is false."""
    return "support" in stances


def aggregate(stances: list[str]) -> bool:
    """``weighted_stances``: support counts 1, partial 0.5, refute -1, irrelevant 0, and
    the sum must be above 0 (no relevant passage: not supported)."""
    return sum(_WEIGHT[s] for s in stances) > 0


class ClaimResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    spans: list[tuple[int, int]]
    queries: list[str]
    # verified: the verifier's reply decided; stances: the fallback (or weighted) rule
    decided_by: Literal["verified", "stances"]
    holds: bool
    reasoning: str = ""
    error: str = ""
    correction: str = ""
    stances: list[str] = Field(default_factory=list)
    documents: list[Document] = Field(default_factory=list)


class FactCheckGPTMethod(OneSourceMethod):
    """Extract, retrieve passages, verify each claim over them (FactCheck-GPT)."""

    name = "factcheck_gpt"
    config_class = FactCheckGPTConfig
    search_purpose = "FactCheck-GPT's evidence retrieval"
    description = "FactCheck-GPT: check-worthy claims, ranked passages, verification (baseline)"
    config: FactCheckGPTConfig

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        text = truncate_chars(item.content, cfg.max_input_chars)
        ctx.claim = item.content  # recorded sources replay this claim's searches
        extractor = self.claim_extractor(cfg.extraction, "claims")
        found = (await extractor.extract(text)).checkworthy[: cfg.max_claims]
        claims = claims_or_whole(found, text, actor=self.name, none_found="no check-worthy claim")
        results = [await self._claim(item, c, ctx) for c in claims]
        return self._verdict(results)

    async def _ask(
        self,
        template: str,
        model: type,
        tag: str,
        material: Safe,
        *,
        temperature: float | None = None,
        seed: int | None = None,
        **variables: Any,
    ) -> Any:
        cfg = self.config
        layout = make_layout(cfg.prompt_layout, TAGS)
        reply = await complete_structured(
            self.llm, layout.messages(PROMPTS, template, material=material, **variables), model,
            temperature=cfg.temperature if temperature is None else temperature,
            max_tokens=cfg.max_tokens, tag=f"{self.name}:{tag}", seed=seed,
        )  # fmt: skip
        return reply.value

    async def _queries(self, claim: ExtractedClaim, material: Safe) -> list[str]:
        """The claim's queries: `query_rounds` samples (each its own seed, so a cache
        keeps them apart), their union in the order written, repeats dropped."""
        cfg = self.config
        n = cfg.queries_per_claim
        examples = rendered_examples() if cfg.query_examples else ""
        written: list[str] = []
        for r in range(cfg.query_rounds):
            reply = await self._ask(
                "queries.j2", queries_model(n, cfg.query_chars), f"{claim.id}:queries", material,
                temperature=cfg.query_temperature, seed=r if cfg.query_rounds > 1 else None,
                n=n, examples=examples,
            )  # fmt: skip
            written += reply.queries
        return list(dict.fromkeys(" ".join(q.split()) for q in written))

    async def _evidence(
        self, item: CheckInput, claim: ExtractedClaim, queries: list[str]
    ) -> list[Document]:
        """The passages the claim is judged on (`evidence`: ranked passages or snippets)."""
        cfg = self.config
        passages = cfg.evidence == "passages"
        chars = cfg.max_page_chars if passages else cfg.max_result_chars
        tool = source_tool(self.source, top_k=cfg.top_k, max_chars=chars, before=item.cutoff)
        found: list[list[Document]] = []
        for q in queries:
            obs = await traced_search(tool, q, actor=self.name, claim=claim.id)
            found.append(obs.documents)
        if not passages:
            docs: dict[str, Document] = {}
            for d in (d for ds in found for d in ds):
                docs.setdefault(d.id, d)
            return [
                d.model_copy(update={"text": truncate_chars(f"{d.title}\n{d.text}".strip(),
                                                            cfg.max_result_chars)})
                for d in docs.values()
            ]  # fmt: skip
        ranked = [
            await rank_for_query(
                q, docs, ranker=cfg.ranker, size=cfg.passage_sentences,
                stride=cfg.passage_stride, max_sentence_chars=cfg.max_sentence_chars,
                per_result=cfg.passages_per_result, per_query=cfg.passages_per_query,
            )
            for q, docs in zip(queries, found, strict=True)
        ]  # fmt: skip
        return [
            p.document.model_copy(
                update={"id": f"{p.document.id}#s{p.first}", "text": p.text, "score": p.score}
            )
            for p in in_turn(ranked, cfg.passages_per_claim)
        ]

    async def _claim(
        self, item: CheckInput, claim: ExtractedClaim, ctx: CheckContext
    ) -> ClaimResult:
        cfg = self.config
        material = claim_material(claim.text)  # the queries', the verification's
        queries = await self._queries(claim, material)
        docs = await self._evidence(item, claim, queries)
        passages = [d.text for d in docs]
        common = {"id": claim.id, "text": claim.text, "spans": claim.spans, "queries": queries,
                  "documents": docs}  # fmt: skip
        if cfg.verdict_rule == "weighted_stances":
            stances: list[str] = []
            if passages:
                judged = await self._ask("stance_weighted.j2", stances_model(len(passages)),
                                         f"{claim.id}:stance", material,
                                         passages=passages)  # fmt: skip
                stances = list(judged.stances)
            return ClaimResult(
                **common, decided_by="stances", holds=aggregate(stances), stances=stances
            )
        try:
            v = await self._ask(
                "verify.j2", verification_model(cfg.max_reasoning_chars), f"{claim.id}:verify",
                material, passages=passages,
            )  # fmt: skip
        except StructuredOutputError as exc:
            ctx.emit(Note(name=self.name, text=f"claim {claim.id}: verification unusable "
                          f"({str(exc)[:200]}); judging by passage stances"))  # fmt: skip
        else:
            return ClaimResult(
                **common, decided_by="verified", holds=v.factuality,
                reasoning=whole_sentences(v.reasoning), error=v.error, correction=v.correction,
            )  # fmt: skip
        stances = []
        for i, passage in enumerate(passages, 1):
            got = await self._ask("stance.j2", stance_model(), f"{claim.id}:stance:{i}",
                                  material, passage=passage)  # fmt: skip
            stances.append(got.stance)
        return ClaimResult(
            **common, decided_by="stances", holds=by_stances(stances), stances=stances
        )

    def _verdict(self, results: list[ClaimResult]) -> Verdict:
        holds = [r.holds for r in results]
        share = sum(holds) / len(holds)

        def line(r: ClaimResult) -> str:
            said = "true" if r.holds else "false"
            if r.decided_by == "verified":
                return f"{r.text}: {said}. {r.reasoning}".strip()
            return f"{r.text}: {said} ({', '.join(r.stances) or 'no passages'})"

        evidence = [
            Evidence(document=d, note=f"claim {r.id}: {s}" if s else f"claim {r.id}: {r.text}")
            for r in results
            for d, s in zip(r.documents, r.stances or [""] * len(r.documents), strict=True)
        ]
        return self.verdict(
            label=conjunction_label(self.label_space, holds),
            score=share,
            rationale=truncate_chars(" ".join(line(r) for r in results), 2000),
            evidence=evidence,
            metadata={
                "factuality": share,
                "claims": [r.model_dump(exclude={"documents"}) for r in results],
            },
        )
