"""How long the server keeps finished checks: by age and by the database's size.

Every check the server runs stays in its SQLite file (request, verdict, every event), so
without a limit the file only grows. `prune` deletes finished checks (never queued or
running ones) older than the age limit, then the oldest finished checks until the data
fits the size limit (down to `TARGET_SHARE` of it, so the next few checks do not prune
again), and gives the freed pages back to the file system. The server prunes at start
and every `ServerSettings.retention_interval_s`, in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

log = logging.getLogger("veracity.server")

FINISHED_SQL = "('done', 'failed', 'cancelled', 'interrupted')"
DELETE_BATCH = 100  # checks deleted per transaction (the store stays usable in between)
TARGET_SHARE = 0.9  # a size prune frees down to this share of the limit
SMALL_PAGES = 2_000  # a database this small is compacted on open without a noticeable wait


@dataclass(frozen=True)
class RetentionPolicy:
    """What to keep.

    Attributes:
        max_age_days: finished checks older than this are deleted (0: kept at any age).
        max_mb: the data may take this many megabytes (10^6 bytes); the oldest finished
            checks go first (0: no size limit).
    """

    max_age_days: float = 30.0
    max_mb: float = 1000.0

    @property
    def enabled(self) -> bool:
        return self.max_age_days > 0 or self.max_mb > 0


@dataclass(frozen=True)
class PruneReport:
    """What a prune did: checks deleted for age and for size, bytes before and after."""

    by_age: int
    by_size: int
    bytes_before: int
    bytes_after: int

    @property
    def deleted(self) -> int:
        return self.by_age + self.by_size


async def keep_pruning(
    prune_fn: Callable[[RetentionPolicy], PruneReport], policy: RetentionPolicy, every_s: float
) -> None:
    """Prune now and every `every_s` seconds, in a worker thread, until cancelled; a
    failed prune (a full or read-only disk) is logged and tried again next time."""
    if not policy.enabled:
        return
    while True:
        try:
            await asyncio.to_thread(prune_fn, policy)
        except Exception as exc:  # the server goes on; the operator reads the log
            log.error("job database: pruning failed: %s: %s", type(exc).__name__, exc)
        await asyncio.sleep(every_s)


def data_bytes(db: sqlite3.Connection) -> int:
    """Bytes of the database's pages in use (free pages excluded)."""
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    size = db.execute("PRAGMA page_size").fetchone()[0]
    return (pages - free) * size


def prepare(db: sqlite3.Connection, lock: threading.Lock) -> None:
    """Let a new (or small) database give freed pages back to the file system.

    SQLite sets this mode before a file has tables, or with a VACUUM; a large older
    file is converted by the first prune that deletes something instead.
    """
    with lock:
        incremental = db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        if not incremental and db.execute("PRAGMA page_count").fetchone()[0] <= SMALL_PAGES:
            _compact_mode(db)


def prune(
    db: sqlite3.Connection,
    lock: threading.Lock,
    policy: RetentionPolicy,
    now: datetime | None = None,
) -> PruneReport:
    """Delete what `policy` does not keep; see the module docstring."""
    with lock:
        before = data_bytes(db)
    by_age = by_size = 0
    if policy.max_age_days > 0:
        cutoff = (now or datetime.now(timezone.utc)) - timedelta(days=policy.max_age_days)
        by_age = _delete_where(db, lock, "created_at < ?", (cutoff.isoformat(),))
    if policy.max_mb > 0:
        by_size = _shrink(db, lock, int(policy.max_mb * 1e6))
    with lock:
        if by_age or by_size:
            _release_pages(db)
        after = data_bytes(db)
    report = PruneReport(by_age, by_size, before, after)
    if report.deleted:
        log.info(
            "job database: deleted %d checks older than %g days and %d for the %g MB limit "
            "(%.1f MB -> %.1f MB)", by_age, policy.max_age_days, by_size, policy.max_mb,
            before / 1e6, after / 1e6,
        )  # fmt: skip
    return report


def _delete_where(db: sqlite3.Connection, lock: threading.Lock, cond: str, args: tuple) -> int:
    """Delete finished checks matching `cond`, oldest first, in batches; the count."""
    deleted = 0
    while True:
        with lock:
            ids = [
                r[0]
                for r in db.execute(
                    f"SELECT id FROM jobs WHERE status IN {FINISHED_SQL} AND {cond} "
                    "ORDER BY n LIMIT ?",
                    (*args, DELETE_BATCH),
                )
            ]
            if ids:
                _delete(db, ids)
        deleted += len(ids)
        if len(ids) < DELETE_BATCH:
            return deleted


def _shrink(db: sqlite3.Connection, lock: threading.Lock, max_bytes: int) -> int:
    """Delete the oldest finished checks until the data fits `TARGET_SHARE` of
    `max_bytes`; the count."""
    with lock:
        if data_bytes(db) <= max_bytes:
            return 0  # within the limit: nothing to do
    deleted = 0
    while True:
        with lock:  # freed pages are free-listed at once, so each measure is current
            excess = data_bytes(db) - int(max_bytes * TARGET_SHARE)
            ids = _oldest_covering(db, excess) if excess > 0 else []
            if ids:
                _delete(db, ids)
        if not ids:  # small enough, or only unfinished checks left
            return deleted
        deleted += len(ids)


def _oldest_covering(db: sqlite3.Connection, excess: int) -> list[str]:
    """The oldest finished checks (at most a batch) whose stored text adds up to `excess`."""
    rows = db.execute(
        "SELECT id, length(request) + coalesce(length(verdict), 0) + coalesce("
        "(SELECT sum(length(body)) FROM events WHERE events.job_id = jobs.id), 0) "
        f"FROM jobs WHERE status IN {FINISHED_SQL} ORDER BY n LIMIT ?",
        (DELETE_BATCH,),
    ).fetchall()
    ids, total = [], 0
    for job_id, size in rows:
        ids.append(job_id)
        total += size or 0
        if total >= excess:
            break
    return ids


def _delete(db: sqlite3.Connection, ids: list[str]) -> None:
    marks = ",".join("?" * len(ids))
    db.execute("BEGIN")
    try:
        db.execute(f"DELETE FROM events WHERE job_id IN ({marks})", ids)
        db.execute(f"DELETE FROM jobs WHERE id IN ({marks})", ids)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _release_pages(db: sqlite3.Connection) -> None:
    """Give free pages back to the file system and fold the WAL into the file."""
    if db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2:
        db.executescript("PRAGMA incremental_vacuum;")  # run to the end (execute frees 1 page)
    else:  # an older file: converted once (a VACUUM rewrites it)
        log.info("job database: compacting the file once so that pruning can shrink it")
        _compact_mode(db)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _compact_mode(db: sqlite3.Connection) -> None:
    db.execute("PRAGMA auto_vacuum=INCREMENTAL")
    db.execute("VACUUM")
