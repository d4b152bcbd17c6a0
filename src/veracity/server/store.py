"""Jobs, their events and verdicts, persisted in one SQLite file (WAL).

Every event is written as it happens, so a restarted server can replay the stream of a
finished job exactly; jobs still queued or running when the server stopped are marked
``interrupted`` on start.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from veracity.core.infra import open_sqlite
from veracity.core.storage import check_store
from veracity.evaluation.dirlock import DirLock
from veracity.server import retention
from veracity.server.summaries import SUMMARY_SELECT, JobSummaryRow, migrate, summarize

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    n INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    status TEXT NOT NULL,
    request TEXT NOT NULL,
    method TEXT NOT NULL,
    input_kind TEXT NOT NULL,
    preview TEXT NOT NULL,
    label TEXT,
    score REAL,
    verdict TEXT,
    error TEXT,
    rerun_of TEXT,
    line TEXT,
    replies INTEGER
);
CREATE TABLE IF NOT EXISTS events (
    job_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    type TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (job_id, seq)
);
"""


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


@dataclass(frozen=True)
class JobRow:
    """A job as stored."""

    id: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    status: str
    request: dict[str, Any]
    method: str
    input_kind: str
    preview: str
    label: str | None
    score: float | None
    verdict: dict[str, Any] | None
    error: str | None
    rerun_of: str | None


_COLUMNS = (
    "id, created_at, started_at, finished_at, status, request, method, input_kind, preview, "
    "label, score, verdict, error, rerun_of"
)


def _row(r: sqlite3.Row | tuple) -> JobRow:
    values = list(r)
    values[5] = json.loads(values[5])
    values[11] = json.loads(values[11]) if values[11] else None
    return JobRow(*values)


def data_dir_lock(database: Path) -> DirLock:
    """The lock of the folder holding `database`: one server per data directory (a
    second would mark the first's running jobs interrupted)."""
    return DirLock(
        database.parent,
        user="another veracity server",
        hint="stop that server, or give this one another --data-dir (VERACITY_SERVER_DATA_DIR)",
    )


class JobStore:
    """Thread-safe access to the jobs database, holding its folder's lock while open.

    Args:
        path: the SQLite file (its folder is created).

    Raises:
        DirLocked: another process (another server) has the folder open.
    """

    def __init__(self, path: Path):
        self.path = path
        self._owner = data_dir_lock(path)
        self._owner.acquire()
        try:
            self._db = open_sqlite(path, SCHEMA, autocommit=True, what="job database")
        except BaseException:
            self._owner.release()
            raise
        self._lock = threading.Lock()
        migrate(self._db, self._lock)  # summary columns of a database made before them
        retention.prepare(self._db, self._lock)

    @staticmethod
    def verify(path: Path) -> None:
        """Open (or create) the database at `path` and check its integrity, so that a
        damaged or unwritable one stops the server before it serves.

        Raises:
            StorageError: naming the file and the fix.
        """
        JobStore(path).close()
        fault = check_store(path, "job database")
        if fault is not None:
            raise fault

    def storage(self) -> str:
        """``ok``, or the storage fault the database is in (``full``, ``read-only``,
        ``corrupt``, ``io``): see `veracity.core.storage.StoreHealth`."""
        health = getattr(self._db, "health", None)
        return health.state() if health is not None else "ok"

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self._owner.release()

    def _write(self, sql: str, args: tuple = ()) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    def _read(self, sql: str, args: tuple = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def create(
        self,
        job_id: str,
        request: dict[str, Any],
        *,
        method: str,
        input_kind: str,
        preview: str,
        rerun_of: str | None = None,
    ) -> None:
        line, replies = summarize(request, preview)  # what the history lists
        self._write(
            "INSERT INTO jobs (id, created_at, status, request, method, input_kind, preview, "
            "rerun_of, line, replies) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?)",
            (job_id, now(), json.dumps(request), method, input_kind, preview, rerun_of, line,
             replies),
        )  # fmt: skip

    def started(self, job_id: str) -> None:
        self._write(
            "UPDATE jobs SET status='running', started_at=? WHERE id=? AND status='queued'",
            (now(), job_id),
        )

    def finish(
        self,
        job_id: str,
        status: str,
        *,
        verdict: dict[str, Any] | None = None,
        error: str | None = None,
        label: str | None = None,
        score: float | None = None,
    ) -> None:
        """Store how the job ended; `label` and `score` default to the verdict's."""
        if verdict and label is None and score is None:
            label, score = verdict.get("label"), verdict.get("score")
        self._write(
            "UPDATE jobs SET status=?, finished_at=?, verdict=?, error=?, label=?, score=? "
            "WHERE id=?",
            (
                status,
                now(),
                json.dumps(verdict) if verdict is not None else None,
                error,
                label,
                score,
                job_id,
            ),
        )

    def add_event(self, job_id: str, seq: int, kind: str, body: dict[str, Any]) -> None:
        self._write(
            "INSERT INTO events (job_id, seq, type, body) VALUES (?, ?, ?, ?)",
            (job_id, seq, kind, json.dumps(body)),
        )

    def events(self, job_id: str, after: int = 0) -> list[tuple[int, str, dict[str, Any]]]:
        rows = self._read(
            "SELECT seq, type, body FROM events WHERE job_id=? AND seq>? ORDER BY seq",
            (job_id, after),
        )
        return [(seq, kind, json.loads(body)) for seq, kind, body in rows]

    def trace_of_kinds(self, job_id: str, kinds: tuple[str, ...]) -> list[dict[str, Any]]:
        """The job's trace events of these kinds, in order (the rest are not parsed)."""
        marks = ", ".join("?" for _ in kinds)
        rows = self._read(
            "SELECT body FROM events WHERE job_id=? AND type='trace' "
            f"AND json_extract(body, '$.kind') IN ({marks}) ORDER BY seq",
            (job_id, *kinds),
        )
        return [json.loads(body) for (body,) in rows]

    def last_seq(self, job_id: str) -> int:
        rows = self._read("SELECT MAX(seq) FROM events WHERE job_id=?", (job_id,))
        return rows[0][0] or 0

    def exists(self, job_id: str) -> bool:
        """Whether the job is stored (reads no request or verdict)."""
        return bool(self._read("SELECT 1 FROM jobs WHERE id=?", (job_id,)))

    def get(self, job_id: str) -> JobRow | None:
        rows = self._read(f"SELECT {_COLUMNS} FROM jobs WHERE id=?", (job_id,))
        return _row(rows[0]) if rows else None

    def history(self, limit: int, before: str | None = None) -> list[JobSummaryRow]:
        """Newest first, from the summary columns (no request or verdict is read);
        `before` (a job id) continues after that job."""
        if before is None:
            rows = self._read(
                f"SELECT {SUMMARY_SELECT} FROM jobs ORDER BY n DESC LIMIT ?", (limit,)
            )
        else:
            rows = self._read(
                f"SELECT {SUMMARY_SELECT} FROM jobs WHERE n < (SELECT n FROM jobs WHERE id=?) "
                "ORDER BY n DESC LIMIT ?",
                (before, limit),
            )
        return [JobSummaryRow.from_row(r) for r in rows]

    def prune(self, policy: retention.RetentionPolicy) -> retention.PruneReport:
        """Delete the finished checks `policy` does not keep (`veracity.server.retention`)."""
        return retention.prune(self._db, self._lock, policy)

    def unfinished(self) -> list[str]:
        rows = self._read("SELECT id FROM jobs WHERE status IN ('queued', 'running') ORDER BY n")
        return [r[0] for r in rows]

    def interrupt_unfinished(self) -> list[str]:
        """Mark jobs left queued or running by a previous process as interrupted."""
        ids = self.unfinished()
        for job_id in ids:
            self.finish(job_id, "interrupted", error="the server stopped before the check ended")
        return ids
