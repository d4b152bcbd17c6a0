"""The web UI: server-rendered pages and fragments; a little JavaScript (static/app.js)
submits checks, follows their event streams and fetches the fragments.

Pages carry nothing of the server's configuration or its checks, so they load without a
token; the fragments that do (``/ui/...``: the form's methods, models and sources, a
check's input and report, the history) are behind the same token as the API.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from starlette.exceptions import HTTPException

from veracity.server.api import JobId, require_token, search_warning
from veracity.server.apidocs import reference
from veracity.server.document_views import claim_report, document_view, report_view
from veracity.server.inputs import input_view
from veracity.server.views import build_report

HERE = Path(__file__).parent
templates = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


templates.filters["percent"] = _percent

router = APIRouter(include_in_schema=False)
fragments = APIRouter(prefix="/ui", dependencies=[Depends(require_token)])


def render(name: str, request: Request, **values: Any) -> HTMLResponse:
    page = templates.get_template(name).render(auth=request.app.state.token.enabled, **values)
    return HTMLResponse(page, headers=_SECURITY_HEADERS)


# A strict policy: our own scripts and styles only, nothing inline, no framing.
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@router.get("/", response_class=HTMLResponse)
async def index(request: Request) -> HTMLResponse:
    return render("index.html.j2", request)


@router.get("/checks/{job_id}", response_class=HTMLResponse)
async def check_page(job_id: JobId, request: Request) -> HTMLResponse:
    return render("check.html.j2", request, job_id=job_id)


@router.get("/docs", response_class=HTMLResponse)
async def docs(request: Request) -> HTMLResponse:
    return render("docs.html.j2", request, **reference(request.app.openapi()))


@router.get("/history", response_class=HTMLResponse)
async def history_page(request: Request) -> HTMLResponse:
    return render("history.html.j2", request)


@fragments.get("/offer", response_class=HTMLResponse)
async def offer_fragment(request: Request) -> HTMLResponse:
    """The form's choices: methods, label spaces, models and sources the server offers."""
    builder = request.app.state.builder
    offer, sources = builder.methods_info(), builder.sources_info().sources
    return render("_offer.html.j2", request, offer=offer, sources=sources)


# Fragments read, parse and render stored jobs (a verdict can be megabytes) in a worker
# thread, so the event loop keeps answering probes and streams meanwhile.


@fragments.get("/checks/{job_id}/report", response_class=HTMLResponse)
async def report_fragment(job_id: JobId, request: Request) -> HTMLResponse:
    return await asyncio.to_thread(_report_page, job_id, request)


def _report_page(job_id: str, request: Request) -> HTMLResponse:
    row = request.app.state.store.get(job_id)
    if row is None:
        raise HTTPException(404, f"no check with id {job_id!r}")
    if row.input_kind == "document":
        doc = report_view(row, request.app.state.jobs)
        usage = (row.verdict or {}).get("usage")
        wall = (row.verdict or {}).get("wall_time_s") or 0.0
        return render("_document_report.html.j2", request, job=row, doc=doc, usage=usage, wall=wall)
    report = build_report(row.verdict, row.request) if row.verdict else None
    warning = search_warning(row.verdict)  # failed searches: how many, the first error
    return render(
        "_report.html.j2", request, job=row, verdict=row.verdict, report=report, warning=warning
    )


ClaimId = Annotated[str, PathParam(pattern="^[A-Za-z0-9_-]{1,32}$", description="a claim id")]


@fragments.get("/checks/{job_id}/document", response_class=HTMLResponse)
async def document_fragment(job_id: JobId, request: Request) -> HTMLResponse:
    """A document check's annotated text so far: claims pending until each is checked."""
    return await asyncio.to_thread(_document_page, job_id, request)


def _document_page(job_id: str, request: Request) -> HTMLResponse:
    row = _document_row(job_id, request)
    doc = document_view(row, request.app.state.jobs)
    return render("_document.html.j2", request, doc=doc)


@fragments.get("/checks/{job_id}/claims/{claim_id}", response_class=HTMLResponse)
async def claim_fragment(job_id: JobId, claim_id: ClaimId, request: Request) -> HTMLResponse:
    """One checked claim of a document: its method's own view (debate, tree, trajectory)."""
    return await asyncio.to_thread(_claim_page, job_id, claim_id, request)


def _claim_page(job_id: str, claim_id: str, request: Request) -> HTMLResponse:
    row = _document_row(job_id, request)
    found = claim_report(row, claim_id)
    if found is None:
        raise HTTPException(404, f"no checked claim {claim_id!r} in check {job_id!r}")
    return render("_claim_method.html.j2", request, report=found[1], method=row.method)


def _document_row(job_id: str, request: Request) -> Any:
    row = request.app.state.store.get(job_id)
    if row is None:
        raise HTTPException(404, f"no check with id {job_id!r}")
    if row.input_kind != "document":
        raise HTTPException(404, f"check {job_id!r} is not a document check")
    return row


@fragments.get("/checks/{job_id}/input", response_class=HTMLResponse)
async def input_fragment(job_id: JobId, request: Request) -> HTMLResponse:
    """What the check checked: the claim, the article's title and opening, or the post."""
    return await asyncio.to_thread(_input_page, job_id, request)


def _input_page(job_id: str, request: Request) -> HTMLResponse:
    row = request.app.state.store.get(job_id)
    if row is None:
        raise HTTPException(404, f"no check with id {job_id!r}")
    shown = input_view(row.request, row.preview, row.status)
    return render("_input.html.j2", request, v=shown)


@fragments.get("/history", response_class=HTMLResponse)
async def history_fragment(
    request: Request,
    before: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> HTMLResponse:
    rows = await asyncio.to_thread(request.app.state.store.history, limit + 1, before)
    older = rows[limit - 1].id if len(rows) > limit else None  # the cursor for the next page
    return render("_history.html.j2", request, rows=rows[:limit], more=older)


router.include_router(fragments)
