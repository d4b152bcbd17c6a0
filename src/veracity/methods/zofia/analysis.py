"""ZoFia stage 2, LLM collaboration (section 4.1): linguist, domain expert, claim checks.

The three analyses run concurrently and together form the evidence pool the debaters
and the judge read. Each linguistic dimension is judged in its own call, so one
dimension's reading cannot colour another's.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from veracity.core import context
from veracity.core.events import AgentTurn
from veracity.core.types import Document, Evidence, Stance
from veracity.evidence.quotes import QuoteError, find_quote
from veracity.llm.base import LLM
from veracity.llm.reply_schema import short_name
from veracity.llm.structured import complete_structured
from veracity.methods.zofia.config import ZoFiaConfig
from veracity.methods.zofia.rag import ClaimRAG
from veracity.prompt_layout import make_layout
from veracity.prompting import render

PROMPTS = "veracity.methods.zofia"
TAGS = ("news", "background", "analysis", "debate")  # every tag the check's prompts fence

# The five dimensions of section 4.1.1, described in our words.
DIMENSIONS: dict[str, tuple[str, str]] = {
    "sentence": (
        "sentence style",
        "how complex the vocabulary is, how long the sentences are, how formal the tone is",
    ),
    "word": (
        "word choice",
        "superlatives, emotionally loaded words, and how pronouns are used",
    ),
    "grammar": (
        "grammar patterns",
        "reported speech and attribution, passive constructions, negations",
    ),
    "emotion": (
        "emotional tone",
        "emotional terms in the headline and body and how inflammatory the tone is",
    ),
    "information": (
        "information quality",
        "clickbait, piling up of details, and claims that do not fit their context",
    ),
}

Judgment = Literal["REAL", "FAKE"]


# Length caps on free text: JSON-schema-constrained decoding enforces them, which stops a
# small model from looping inside a string until it runs out of tokens.
SHORT, LONG = 250, 800


class LinguistReport(BaseModel):
    analysis: str = Field(
        max_length=LONG, description="observations for this aspect, quoting short phrases"
    )
    judgment: Judgment


class ExpertTriage(BaseModel):
    # validated short names: the expert prompt shows them without a fence (the schema's
    # pattern lets constrained decoding write only such names)
    domain: short_name(4, 90) = Field(  # type: ignore[valid-type]
        description="the field of expertise, a few words"
    )
    expert: short_name(5, 110) = Field(  # type: ignore[valid-type]
        description="the kind of expert, e.g. 'an economist'"
    )


class ExpertReport(BaseModel):
    knowledge_concordance: str = Field(max_length=LONG)
    logical_integrity: str = Field(max_length=LONG)
    judgment: Judgment


class ExtractedClaims(BaseModel):
    core_claim: str = Field(max_length=SHORT)
    sub_claims: list[Annotated[str, Field(max_length=SHORT)]] = Field(
        default_factory=list, max_length=6
    )


NO_MATERIAL = "Not Enough Information"  # a claim with no passage to check it against


class ClaimCheckReply(BaseModel):
    label: Literal["Supports", "Refutes", "Not Enough Information"]
    reason: str = Field(max_length=2 * SHORT)
    quotes: list[Annotated[str, Field(max_length=300)]] = Field(default_factory=list, max_length=3)


class ClaimCheck(BaseModel):
    claim: str
    core: bool
    label: str
    reason: str
    evidence: list[Evidence] = Field(default_factory=list)
    passages: int = 0  # retrieved passages the verifier saw (0: not checked, no material)


class AnalystReports(BaseModel):
    """Everything the analysts produced, for the debate."""

    linguist: dict[str, LinguistReport] = Field(default_factory=dict)
    triage: ExpertTriage | None = None
    expert: ExpertReport | None = None
    claims: list[ClaimCheck] = Field(default_factory=list)

    def sections(self) -> list[str]:
        """The pool's sections (linguist, expert, claims), each as one text."""
        out: list[str] = []
        if self.linguist:
            lines = ["Linguistic analysis:"]
            for key, rep in self.linguist.items():
                lines.append(f"- {DIMENSIONS[key][0]} ({rep.judgment}): {rep.analysis}")
            out.append("\n".join(lines))
        if self.expert and self.triage:
            out.append(
                f"Expert analysis ({self.triage.expert}, {self.triage.domain}):\n"
                f"- knowledge concordance: {self.expert.knowledge_concordance}\n"
                f"- logical integrity: {self.expert.logical_integrity}\n"
                f"- expert judgment: {self.expert.judgment}"
            )
        if self.claims:
            out.append(self._claims_section())
        return out

    def _claims_section(self) -> str:
        if not any(c.passages for c in self.claims):
            listed = "; ".join(c.claim for c in self.claims)
            return (
                "Claim verification against open-web material: no material was retrieved "
                f"for any claim, so none was checked (claims: {listed})."
            )
        lines = ["Claim verification against open-web material:"]
        for c in self.claims:
            tag = "core claim" if c.core else "sub-claim"
            quotes = "; ".join(
                f'"{e.quote}"' + ("" if e.quote_verified else " (quote not found in source)")
                for e in c.evidence
            )
            lines.append(f"- {tag}: {c.claim} -> {c.label}. {c.reason} {quotes}".rstrip())
        return "\n".join(lines)

    def render(self, limit: int) -> str:
        """The pool within `limit` characters, each section within its own share.

        Every section gets an equal share of the limit, and what a short section leaves
        unused goes to the longer ones; a section longer than its share is cut at a word
        with " […]". So no section (claim verification, the strongest signal, used to
        come last and be cut first) is squeezed out by the ones before it.
        """
        sections = self.sections()
        if not sections:
            return "(no analyses)"
        budget = max(0, limit - 2 * (len(sections) - 1))  # blank lines between sections
        shares = _shares([len(s) for s in sections], budget)
        return "\n\n".join(_cut(s, n) for s, n in zip(sections, shares, strict=True))


def _shares(lengths: list[int], budget: int) -> list[int]:
    """Characters for each section: equal shares, surplus of short ones to the others."""
    shares = [0] * len(lengths)
    open_ = list(range(len(lengths)))
    left = budget
    while open_:
        each = left // len(open_)
        fits = [i for i in open_ if lengths[i] <= each]
        if not fits:
            for i in open_:
                shares[i] = each
            break
        for i in fits:
            shares[i] = lengths[i]
            left -= lengths[i]
        open_ = [i for i in open_ if i not in fits]
    return shares


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 4)].rsplit(" ", 1)[0] + " […]"


class Analysts:
    """Runs the stage-2 collaboration agents with one LLM and config."""

    def __init__(self, llm: LLM, config: ZoFiaConfig):
        self.llm = llm
        self.cfg = config

    async def _ask(self, template: str, output: type[BaseModel], tag: str, **variables):
        """A prompt whose material is the news (`_news.j2`) when it is about the news; the
        debate's prompts then open with the same news (`_material.j2` begins with it)."""
        news = variables.pop("news", None)
        material = render(PROMPTS, "_news.j2", news=news) if isinstance(news, str) else None
        layout = make_layout(self.cfg.prompt_layout, TAGS)
        result = await complete_structured(
            self.llm,
            layout.messages(PROMPTS, template, material=material, **variables),
            output,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens,
            tag=tag,
        )
        return result.value

    async def linguist(self, news: str) -> dict[str, LinguistReport]:
        async def one(key: str) -> tuple[str, LinguistReport]:
            name, focus = DIMENSIONS[key]
            report = await self._ask(
                "linguist.j2",
                LinguistReport,
                f"linguist:{key}",
                news=news,
                dimension_name=name,
                dimension_focus=focus,
            )
            return key, report

        reports = dict(await asyncio.gather(*(one(k) for k in DIMENSIONS)))
        context.current().emit(
            AgentTurn(
                name="linguist", detail={"judgments": {k: r.judgment for k, r in reports.items()}}
            )
        )
        return reports

    async def expert(self, news: str, wiki: str) -> tuple[ExpertTriage, ExpertReport]:
        triage = await self._ask("expert_triage.j2", ExpertTriage, "expert:triage", news=news)
        report = await self._ask(
            "expert.j2",
            ExpertReport,
            "expert:analysis",
            news=news,
            wiki=wiki,
            domain=triage.domain,
            expert=triage.expert,
        )
        context.current().emit(
            AgentTurn(name="expert", detail={"domain": triage.domain, "judgment": report.judgment})
        )
        return triage, report

    async def extract_claims(self, news: str) -> ExtractedClaims:
        claims = await self._ask(
            "claim_extract.j2",
            ExtractedClaims,
            "claim_extractor",
            news=news,
            max_sub_claims=self.cfg.max_sub_claims,
        )
        subs = [s for s in claims.sub_claims if s.strip()][: self.cfg.max_sub_claims]
        return ExtractedClaims(core_claim=claims.core_claim, sub_claims=subs)

    async def verify(self, claim: str, core: bool, rag: ClaimRAG) -> ClaimCheck:
        chunks = rag.relevant(claim)
        if not chunks:  # nothing to check against: no call, and never a Supports/Refutes
            context.current().emit(
                AgentTurn(
                    name="claim_verifier",
                    detail={"claim": claim, "label": NO_MATERIAL, "passages": []},
                )
            )
            return ClaimCheck(
                claim=claim,
                core=core,
                label=NO_MATERIAL,
                reason="no retrieved passage was similar enough to this claim to check it",
            )
        reply = await self._ask(
            "claim_verify.j2",
            ClaimCheckReply,
            "claim_verifier",
            claim=claim,
            passages=[{"id": i + 1, "text": c.text} for i, c in enumerate(chunks)],
        )
        evidence = [_quoted_evidence(q, chunks, reply.label) for q in reply.quotes if q.strip()]
        context.current().emit(
            AgentTurn(
                name="claim_verifier",
                detail={
                    "claim": claim,
                    "label": reply.label,
                    "passages": [c.id for c in chunks],
                    "quotes_verified": [e.quote_verified for e in evidence],
                },
            )
        )
        return ClaimCheck(
            claim=claim,
            core=core,
            label=reply.label,
            reason=reply.reason,
            evidence=evidence,
            passages=len(chunks),
        )

    async def claims(self, news: str, rag: ClaimRAG) -> tuple[ExtractedClaims, list[ClaimCheck]]:
        extracted = await self.extract_claims(news)
        todo = [(extracted.core_claim, True)] + [(s, False) for s in extracted.sub_claims]
        checks = await asyncio.gather(*(self.verify(c, core, rag) for c, core in todo))
        return extracted, list(checks)


_STANCE = {"Supports": Stance.SUPPORTS, "Refutes": Stance.REFUTES}


def _quoted_evidence(quote: str, chunks: list[Document], label: str) -> Evidence:
    """Attach a quote to the passage it came from, checking it really occurs there."""
    best: tuple[float, Document | None, str | None] = (0.0, None, None)
    for chunk in chunks:
        try:
            match = find_quote(quote, chunk.text)
        except QuoteError:  # nothing checkable in the quote (e.g. only punctuation)
            break
        if match.found:
            return Evidence(
                document=chunk,
                quote=match.span or quote,
                stance=_STANCE.get(label, Stance.NEUTRAL),
                quote_verified=True,
            )
        if match.score > best[0]:
            best = (match.score, chunk, match.span)
    doc = best[1] or Document(id="unlocated", text=quote, source="claim_verifier")
    return Evidence(
        document=doc,
        quote=quote,
        stance=_STANCE.get(label, Stance.NEUTRAL),
        quote_verified=False,
        note="the verifier quoted text that does not occur in the retrieved passages",
    )
