"""What stands in front of every route: problem responses, body limits, content types,
per-client rate limits and bearer-token auth."""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PROBLEM_TYPE = "application/problem+json"

# Paths outside every limit: probes and static files.
OPEN_PATHS = ("/healthz", "/readyz", "/static/")


def problem(
    status: int,
    title: str,
    detail: str = "",
    *,
    errors: list[dict[str, Any]] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """An RFC 9457 problem-details response."""
    body: dict[str, Any] = {"type": "about:blank", "title": title, "status": status}
    body["detail"] = detail
    if errors is not None:
        body["errors"] = errors
    return JSONResponse(body, status_code=status, headers=headers, media_type=PROBLEM_TYPE)


async def _send_problem(scope: Scope, receive: Receive, send: Send, response: JSONResponse) -> None:
    await response(scope, receive, send)


class BodyGuard:
    """Refuses bodies over `max_bytes` (413) and non-JSON bodies on the API (415).

    The declared Content-Length is checked first; a body sent without one is counted as
    it arrives and cut off at the limit.
    """

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD", "DELETE", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        length = headers.get("content-length")
        too_big = problem(
            413, "request too large", f"the body may be at most {self.max_bytes:,} bytes"
        )
        if length is not None and (not length.isdigit() or int(length) > self.max_bytes):
            if not length.isdigit():
                too_big = problem(400, "bad Content-Length", "Content-Length must be a number")
            await _send_problem(scope, receive, send, too_big)
            return
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        if scope["path"].startswith("/v1/") and not _is_json(media) and _has_body(headers):
            await _send_problem(
                scope,
                receive,
                send,
                problem(415, "unsupported media type", "send the body as application/json"),
            )
            return
        # Read the whole body first (it is small by definition), so an oversized one is
        # refused before any route sees it, whether or not it declared its length.
        chunks: list[bytes] = []
        received = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunks.append(message.get("body", b""))
            received += len(chunks[-1])
            if received > self.max_bytes:
                await _send_problem(scope, receive, send, too_big)
                return
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        sent = False

        async def replay() -> Message:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _is_json(media: str) -> bool:
    return media == "application/json" or (media.startswith("application/") and "+json" in media)


def _has_body(headers: dict[str, str]) -> bool:
    return headers.get("content-length", "0") != "0" or "transfer-encoding" in headers


class RateLimiter:
    """A token bucket per client: `burst` requests at once, refilled at `per_minute`.

    Clients are told how long to wait (429 with Retry-After). `per_minute` 0 disables it.
    """

    def __init__(self, per_minute: int, burst: int, max_clients: int = 10_000):
        self.rate = per_minute / 60.0
        self.burst = float(burst)
        self.max_clients = max_clients
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, at)

    def take(self, client: str, now: float | None = None) -> float:
        """0 when the request may go ahead, else the seconds to wait."""
        if self.rate <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        tokens, at = self._buckets.get(client, (self.burst, now))
        tokens = min(self.burst, tokens + (now - at) * self.rate)
        if tokens >= 1.0:
            self._remember(client, (tokens - 1.0, now))
            return 0.0
        self._remember(client, (tokens, now))
        return (1.0 - tokens) / self.rate

    def _remember(self, client: str, state: tuple[float, float]) -> None:
        if client not in self._buckets and len(self._buckets) >= self.max_clients:
            # forget the bucket idle the longest (it has refilled anyway)
            oldest = min(self._buckets, key=lambda k: self._buckets[k][1])
            del self._buckets[oldest]
        self._buckets[client] = state


def client_key(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def rate_limit_middleware(
    limiter: RateLimiter,
) -> Callable[[Request, Callable[[Request], Awaitable[Any]]], Awaitable[Any]]:
    async def middleware(request: Request, call_next: Callable[[Request], Awaitable[Any]]) -> Any:
        if request.url.path.startswith(OPEN_PATHS):
            return await call_next(request)
        wait = limiter.take(client_key(request))
        if wait > 0:
            seconds = max(1, math.ceil(wait))
            return problem(
                429,
                "too many requests",
                f"this client is over its request rate; retry in {seconds} s",
                headers={"Retry-After": str(seconds)},
            )
        return await call_next(request)

    return middleware


class TokenCheck:
    """Constant-time comparison of a bearer token with the configured one."""

    def __init__(self, token: str | None):
        self._token = token.encode() if token else None

    @property
    def enabled(self) -> bool:
        return self._token is not None

    def allows(self, authorization: str | None) -> bool:
        if self._token is None:
            return True
        scheme, _, given = (authorization or "").partition(" ")
        if scheme.lower() != "bearer":
            return False
        return secrets.compare_digest(given.strip().encode(), self._token)
