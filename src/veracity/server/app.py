"""The FastAPI application: API, web UI, guards, and the job manager's lifecycle."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException
from starlette.middleware.base import BaseHTTPMiddleware

import veracity
from veracity.core.config import RunConfig
from veracity.core.errors import StorageError, problem_text, problems
from veracity.core.netguard import HostGuard, HostPolicy
from veracity.runtime import layered_config
from veracity.runtime.service import LLM
from veracity.server import api, ui
from veracity.server.guards import (
    BodyGuard,
    RateLimiter,
    TokenCheck,
    problem,
    rate_limit_middleware,
)
from veracity.server.jobs import JobManager
from veracity.server.retention import keep_pruning
from veracity.server.runs import RunBuilder
from veracity.server.settings import ServerSettings
from veracity.server.store import JobStore

log = logging.getLogger("veracity.server")
HERE = Path(__file__).parent

TITLES = {
    400: "bad request", 401: "unauthorized", 403: "forbidden", 404: "not found",
    405: "method not allowed", 409: "conflict", 413: "request too large",
    415: "unsupported media type", 422: "invalid request", 429: "too many requests",
    503: "not ready",
}  # fmt: skip


def create_app(
    settings: ServerSettings | None = None,
    *,
    run_config: RunConfig | None = None,
    llm: LLM | None = None,
) -> FastAPI:
    """The veracity server as an ASGI app.

    Args:
        settings: limits, auth, data directory (default: ``VERACITY_SERVER_*``).
        run_config: the run config checks start from (default: `settings.run_config`'s
            file, else the ``VERACITY_*`` environment's defaults).
        llm: a model to share instead of building the configured one (tests, embedding).
    """
    settings = settings or ServerSettings()
    config = run_config or layered_config(settings.run_config)
    JobStore.verify(settings.database)  # a damaged or unwritable one stops us here, not later

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        store = JobStore(settings.database)
        builder = RunBuilder(config, settings, llm)
        jobs = JobManager(store, builder, workers=settings.workers, queue_size=settings.queue_size)
        interrupted = jobs.start()
        if interrupted:
            log.warning("marked %d unfinished checks as interrupted", len(interrupted))
        app.state.store, app.state.builder, app.state.jobs = store, builder, jobs
        warm = asyncio.create_task(builder.warm())
        pruner = asyncio.create_task(  # at start, then every retention_interval_s
            keep_pruning(store.prune, settings.retention, settings.retention_interval_s)
        )
        try:
            yield
        finally:
            warm.cancel()
            pruner.cancel()
            await jobs.stop()
            builder.close()
            store.close()

    app = FastAPI(
        title="veracity",
        version=veracity.__version__,
        description="Check claims, news articles and social-media posts; follow each "
        "check's agents, searches and rulings as they happen.",
        lifespan=lifespan,
        docs_url=None,  # /docs is our own offline page (veracity.server.apidocs)
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.token = TokenCheck(settings.token.get_secret_value() if settings.token else None)
    _handlers(app)
    app.include_router(api.public)
    app.include_router(api.router)
    app.include_router(ui.router)
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    limiter = RateLimiter(settings.rate_per_minute, settings.rate_burst)
    app.add_middleware(BaseHTTPMiddleware, dispatch=rate_limit_middleware(limiter))
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.cors_origins,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
        )
    app.add_middleware(BodyGuard, max_bytes=settings.max_body_bytes)
    # outermost: a request for another Host (DNS rebinding) or from another site's page
    # is refused before anything else looks at it
    policy = HostPolicy.build(settings.allowed_hosts, settings.cors_origins, settings.host)
    hint = "--allow-host NAME (VERACITY_SERVER_ALLOWED_HOSTS)"
    app.add_middleware(HostGuard, policy=policy, hint=hint)
    return app


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(HTTPException)
    async def http_problem(request: Request, exc: HTTPException) -> Any:
        title = TITLES.get(exc.status_code, "error")
        detail = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        return problem(exc.status_code, title, detail, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> Any:
        errors = problems(exc)  # JSON-safe parts (no exception objects)
        if any(e["type"] == "json_invalid" for e in errors):
            return problem(400, "bad request", "the body is not valid JSON", errors=errors)
        return problem(422, "invalid request", problem_text(exc, limit=5), errors=errors)

    @app.exception_handler(StorageError)
    async def storage(request: Request, exc: StorageError) -> Any:  # the operator must act
        log.error("%s %s: %s", request.method, request.url.path, exc)
        what = {"full": "the disk is full", "read-only": "its folder is read-only",
                "corrupt": "it is damaged"}.get(exc.kind, "the device fails")  # fmt: skip
        detail = f"the server cannot use its storage ({what}); the operator has been told"
        return problem(503, "storage unavailable", detail, headers={"Retry-After": "60"})

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> Any:  # a bug: say so, log it
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem(500, "internal error", "the server hit a bug; it has been logged")
