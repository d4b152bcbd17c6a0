"""The evidence evaluation agent (Section III-C): each retrieved document is cut into
chunks, a cleaning call keeps the claim-relevant statements of each chunk, and an
analysis call reads the kept statements with the document's metadata into a structured
evidence object (stance, official, primary, relevance, credibility). The documents of
one node, and the chunks of one document, are processed concurrently.

Kept statements are checked against the document text (`veracity.evidence.quotes`):
with `require_verbatim` (the default) a statement the document does not contain is
dropped, so a statement the cleaning model invented never reaches the analysis.
"""

from __future__ import annotations

import asyncio

from veracity.core import context
from veracity.core.errors import StructuredOutputError
from veracity.core.events import Fault, Note
from veracity.core.types import Document
from veracity.evidence.quotes import find_quote
from veracity.llm.base import LLM
from veracity.llm.structured import complete_structured
from veracity.methods.toe.agents import TOOL_HELP, toe_messages
from veracity.methods.toe.config import ToEConfig
from veracity.methods.toe.schema import CleanedChunk, EvidenceAnalysis, EvidenceItem
from veracity.nlp.text import chunk_text

MAX_STATEMENTS = 3  # per chunk (CleanedChunk's cap)


class EvidenceEvaluator:
    """Turns documents into `EvidenceItem`s for one claim."""

    def __init__(self, llm: LLM, cfg: ToEConfig):
        self.llm = llm
        self.cfg = cfg

    async def evaluate(
        self, claim: str, docs: list[Document], action: str, node_id: str
    ) -> list[EvidenceItem]:
        """Evidence objects of the documents that hold claim-relevant statements."""
        found = await asyncio.gather(*(self.one(claim, d, action, node_id) for d in docs))
        return [item for item in found if item is not None]

    async def one(
        self, claim: str, doc: Document, action: str, node_id: str
    ) -> EvidenceItem | None:
        """One document's evidence object, or None when nothing in it bears on the claim
        (or the model could not read it after its retries: recorded in the trace)."""
        ctx = context.current()
        try:
            statements, verified = await self.clean(claim, doc, node_id)
            if not statements:
                ctx.emit(
                    Note(name="toe:evidence", detail={"node": node_id, "doc": doc.id, "kept": 0})
                )
                return None
            analysis = await self.analyse(claim, doc, statements, action, node_id)
        except StructuredOutputError as exc:  # this document is left out, on the record
            ctx.emit(
                Fault(name="toe:evidence", error=str(exc), detail={"node": node_id, "doc": doc.id})
            )
            return None
        ctx.emit(
            Note(
                name="toe:evidence",
                detail={
                    "node": node_id,
                    "doc": doc.id,
                    "kept": len(statements),
                    "stance": analysis.stance,
                    "official": analysis.official,
                },
            )
        )
        return EvidenceItem(
            doc_id=doc.id,
            source=doc.source,
            action=action,
            title=doc.title,
            url=doc.url,
            statements=statements,
            verified=verified,
            stance=analysis.stance,
            official=analysis.official,
            primary=analysis.primary,
            relevance=analysis.relevance / 100,
            credibility=analysis.credibility / 100,
            key_point=analysis.key_point,
        )

    async def clean(self, claim: str, doc: Document, node_id: str) -> tuple[list[str], list[bool]]:
        """The document's claim-relevant statements and whether each occurs in it."""
        cfg = self.cfg
        chunks = chunk_text(doc.text, cfg.chunk_words)[: cfg.max_chunks_per_doc]
        replies = await asyncio.gather(
            *(self._clean_chunk(claim, doc, c.text, i + 1, node_id) for i, c in enumerate(chunks))
        )
        haystack = f"{doc.title}\n{doc.text}" if doc.title else doc.text
        statements: list[str] = []
        verified: list[bool] = []
        dropped = 0
        for reply in replies:
            for s in reply.statements:
                s = s.strip()
                if not s or s in statements:
                    continue
                ok = find_quote(s, haystack).found
                if not ok and cfg.require_verbatim:
                    dropped += 1
                    continue
                statements.append(s[: cfg.max_statement_chars])
                verified.append(ok)
        if dropped:
            context.current().emit(
                Note(
                    name="toe:clean",
                    detail={"node": node_id, "doc": doc.id, "dropped_unverified": dropped},
                )
            )
        return statements, verified

    async def _clean_chunk(
        self, claim: str, doc: Document, chunk: str, part: int, node_id: str
    ) -> CleanedChunk:
        messages = toe_messages(
            self.cfg, "clean.j2", claim, chunk=chunk, part=part,
            title=doc.title or doc.id, limit=MAX_STATEMENTS,
        )  # fmt: skip
        result = await complete_structured(
            self.llm, messages, CleanedChunk, temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens, tag=f"toe:clean:{node_id}",
        )  # fmt: skip
        return result.value

    async def analyse(
        self, claim: str, doc: Document, statements: list[str], action: str, node_id: str
    ) -> EvidenceAnalysis:
        messages = toe_messages(
            self.cfg,
            "analyse.j2",
            claim,
            title=doc.title or "(untitled)",
            url=doc.url or doc.id,
            tool=TOOL_HELP[action][0],
            published=doc.published_at.date().isoformat() if doc.published_at else "",
            statements="\n".join(f"- {s}" for s in statements),
        )
        result = await complete_structured(
            self.llm, messages, EvidenceAnalysis, temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens, tag=f"toe:analyse:{node_id}",
        )  # fmt: skip
        return result.value
