"""What the search-and-verify baselines share: one search tool per check, evidence
gathered once per document, and the input checked whole when no claim was extracted.

SAFE, FacTool, FactCheck-GPT, FOLK, ProgramFC, Self-Ask, STEEL, FactAgent, HiSS and
FIRE each search one source for their own queries and cite what the searches found;
before this module each kept its own copy of these steps. Sources learn which claim a
check is about from the check's context (`CheckContext.claim`), never from a method
importing them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from veracity.core import context
from veracity.core.events import Note
from veracity.core.types import CheckInput, Document, Evidence
from veracity.evidence.claims import ExtractedClaim
from veracity.methods.config import RetrievalSettings
from veracity.tools.base import SourceTool
from veracity.tools.searching import source_tool

__all__ = ["check_tool", "claims_or_whole", "gathered_evidence"]


def check_tool(source: Any, config: RetrievalSettings, item: CheckInput) -> SourceTool:
    """The search tool of one check: `source` read to the config's ``top_k`` results of
    ``max_result_chars`` each, nothing dated after the input's cutoff."""
    return source_tool(
        source, top_k=config.top_k, max_chars=config.max_result_chars, before=item.cutoff
    )


def gathered_evidence(
    found: Iterable[tuple[str, Iterable[Document]]], *, seen: Iterable[str] = ()
) -> list[Evidence]:
    """One `Evidence` per document, in the order found: each ``(note, documents)`` pair
    is one search (or step) and its note goes with the documents it found first; a
    document found again, or whose id is in `seen`, is not repeated."""
    known = set(seen)
    evidence: list[Evidence] = []
    for note, documents in found:
        for doc in documents:
            if doc.id not in known:
                known.add(doc.id)
                evidence.append(Evidence(document=doc, note=note))
    return evidence


def claims_or_whole(
    claims: Sequence[ExtractedClaim], text: str, *, actor: str, none_found: str
) -> list[ExtractedClaim]:
    """`claims`, or, when extraction found none, the input `text` as its one claim; a
    note in the trace by `actor` says so (``<none_found>: checking the input whole``)."""
    if claims:
        return list(claims)
    context.current().emit(Note(name=actor, text=f"{none_found}: checking the input whole"))
    whole = " ".join(text.split())
    return [ExtractedClaim(id="c1", text=whole, atomic=whole, spans=[(0, len(text))], sentence=0)]
