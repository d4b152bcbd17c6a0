"""``safe``: SAFE, the search-augmented factuality evaluator (a baseline).

The input is split into atomic facts, each rewritten to stand alone (the shared
claim-extraction stage, `veracity.evidence.claims`). Each fact is then checked on its
own: the model writes a search query, reads the results, writes the next query from
what it has, for a fixed number of searches; then it rates the fact SUPPORTED or
NOT_SUPPORTED from the results. The input's label is the conjunction of its facts
(`claims.conjunction_label`). See README.md for the map from SAFE to this code.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.context import CheckContext
from veracity.core.events import Stage
from veracity.core.types import CheckInput, Document, Verdict
from veracity.evidence.claims import ExtractedClaim, conjunction_label
from veracity.llm.base import Message
from veracity.llm.choice import ask_choice
from veracity.llm.structured import complete_structured
from veracity.methods.base import OneSourceMethod
from veracity.methods.kit import check_tool, claims_or_whole, gathered_evidence
from veracity.methods.labelling import whole_sentences
from veracity.methods.safe.config import SafeConfig
from veracity.prompt_layout import make_layout
from veracity.prompting import render, truncate_chars
from veracity.tools.searching import traced_search

PROMPTS = "veracity.methods.safe"
SUPPORTED, NOT_SUPPORTED = "SUPPORTED", "NOT_SUPPORTED"


class FactCheck(BaseModel):
    """One atomic fact and what SAFE found for it."""

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    spans: list[tuple[int, int]]
    queries: list[str]
    rating: Literal["SUPPORTED", "NOT_SUPPORTED"]
    reasoning: str
    p_supported: float | None = None
    documents: list[Document] = Field(default_factory=list)


def _query_model(chars: int) -> type[BaseModel]:
    return create_model(
        "SafeQuery", query=(str, Field(min_length=1, max_length=chars, description="the query"))
    )


def _rating_model(chars: int) -> type[BaseModel]:
    return create_model(
        "SafeRating",
        reasoning=(str, Field(max_length=chars, description="what the results say")),
        rating=(Literal[SUPPORTED, NOT_SUPPORTED], Field(description="the fact's rating")),
    )


class SafeMethod(OneSourceMethod):
    """Atomic facts, each checked with several searches, then a conjunction (SAFE)."""

    name = "safe"
    config_class = SafeConfig
    description = "SAFE: atomic self-contained facts, each rated from several searches (baseline)"
    config: SafeConfig

    search_purpose = "SAFE's searches"

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        ctx.claim = item.content  # recorded sources replay this claim's searches
        facts = await self._facts(item, ctx)
        checked = [await self._check_fact(item, f, ctx) for f in facts]
        return self._verdict(checked)

    async def _facts(self, item: CheckInput, ctx: CheckContext) -> list[ExtractedClaim]:
        cfg = self.config
        text = truncate_chars(item.content, cfg.max_input_chars)
        found = await self.claim_extractor(cfg.extraction, "facts").extract(text)
        facts = found.checkworthy[: cfg.max_facts]
        return claims_or_whole(facts, text, actor=self.name, none_found="no atomic facts extracted")

    async def _check_fact(self, item: CheckInput, fact: ExtractedClaim, ctx: CheckContext):
        cfg = self.config
        tool = check_tool(self.source, cfg, item)
        knowledge: list[str] = []
        queries: list[str] = []
        docs: list[Document] = []
        for n in range(1, cfg.max_searches + 1):
            reply = await complete_structured(
                self.llm,
                self._prompt("query.j2", fact.text, knowledge=knowledge, n=n),
                _query_model(cfg.query_chars),
                temperature=cfg.temperature,
                max_tokens=cfg.max_tokens,
                tag=f"{self.name}:{fact.id}:query{n}",
            )
            query = " ".join(reply.value.query.split()) or fact.text  # type: ignore[attr-defined]
            obs = await traced_search(tool, query, actor=self.name, fact=fact.id, step=n)
            queries.append(query)
            knowledge.append(obs.text)
            docs += obs.documents
        rated = await ask_choice(
            self.llm,
            self._prompt(
                "rate.j2", fact.text, knowledge=knowledge,
                supported=SUPPORTED, not_supported=NOT_SUPPORTED,
            ),
            _rating_model(cfg.max_reasoning_chars),
            "rating",
            (SUPPORTED, NOT_SUPPORTED),
            tag=f"{self.name}:{fact.id}:rate",
            policy=cfg.choice,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )  # fmt: skip
        probs = rated.probabilities or {}
        ctx.emit(
            Stage(name=self.name, step=f"fact {fact.id} rated", detail={"rating": rated.label})
        )
        return FactCheck(
            id=fact.id, text=fact.text, spans=fact.spans, queries=queries,
            rating=rated.label, reasoning=whole_sentences(rated.value.reasoning),
            p_supported=probs.get(SUPPORTED), documents=docs,
        )  # fmt: skip

    def _prompt(self, template: str, fact: str, **variables: Any) -> list[Message]:
        """A search or rating prompt about `fact`; shared-first (`prompt_layout: shared`):
        one system note for the check, the statement and the results so far first, the
        template's own system text last, so the rating extends the last search's prompt."""
        material = render(PROMPTS, "_statement.j2", fact=fact)
        layout = make_layout(self.config.prompt_layout, ("statement", "knowledge"))
        return layout.messages(PROMPTS, template, material=material, fact=fact, **variables)

    def _verdict(self, checked: list[FactCheck]) -> Verdict:
        space = self.label_space
        holds = [c.rating == SUPPORTED for c in checked]
        label = conjunction_label(space, holds)
        share = sum(holds) / len(holds)
        bad = [c for c in checked if c.rating != SUPPORTED]
        rationale = " ".join(f"{c.text}: {c.reasoning}" for c in (bad or checked))
        evidence = gathered_evidence((f"fact {c.id}: {c.text}", c.documents) for c in checked)
        return self.verdict(
            label=label,
            score=share,  # the share of facts supported (no label probabilities: see README)
            rationale=truncate_chars(rationale, 2000),
            evidence=evidence,
            metadata={
                "factuality": share,
                "facts": [c.model_dump(exclude={"documents"}) for c in checked],
            },
        )
