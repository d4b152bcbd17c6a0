"""Checking whole documents and LLM answers: find their claims, check each, keep them in place.

- `reading`: a document from text, a file (txt, md, html, pdf), standard input or a URL;
- `checking`: `DocumentChecker` (claim extraction, one claim method per claim, corrections);
- `report`: per-claim outcomes with their spans, the document's totals and factuality.

This part sits above the methods (it runs one) and below the composition root.
"""

from veracity.documents.checking import DocumentChecker
from veracity.documents.reading import DocumentText, from_file, from_html, from_text, from_url
from veracity.documents.report import ClaimOutcome, DocumentReport, DocumentSummary

__all__ = [
    "ClaimOutcome",
    "DocumentChecker",
    "DocumentReport",
    "DocumentSummary",
    "DocumentText",
    "from_file",
    "from_html",
    "from_text",
    "from_url",
]
