"""SQLite response cache with record/replay.

Keys are hashes of the normalised request plus the backend identity (see
`LLMRequest.cache_key`); API keys never enter a key or a row. Modes:

- ``off``: nothing is read or written.
- ``auto`` (default): deterministic requests (temperature 0) are read and written.
- ``record``: every response is written; a sampled request made several times is stored
  once per occurrence (its n-th call gets the n-th slot), so a replay reproduces the
  same sequence of samples. Deterministic requests are also read.
- ``replay``: read only; a request with no recorded response raises `CacheMiss`, so a
  replayed run can never silently call a live model.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

from veracity.core.infra import CacheMode, open_sqlite
from veracity.llm.base import CacheMiss, LLMRequest, LLMResponse

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT NOT NULL,
    occurrence INTEGER NOT NULL,
    backend TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL,
    PRIMARY KEY (key, occurrence)
)
"""


class ResponseCache:
    """A thread-safe request → response store in one SQLite file."""

    def __init__(self, path: str | Path, mode: CacheMode = "auto"):
        if mode not in ("off", "auto", "record", "replay"):
            raise ValueError(f"unknown cache mode {mode!r}; use off, auto, record or replay")
        self.path = Path(path)
        self.mode: CacheMode = mode
        self._lock = threading.Lock()
        self._seen: Counter[str] = Counter()  # occurrences of sampled keys in this process
        self._conn: sqlite3.Connection | None = None
        self.hits = 0
        self.misses = 0
        self.dropped = 0  # stored responses that failed validation and were deleted

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._conn = open_sqlite(self.path, _SCHEMA, what="LLM cache", rebuild=True)
        return self._conn

    def _read_slot(self, request: LLMRequest, key: str) -> int | None:
        """Slot to read for this request, or None when this mode does not read it."""
        if self.mode == "off":
            return None
        if request.temperature == 0:
            return 0
        if self.mode != "replay":  # sampled requests are only ever read back in replay
            return None
        n = self._seen[key]
        self._seen[key] += 1
        return n

    def _write_slot(self, request: LLMRequest, key: str) -> int | None:
        if self.mode in ("off", "replay"):
            return None
        if request.temperature == 0:
            return 0
        if self.mode == "auto":
            return None
        n = self._seen[key]
        self._seen[key] += 1
        return n

    def get(self, request: LLMRequest, backend_id: str) -> LLMResponse | None:
        key = request.cache_key(backend_id)
        with self._lock:
            slot = self._read_slot(request, key)
            if slot is None:
                return None
            row = (
                self._db()
                .execute("SELECT response FROM responses WHERE key=? AND occurrence=?", (key, slot))
                .fetchone()
            )
        if row is None:
            self.misses += 1
            if self.mode == "replay":
                raise CacheMiss(
                    "replay mode: no recorded response for this request "
                    f"({request.tag or 'untagged'}, "
                    f"key {key[:12]}…, occurrence {slot}); record the run first or switch the "
                    "cache mode to auto"
                )
            return None
        try:
            response = LLMResponse.model_validate_json(row[0])
        except ValueError as exc:  # written by an older version or damaged: never served
            self.drop(request, backend_id, slot)
            if self.mode == "replay":
                raise CacheMiss(
                    f"replay mode: the recorded response for {request.tag or 'a request'} "
                    f"(key {key[:12]}…) is unusable and was dropped: {_first_line(exc)}"
                ) from None
            return None
        self.hits += 1
        return response.model_copy(update={"cached": True})

    def drop(self, request: LLMRequest, backend_id: str, slot: int = 0) -> None:
        """Delete a stored response (one that failed validation), counting it in `dropped`."""
        key = request.cache_key(backend_id)
        with self._lock:
            self._db().execute("DELETE FROM responses WHERE key=? AND occurrence=?", (key, slot))
            self._db().commit()
            self.dropped += 1

    def put(self, request: LLMRequest, backend_id: str, response: LLMResponse) -> None:
        key = request.cache_key(backend_id)
        with self._lock:
            slot = self._write_slot(request, key)
            if slot is None:
                return
            self._db().execute(
                "INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?)",
                (
                    key,
                    slot,
                    backend_id,
                    json.dumps(request.model_dump(exclude={"tag"})),
                    response.model_copy(update={"cached": False}).model_dump_json(),
                    time.time(),
                ),
            )
            self._db().commit()

    def __len__(self) -> int:
        with self._lock:
            return self._db().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _first_line(exc: Exception) -> str:
    lines = str(exc).splitlines()
    return " ".join(lines[:3])[:200]
