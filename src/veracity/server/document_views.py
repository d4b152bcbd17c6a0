"""What the web UI shows of a document check: the annotated document, live or finished,
and one claim's own method view.

While the check runs, the view is built from the job's progress events (`ClaimsFound`
and `ClaimChecked`, read back from the job store) and the document's text (as given, or
as fetched, which the live job holds); once it ends, from the stored `DocumentReport`.
Both go through `veracity.documents.annotate`, so the page and the HTML report mark text
the same way.
"""

from __future__ import annotations

from typing import Any

from veracity.core.errors import InputError
from veracity.core.events import ClaimChecked, ClaimsFound, parse_event
from veracity.documents import DocumentReport, from_text
from veracity.documents.annotate import DocumentView, live_view, view
from veracity.server.jobs import JobManager
from veracity.server.schemas import FINISHED
from veracity.server.store import JobRow
from veracity.server.views import Report, build_report

_LIVE_KINDS = tuple(cls.model_fields["kind"].default for cls in (ClaimsFound, ClaimChecked))


def finished_view(row: JobRow) -> DocumentView | None:
    """The view of a stored document report (None: the check left none)."""
    if row.verdict is None:
        return None
    return view(DocumentReport.model_validate(row.verdict))


def document_view(row: JobRow, jobs: JobManager) -> DocumentView:
    """The document as far as its check has got: finished, or from its progress events."""
    done = finished_view(row)
    if done is not None:
        return done
    item = row.request.get("input") or {}
    live = jobs.live.get(row.id)
    text = live.text.text if live is not None and live.text is not None else _given(item)
    claims: list[dict[str, Any]] = []
    dropped: list[str] = []
    checked: dict[str, dict[str, Any]] = {}
    for body in jobs.store.trace_of_kinds(row.id, _LIVE_KINDS):
        match parse_event(body):  # a stored event, read back into its class
            case ClaimsFound() as found:
                claims = [c for c in found.claims if isinstance(c, dict)]
                dropped = [str(d) for d in found.dropped_unanchored]
            case ClaimChecked() as done:
                checked[done.claim_id] = done.data
    return live_view(
        text or "",
        claims if text else [],
        checked,
        title=item.get("title"),
        url=item.get("url"),
        method=row.method,
        stopped=row.status in FINISHED,
        dropped=dropped if text else [],
    )


def report_view(row: JobRow, jobs: JobManager) -> DocumentView | None:
    """A finished check's report; for one that stopped early (cancelled, failed,
    interrupted), the claims it had found and checked, or its text alone (the page shows
    the text only here); None when it has not even a text (an address not fetched)."""
    shown = document_view(row, jobs)
    return shown if shown.done or shown.claims or shown.segments else None


def _given(item: dict[str, Any]) -> str | None:
    """The text a request gave, as the check reads it (None: a URL not fetched yet)."""
    try:
        return from_text(item["text"]).text if item.get("text") else None
    except InputError:
        return None


def claim_report(row: JobRow, claim_id: str) -> tuple[str, Report] | None:
    """The claim's text and its verdict's views (None: no such checked claim)."""
    for outcome in (row.verdict or {}).get("claims") or []:
        claim = outcome.get("claim") or {}
        if claim.get("id") == claim_id and outcome.get("verdict"):
            # the claim is the input its method checked (its `view_parts` item)
            return str(claim.get("text", "")), build_report(outcome["verdict"], {"input": claim})
    return None
