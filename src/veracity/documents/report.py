"""What checking a document gives: each claim in place with its verdict, and the totals.

A claim's outcome is one of: ``checked`` (the method gave a label), ``abstained`` (it
gave none, on purpose), ``error`` (the check failed) or ``not_checkworthy`` (an opinion,
advice, question or trivial statement: not sent to the method). A checked claim is
``supported``, ``refuted`` or ``mixed`` by its veracity score (the verdict's own, else its
label's score in the label space): at least 2/3, at most 1/3, or between.

The document's **factuality** is the share of checked claims that are supported, as
FActScore defines it (Min et al., 2023); abstentions and errors are counted apart, never
as false, and a document with no checked claim has no factuality (None).
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.labels import get_label_space
from veracity.core.types import Usage, Verdict
from veracity.documents.reading import DocumentText
from veracity.evidence.claims import ExtractedClaim

Status = Literal["checked", "abstained", "error", "not_checkworthy"]
Support = Literal["supported", "refuted", "mixed"]
SUPPORTED_FROM, REFUTED_TO = 2 / 3, 1 / 3


class Correction(BaseModel):
    """A suggested rewrite of a refuted claim, grounded in the passages it cites."""

    model_config = ConfigDict(extra="forbid")

    text: str
    evidence: list[int] = Field(min_length=1)  # 1-based positions in the verdict's evidence
    suggestion: Literal[True] = True  # always a suggestion, never a verified fact


class ClaimOutcome(BaseModel):
    """One claim of the document, where it is, and what the check found."""

    model_config = ConfigDict(extra="forbid")

    claim: ExtractedClaim
    status: Status
    support: Support | None = None
    verdict: Verdict | None = None
    error: str | None = None
    correction: Correction | None = None


class DocumentSummary(BaseModel):
    """Totals over a document's claims."""

    model_config = ConfigDict(extra="forbid")

    claims: int
    checked: int
    supported: int
    refuted: int
    mixed: int
    abstained: int
    errors: int
    not_checkworthy: int
    labels: dict[str, int]
    factuality: float | None  # supported share of checked claims (FActScore)


class DocumentReport(BaseModel):
    """The whole result of checking a document."""

    model_config = ConfigDict(extra="forbid")

    document: DocumentText
    method: str
    label_space: str
    claims: list[ClaimOutcome]
    summary: DocumentSummary
    sentences: int
    duplicates: int = 0
    sentences_truncated: bool = False
    usage: Usage = Field(default_factory=Usage)  # extraction and corrections included
    wall_time_s: float = 0.0


def support_of(verdict: Verdict) -> Support | None:
    """Where a labelled verdict falls: supported, refuted or mixed (None: no label)."""
    if verdict.label is None:
        return None
    score = verdict.score
    if score is None:
        space = get_label_space(verdict.label_space)
        label = space.find(verdict.label)
        score = space.scores.get(label) if label is not None else None
    if score is None:
        return None
    if score >= SUPPORTED_FROM:
        return "supported"
    return "refuted" if score <= REFUTED_TO else "mixed"


def outcome_of(claim: ExtractedClaim, verdict: Verdict) -> ClaimOutcome:
    """A claim's outcome from its verdict."""
    if verdict.error is not None:
        return ClaimOutcome(claim=claim, status="error", verdict=verdict, error=verdict.error)
    if verdict.label is None:
        return ClaimOutcome(claim=claim, status="abstained", verdict=verdict)
    return ClaimOutcome(claim=claim, status="checked", support=support_of(verdict), verdict=verdict)


def summarise(outcomes: list[ClaimOutcome]) -> DocumentSummary:
    """The totals of `outcomes` (see the module docstring for factuality)."""
    status = Counter(o.status for o in outcomes)
    support = Counter(o.support for o in outcomes if o.status == "checked")
    labels = Counter(
        o.verdict.label for o in outcomes if o.verdict is not None and o.verdict.label is not None
    )
    checked = status["checked"]
    return DocumentSummary(
        claims=len(outcomes),
        checked=checked,
        supported=support["supported"],
        refuted=support["refuted"],
        mixed=support["mixed"],
        abstained=status["abstained"],
        errors=status["error"],
        not_checkworthy=status["not_checkworthy"],
        labels=dict(sorted(labels.items())),
        factuality=support["supported"] / checked if checked else None,
    )
