"""SQLite cache of HTTP responses that doubles as record/replay.

Rows hold the redacted request (method, URL, parameters, body), the status, the content
type, the body and the time it was retrieved. Keys are hashes of the request with every
secret removed (see `netsafe`), so two users with different API keys share entries and
no key is ever written. Modes (the same names as the LLM cache):

- ``off``: nothing is read or written.
- ``auto`` (default): answers are read back while younger than `ttl_s` (None: forever)
  and written after each live call.
- ``record``: every request goes to the service and the answer is (over)written, so a
  recording holds what the services say now.
- ``replay``: read only, any age; a request with no recorded answer raises `ReplayMiss`,
  so a replayed run can never silently reach a live service.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from veracity.core.infra import CacheMode, open_sqlite
from veracity.retrieval.base import SourceError
from veracity.retrieval.transport.netsafe import redact_mapping, redact_url, strip_secrets

_SCHEMA = """
CREATE TABLE IF NOT EXISTS http_responses (
    key TEXT PRIMARY KEY,
    method TEXT NOT NULL,
    url TEXT NOT NULL,
    request TEXT NOT NULL,
    status INTEGER NOT NULL,
    content_type TEXT NOT NULL,
    body BLOB NOT NULL,
    retrieved_at REAL NOT NULL
)
"""


class ReplayMiss(SourceError):
    """Replay mode found no recorded answer for a request."""


@dataclass(frozen=True)
class CachedResponse:
    status: int
    content_type: str
    body: bytes
    retrieved_at: float


def request_key(
    method: str,
    url: str,
    params: dict[str, Any] | None = None,
    body: dict[str, Any] | None = None,
    vary: dict[str, str] | None = None,
) -> str:
    """Hash of a request with secrets removed (URL query, parameters and body)."""
    blob = json.dumps(
        {
            "method": method.upper(),
            "url": redact_url(url),
            "params": {k: str(v) for k, v in strip_secrets(params).items()},
            "body": strip_secrets(body),
            "vary": vary or {},
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


class HttpCache:
    """A thread-safe request → response store in one SQLite file.

    Args:
        path: the SQLite file (created on first use).
        mode: off, auto, record or replay (see the module docstring).
        ttl_s: in auto mode, answers older than this are fetched again (None: never).
    """

    def __init__(self, path: str | Path, mode: CacheMode = "auto", ttl_s: float | None = None):
        if mode not in ("off", "auto", "record", "replay"):
            raise ValueError(f"unknown cache mode {mode!r}; use off, auto, record or replay")
        if ttl_s is not None and ttl_s <= 0:
            raise ValueError("ttl_s must be positive or None")
        self.path = Path(path)
        self.mode: CacheMode = mode
        self.ttl_s = ttl_s
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_sqlite(self.path, _SCHEMA, what="HTTP cache", rebuild=True)
        return self._conn

    @property
    def reads(self) -> bool:
        return self.mode in ("auto", "replay")

    @property
    def writes(self) -> bool:
        return self.mode in ("auto", "record")

    def get(self, key: str, *, what: str = "request") -> CachedResponse | None:
        """The stored answer for `key`, or None (in replay mode a miss raises).

        Raises:
            ReplayMiss: replay mode and nothing recorded under `key`.
        """
        if not self.reads:
            return None
        with self._lock:
            row = (
                self._db()
                .execute(
                    "SELECT status, content_type, body, retrieved_at FROM http_responses "
                    "WHERE key=?",
                    (key,),
                )
                .fetchone()
            )
        fresh = row is not None and (
            self.mode == "replay" or self.ttl_s is None or time.time() - row[3] <= self.ttl_s
        )
        if not fresh:
            self.misses += 1
            if self.mode == "replay":
                raise ReplayMiss(
                    "http-cache",
                    f"replay mode: nothing recorded for {what} (key {key[:12]}…); record "
                    "the run first or switch the cache mode to auto",
                )
            return None
        self.hits += 1
        return CachedResponse(status=row[0], content_type=row[1], body=row[2], retrieved_at=row[3])

    def put(
        self,
        key: str,
        *,
        method: str,
        url: str,
        params: dict[str, Any] | None,
        body: dict[str, Any] | None,
        response: CachedResponse,
    ) -> None:
        """Store a response under `key` (the request is stored redacted)."""
        if not self.writes:
            return
        request = json.dumps(
            {"params": redact_mapping(params), "body": redact_mapping(body)}, default=str
        )
        with self._lock:
            self._db().execute(
                "INSERT OR REPLACE INTO http_responses VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    key,
                    method.upper(),
                    redact_url(url),
                    request,
                    response.status,
                    response.content_type,
                    response.body,
                    response.retrieved_at,
                ),
            )
            self._db().commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db().execute("SELECT COUNT(*) FROM http_responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def timestamp(value: float) -> _dt.datetime:
    """A cache time as an aware UTC datetime."""
    return _dt.datetime.fromtimestamp(value, tz=_dt.timezone.utc)
