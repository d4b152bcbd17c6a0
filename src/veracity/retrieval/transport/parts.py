"""Building blocks of the shared HTTP client: settings, response, limiter, tallies."""

from __future__ import annotations

import contextlib
import email.utils
import json
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from veracity.core.bounds import Attempts, Bytes, Rate, Seconds
from veracity.core.infra import CacheMode
from veracity.retrieval.base import SourceBadResponse


@dataclass
class RequestTally:
    """Counts of live and cached HTTP answers inside a `track_requests()` block.

    `earliest` is the oldest retrieval time (Unix seconds) among the answers: for a
    replayed search, when its answers were first fetched.
    """

    live: int = 0
    cached: int = 0
    earliest: float | None = None


# Kept ambient (issue 22): one search's HTTP answers are counted inside the shared client,
# which serves concurrent searches of many sources and knows none of its callers.
_tally: ContextVar[RequestTally | None] = ContextVar("veracity_http_tally", default=None)


@contextlib.contextmanager
def track_requests() -> Iterator[RequestTally]:
    """Count the HTTP answers (live or cached) given inside the block, tasks included."""
    tally = RequestTally()
    token = _tally.set(tally)
    try:
        yield tally
    finally:
        _tally.reset(token)


def count_answer(cached: bool, retrieved_at: float) -> None:
    tally = _tally.get()
    if tally is not None:
        if cached:
            tally.cached += 1
        else:
            tally.live += 1
        if tally.earliest is None or retrieved_at < tally.earliest:
            tally.earliest = retrieved_at


RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
AUTH_STATUS = frozenset({401, 403})

# Requests per second by host: each service's published guidance for clients without
# special arrangements (arXiv asks for one request every 3 s; NCBI allows 3/s without a
# key; Reddit allows about 10/min without OAuth).
DEFAULT_RATE_LIMITS: dict[str, float] = {
    "export.arxiv.org": 1 / 3,
    "eutils.ncbi.nlm.nih.gov": 3.0,
    "api.semanticscholar.org": 1.0,
    "www.reddit.com": 10 / 60,
    "oauth.reddit.com": 1.0,
    "api.search.brave.com": 1.0,
}


class HttpStatusError(SourceBadResponse):
    """An HTTP status the client does not retry or map to auth (e.g. 400, 404, 422)."""

    def __init__(self, source: str, message: str, status: int, body: str = ""):
        super().__init__(source, message)
        self.status = status
        self.body = body


class HttpConfig(BaseModel):
    """Settings of the shared HTTP client."""

    model_config = ConfigDict(extra="forbid")

    timeout_s: Seconds = Field(default=20.0, gt=0)
    connect_timeout_s: Seconds = Field(default=10.0, gt=0)
    max_attempts: Attempts = Field(default=3, ge=1)
    base_delay_s: Seconds = Field(default=0.5, ge=0)
    max_delay_s: Seconds = Field(default=30.0, ge=0)
    rate_limits: dict[str, Rate] = Field(default_factory=lambda: dict(DEFAULT_RATE_LIMITS))
    default_rate: Rate | None = None  # req/s for other hosts
    cache_mode: CacheMode = "auto"
    cache_path: Path | None = None  # None: nothing kept on disk (runtime passes the home's)
    cache_ttl_s: Seconds | None = 7 * 24 * 3600.0  # auto mode only; record/replay ignore it
    max_page_bytes: Bytes = Field(default=5_000_000, ge=1024)
    max_redirects: int = Field(default=5, ge=0, le=50)
    user_agent: str = "veracity/0.1 (evidence retrieval for fact-checking)"


@dataclass(frozen=True)
class HttpResponse:
    """A response body with its status, content type and retrieval time."""

    status: int
    url: str  # redacted
    content_type: str
    content: bytes
    retrieved_at: float
    cached: bool

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self, source: str) -> Any:
        """The body parsed as JSON.

        Raises:
            SourceBadResponse: the body is not JSON.
        """
        try:
            return json.loads(self.content)
        except (ValueError, UnicodeDecodeError) as exc:
            raise SourceBadResponse(
                source, f"expected JSON from {self.url}, got {self.text[:120]!r}"
            ) from exc


class HostLimiter:
    """Spaces requests to each host at least 1/rate seconds apart (loop-independent)."""

    def __init__(self, rates: dict[str, float], default: float | None):
        self.rates = {h.lower(): r for h, r in rates.items()}
        self.default = default
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def delay_for(self, host: str) -> float:
        rate = self.rates.get(host.lower(), self.default)
        if not rate:
            return 0.0
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next.get(host, now))
            self._next[host] = slot + 1.0 / rate
        return slot - now


def retry_after_s(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
