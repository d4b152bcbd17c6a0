"""The REST API: submit, follow, list, cancel and re-run checks; what the server offers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from veracity.core.trace import describe_event
from veracity.core.types import SearchFailures
from veracity.server.jobs import JobManager, QueueFull
from veracity.server.runs import RequestProblem, RunBuilder
from veracity.server.schemas import (
    Accepted,
    CheckRequest,
    Health,
    Job,
    JobList,
    JobSummary,
    MethodsInfo,
    Problem,
    Ready,
    SourcesInfo,
)
from veracity.server.store import JobRow
from veracity.server.summaries import JobSummaryRow

KEEPALIVE_S = 15.0
MAX_POSITION = 2**63 - 1  # the largest event id SQLite stores

bearer = HTTPBearer(auto_error=False, description="the server's token, when it sets one")


def _problem() -> dict[str, Any]:
    """One documented problem response (RFC 9457 JSON)."""
    return {"model": Problem, "content": {"application/problem+json": {}}}


def _problems(*codes: int) -> dict[int | str, dict[str, Any]]:
    """Problem responses of an operation: `codes`, and what any request may get: 421 (a
    Host header the server does not answer to, `veracity.core.netguard`) and 429."""
    return {c: _problem() for c in (*codes, 421, 429)}


MISDIRECTED = {421: _problem()}  # for the public probes (/healthz, /readyz)


async def require_token(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> None:
    """Refuse the request (401) unless it carries the configured bearer token."""
    check = request.app.state.token
    if check.enabled and not check.allows(
        f"Bearer {credentials.credentials}" if credentials else None
    ):
        raise HTTPException(
            401,
            "this server needs a token: send `Authorization: Bearer <token>`",
            headers={"WWW-Authenticate": 'Bearer realm="veracity"'},
        )


public = APIRouter()
router = APIRouter(prefix="/v1", dependencies=[Depends(require_token)], tags=["checks"])
AUTH = (401,)

JobId = Annotated[str, PathParam(min_length=1, max_length=64, description="the job id")]


def manager(request: Request) -> JobManager:
    return request.app.state.jobs


def builder(request: Request) -> RunBuilder:
    return request.app.state.builder


def _not_found(job_id: str) -> HTTPException:
    return HTTPException(404, f"no check with id {job_id!r}")


def summary(row: JobRow | JobSummaryRow) -> JobSummary:
    return JobSummary(
        id=row.id, url=f"/v1/checks/{row.id}", status=row.status,  # type: ignore[arg-type]
        created_at=row.created_at, finished_at=row.finished_at, method=row.method,  # type: ignore[arg-type]
        input_kind=row.input_kind, preview=row.preview, label=row.label, score=row.score,
        rerun_of=row.rerun_of,
    )  # fmt: skip


def job_view(row: JobRow, jobs: JobManager, *, trace: bool = True) -> Job:
    verdict, document = row.verdict, None
    if row.input_kind == "document":  # the result is a DocumentReport
        verdict, document = None, _claim_traces(row.verdict, trace)
    elif verdict is not None and not trace:
        verdict = {**verdict, "trace": {"events": []}}
    return Job(
        **summary(row).model_dump(),
        started_at=row.started_at,  # type: ignore[arg-type]
        events_url=f"/v1/checks/{row.id}/events",
        request=CheckRequest.model_validate(row.request),
        verdict=verdict,  # type: ignore[arg-type]
        document=document,  # type: ignore[arg-type]
        error=row.error,
        warning=search_warning(verdict),
        queue_position=jobs.position(row.id),
    )


def _claim_traces(report: dict[str, Any] | None, trace: bool) -> dict[str, Any] | None:
    """A stored document report, its claims' verdict traces left out unless `trace`."""
    if report is None or trace:
        return report
    claims = [
        {**c, "verdict": {**c["verdict"], "trace": {"events": []}}} if c.get("verdict") else c
        for c in report.get("claims") or []
    ]
    return {**report, "claims": claims}


def search_warning(verdict: dict[str, Any] | None) -> str | None:
    """The warning about a stored verdict's failed searches (None: none failed)."""
    raw = ((verdict or {}).get("metadata") or {}).get("search_failures")
    return SearchFailures.model_validate(raw).warning if isinstance(raw, dict) else None


def _accepted(job_id: str, status: str = "queued") -> JSONResponse:
    body = Accepted(
        id=job_id, url=f"/v1/checks/{job_id}", events_url=f"/v1/checks/{job_id}/events",
        status=status,  # type: ignore[arg-type]
    )  # fmt: skip
    return JSONResponse(body.model_dump(), status_code=202, headers={"Location": body.url})


def _submit(jobs: JobManager, call: Any) -> JSONResponse:
    try:
        job = call()
    except QueueFull as exc:
        raise HTTPException(429, str(exc), headers={"Retry-After": str(exc.retry_after)}) from exc
    except RequestProblem as exc:
        raise HTTPException(exc.status, f"{exc.title}: {exc.detail}") from exc
    return _accepted(job.id)


@router.post(
    "/checks",
    status_code=202,
    response_model=Accepted,
    responses=_problems(*AUTH, 400, 413, 415, 422, 503),
    summary="Submit a check",
)
async def submit_check(body: CheckRequest, request: Request) -> JSONResponse:
    """Queue a check of a claim, article, post or document; follow it at the returned URLs.

    A document (``input.kind="document"``: its ``text``, or a ``url`` the service fetches
    through its guarded HTTP client) is checked claim by claim with ``method`` (a claim
    method); ``corrections`` and ``extraction`` apply to it. Its trace streams a
    ``claims_found`` event once its claims are extracted and a ``claim_checked`` event as
    each ends; the finished job's ``document`` holds the report.
    """
    jobs = manager(request)
    return _submit(jobs, lambda: jobs.submit(body))


@router.get(
    "/checks", response_model=JobList, responses=_problems(*AUTH, 422), summary="List checks"
)
async def list_checks(
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000)] = 20,
    before: Annotated[str | None, Query(max_length=64, description="a job id")] = None,
) -> JobList:
    """Past and current checks, newest first."""
    cap = request.app.state.settings.history_limit
    # read in a worker thread: the event loop keeps answering (probes, streams) meanwhile
    rows = await asyncio.to_thread(manager(request).store.history, min(limit, cap) + 1, before)
    more = len(rows) > min(limit, cap)
    rows = rows[: min(limit, cap)]
    return JobList(jobs=[summary(r) for r in rows], next_before=rows[-1].id if more else None)


@router.get(
    "/checks/{job_id}", response_model=Job, responses=_problems(*AUTH, 404, 422),
    summary="Get a check",
)  # fmt: skip
async def get_check(
    job_id: JobId,
    request: Request,
    trace: Annotated[bool, Query(description="include the verdict's trace")] = True,
) -> Job:
    """A check's status and, once finished, its verdict."""
    jobs = manager(request)
    # a verdict can be megabytes: it is read, checked and encoded in a worker thread
    response = await asyncio.to_thread(_job_response, jobs, job_id, trace)
    if response is None:
        raise _not_found(job_id)
    return response  # type: ignore[return-value]  # the Job, already encoded


def _job_response(jobs: JobManager, job_id: str, trace: bool) -> JSONResponse | None:
    row = jobs.store.get(job_id)
    if row is None:
        return None
    return JSONResponse(job_view(row, jobs, trace=trace).model_dump(mode="json", by_alias=True))


@router.delete(
    "/checks/{job_id}", status_code=202, response_model=Accepted,
    responses=_problems(*AUTH, 404, 409, 422), summary="Cancel a check",
)  # fmt: skip
async def cancel_check(job_id: JobId, request: Request) -> JSONResponse:
    """Cancel a queued or running check."""
    try:
        status = manager(request).cancel(job_id)
    except KeyError:
        raise _not_found(job_id) from None
    except RequestProblem as exc:
        raise HTTPException(exc.status, f"{exc.title}: {exc.detail}") from exc
    return _accepted(job_id, status)


@router.post(
    "/checks/{job_id}/rerun", status_code=202, response_model=Accepted,
    responses=_problems(*AUTH, 400, 404, 409, 413, 415, 422, 503), summary="Run a check again",
)  # fmt: skip
async def rerun_check(job_id: JobId, request: Request) -> JSONResponse:
    """Run a finished (e.g. interrupted) check again as a new job."""
    jobs = manager(request)
    if not jobs.store.exists(job_id):
        raise _not_found(job_id)
    return _submit(jobs, lambda: jobs.rerun(job_id))


@router.get(
    "/checks/{job_id}/events",
    responses={
        200: {
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
            "description": "server-sent events; each `data` is a StreamEvent",
        },
        **_problems(*AUTH, 404, 422),
    },
    response_class=StreamingResponse,
    summary="Follow a check's events",
)
async def check_events(
    job_id: JobId,
    request: Request,
    last_event_id: Annotated[str | None, Header()] = None,
    after: Annotated[
        str | None,
        Query(pattern="^[0-9]{1,19}$", description="replay events after this id (digits)"),
    ] = None,
) -> StreamingResponse:
    """The check's trace as server-sent events, replayed from the start (or from
    `Last-Event-ID` / `after`) and then live until the check ends."""
    start = max(event_position(after, "after"), event_position(last_event_id, "Last-Event-ID"))
    jobs = manager(request)
    if not jobs.store.exists(job_id):
        raise _not_found(job_id)
    stream = _sse(jobs, job_id, start)
    return StreamingResponse(
        stream, media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )  # fmt: skip


def event_position(value: str | None, name: str) -> int:
    """A stream position from a client (0 when absent): plain ASCII digits up to
    `MAX_POSITION`, else 422 (a sign, a space, `²`, `١` or a 20-digit number included)."""
    if value is None:
        return 0
    digits = value.isascii() and value.isdigit() and len(value) <= len(str(MAX_POSITION))
    if not digits or int(value) > MAX_POSITION:
        shown = value[:24] + ("…" if len(value) > 24 else "")
        raise HTTPException(
            422, f"{name} must be an event id: digits 0-9, at most {MAX_POSITION} (got {shown!r})"
        )
    return int(value)


async def _sse(jobs: JobManager, job_id: str, start: int) -> AsyncIterator[str]:
    items = jobs.follow(job_id, start).__aiter__()
    # The next item is awaited in a task that outlives a keep-alive tick: cancelling a
    # pending __anext__ (as wait_for would) would close the generator mid-stream.
    pending: asyncio.Future | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(items.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_S)
            if not done:
                yield ": keep-alive\n\n"
                continue
            finished, pending = pending, None
            try:
                seq, kind, body = finished.result()
            except StopAsyncIteration:
                break
            if kind == "trace":  # with the event in words, for the progress list
                text = describe_event(body["kind"], body["name"], body.get("data") or {})
                data = {"seq": seq, "type": kind, **body, "text": text}
            else:
                data = {"seq": seq, "type": kind, "data": body}
            yield f"id: {seq}\nevent: {kind}\ndata: {json.dumps(data)}\n\n"
        yield "event: end\ndata: {}\n\n"
    finally:
        if pending is not None:
            pending.cancel()


@router.get(
    "/methods", response_model=MethodsInfo, responses=_problems(*AUTH),
    summary="Methods, label spaces and models",
)  # fmt: skip
async def methods(request: Request) -> MethodsInfo:
    """Methods, label spaces and models a request may name."""
    return builder(request).methods_info()


@router.get("/sources", response_model=SourcesInfo, responses=_problems(*AUTH), summary="Sources")
async def sources(request: Request) -> SourcesInfo:
    """The evidence sources this server is configured with."""
    return builder(request).sources_info()


@public.get(
    "/healthz", response_model=Health, tags=["operations"], responses=MISDIRECTED,
    summary="Liveness",
)  # fmt: skip
async def healthz() -> Health:
    """The process is up."""
    return Health(status="ok")


@public.get(
    "/readyz", response_model=Ready, tags=["operations"],
    responses={503: {"model": Ready}, **MISDIRECTED},
    summary="Readiness",
)  # fmt: skip
async def readyz(request: Request) -> JSONResponse:
    """Ready to check: the model is loaded and the job database can be written (503
    otherwise). On a server with a token, a probe without it learns only whether the
    server is ready."""
    b, jobs = builder(request), manager(request)
    storage = jobs.store.storage()  # ok, full, read-only, corrupt or io
    ready = b.ready and storage == "ok"
    body = Ready(
        ready=ready, model=b.default_model, detail=b.ready_detail, queued=jobs.queued,
        running=jobs.running, workers=jobs.workers, queue_size=jobs.queue_size,
        max_queued=jobs.max_waiting, storage=storage,
    )  # fmt: skip
    shown = body.model_dump()
    if not request.app.state.token.allows(request.headers.get("authorization")):
        shown = public_ready(shown)
    return JSONResponse(shown, status_code=200 if ready else 503)


def public_ready(body: dict[str, Any]) -> dict[str, Any]:
    """What `/readyz` tells a client without the token: ready or not, and no more (no
    model name, figures or error text, whatever fields the full answer gains)."""
    ready = bool(body.get("ready"))
    return {"ready": ready, "detail": "" if ready else "not ready; the reason needs the token"}
