"""What the MCP ``check_document`` tool returns: each claim where it is, with its verdict.

A compact form of `veracity.documents.DocumentReport` for an agent: per claim its text,
its character spans in the document's text, status, support, label, score, a short
rationale, the evidence it cites (title, URL) and a suggested correction; the document's
totals and factuality. The full report (traces included) is what ``--json`` and the Python
API give.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from veracity.documents import ClaimOutcome, DocumentReport, DocumentSummary

DOCUMENT_ARGUMENTS = ("text", "url", "method", "labels", "options", "corrections", "extraction")
EXTRACTION_HELP = (
    'claim-extraction settings, e.g. {"decompose": false} (each sentence one claim), '
    "decontextualise, checkworthiness (booleans), max_sentences, max_claims_per_sentence, "
    "dedupe_threshold (0-1]; unknown or out-of-range values are refused"
)
MAX_RATIONALE = 400


class CitedItem(BaseModel):
    title: str = ""
    url: str | None = None


class ClaimItem(BaseModel):
    """One claim of the document and what its check found."""

    id: str
    text: str = Field(description="the claim as checked (made to stand alone)")
    spans: list[tuple[int, int]] = Field(description="character spans in `text` of the result")
    status: str = Field(description="checked, abstained, error or not_checkworthy")
    category: str | None = None
    support: str | None = Field(default=None, description="supported, refuted or mixed")
    label: str | None = None
    score: float | None = None
    rationale: str = ""
    evidence: list[CitedItem] = Field(default_factory=list)
    error: str | None = None
    correction: str | None = Field(default=None, description="a suggestion, not a fact")


class DocumentResult(BaseModel):
    """A checked document, as the ``check_document`` tool returns it."""

    text: str = Field(description="the document's text (the spans index into it)")
    title: str | None = None
    url: str | None = None
    method: str
    label_space: str
    claims: list[ClaimItem]
    summary: DocumentSummary


def _claim_item(outcome: ClaimOutcome) -> ClaimItem:
    verdict = outcome.verdict
    why = "" if verdict is None else verdict.rationale or verdict.abstain_reason or ""
    return ClaimItem(
        id=outcome.claim.id,
        text=outcome.claim.text,
        spans=list(outcome.claim.spans),
        status=outcome.status,
        category=outcome.claim.category,
        support=outcome.support,
        label=None if verdict is None else verdict.label,
        score=None if verdict is None else verdict.score,
        rationale=why[:MAX_RATIONALE],
        evidence=[
            CitedItem(title=e.document.title, url=e.document.url)
            for e in (verdict.evidence if verdict is not None else [])
        ],
        error=outcome.error,
        correction=None if outcome.correction is None else outcome.correction.text,
    )


def document_result(report: DocumentReport) -> DocumentResult:
    """The tool's answer for `report`."""
    return DocumentResult(
        text=report.document.text,
        title=report.document.title,
        url=report.document.url,
        method=report.method,
        label_space=report.label_space,
        claims=[_claim_item(o) for o in report.claims],
        summary=report.summary,
    )


__all__ = [
    "DOCUMENT_ARGUMENTS",
    "EXTRACTION_HELP",
    "ClaimItem",
    "DocumentResult",
    "document_result",
]
