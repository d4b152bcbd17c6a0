"""The history's view of a job, kept in columns of its own so listing reads no JSON.

A job's request and verdict can weigh a megabyte each; the history shows a line of the
input, its kind, a post's number of replies, the method, status and label. Those are
computed once when the job is stored (`summarize`) and read back with the other summary
columns (`SUMMARY_SELECT`), so a page of 200 jobs parses nothing. Databases written
before these columns existed get them on open (`migrate`), filled from each stored
request, so old databases still open and list.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from dataclasses import dataclass
from typing import Any

from veracity.server.inputs import LINE_CHARS, cut_text, input_view

log = logging.getLogger("veracity.server")

# column -> SQL type; added to databases made before they existed
SUMMARY_COLUMNS = {"line": "TEXT", "replies": "INTEGER"}
SUMMARY_SELECT = (
    "id, created_at, started_at, finished_at, status, method, input_kind, preview, label, "
    "score, rerun_of, line, replies"
)
BACKFILL_BATCH = 200  # rows filled per transaction when migrating


@dataclass(frozen=True)
class JobSummaryRow:
    """A job as the history lists it (no request, no verdict).

    Attributes:
        line: one line of the input (``title — opening`` for an article).
        replies: a post's number of replies (None for claims and articles).
    """

    id: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    status: str
    method: str
    input_kind: str
    preview: str
    label: str | None
    score: float | None
    rerun_of: str | None
    line: str
    replies: int | None

    @classmethod
    def from_row(cls, row: tuple) -> JobSummaryRow:
        values = list(row)
        if values[11] is None:  # a row the migration has not filled (it fills them all)
            values[11] = cut_text(values[7] or "", LINE_CHARS)[0]
        return cls(*values)


def summarize(request: dict[str, Any], preview: str) -> tuple[str, int | None]:
    """(history line, number of replies) of a stored request."""
    view = input_view(request, preview)
    return view.line, view.replies


def migrate(db: sqlite3.Connection, lock: threading.Lock) -> int:
    """Add the summary columns to an older database and fill them; rows filled.

    Each batch is its own transaction under `lock`, so a large database is filled
    without holding the store for the whole pass.
    """
    with lock:
        have = {r[1] for r in db.execute("PRAGMA table_info(jobs)")}
        for name, kind in SUMMARY_COLUMNS.items():
            if name not in have:
                db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {kind}")
    filled = 0
    while True:
        with lock:
            rows = db.execute(
                "SELECT n, request, preview FROM jobs WHERE line IS NULL LIMIT ?",
                (BACKFILL_BATCH,),
            ).fetchall()
            if not rows:
                break
            updates = [(*_summary_of(raw, preview), n) for n, raw, preview in rows]
            db.execute("BEGIN")
            db.executemany("UPDATE jobs SET line=?, replies=? WHERE n=?", updates)
            db.execute("COMMIT")
        filled += len(rows)
    if filled:
        log.info("job database: filled the history columns of %d older checks", filled)
    return filled


def _summary_of(raw: str, preview: str) -> tuple[str, int | None]:
    try:
        request = json.loads(raw)
    except ValueError:  # an unreadable request still lists, by its preview
        request = None
    return summarize(request if isinstance(request, dict) else {}, preview or "")
