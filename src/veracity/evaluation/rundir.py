"""File-level safety of a run directory: whole-line appends, torn-line repair, the
directory lock, and the session log with heartbeats.

- Lines are appended with `veracity.core.infra.append_line` (one ``write``, synced), so a kill
  leaves either the whole line or a torn last line, which the run store cuts with
  `veracity.core.infra.cut_torn_line` before the next session appends.
- `DirLock` is an OS file lock (``flock``) on ``RUN_DIR/.lock``
  (`veracity.evaluation.dirlock`, which the server's data directory shares): one session
  at a time, released by the OS even when the process is killed; a refused session is
  told the holder's pid, host and start.
- `SessionLog` keeps ``sessions.jsonl``: a start and an end line per session, and while a
  session runs a heartbeat file (``.alive-<session>``) refreshed every `HEARTBEAT_S`
  seconds. A session with no end line was killed; its wall time runs from its start to
  its last sign of life (heartbeat or record), so `usage.json` counts it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from veracity.core.errors import DirLocked, RunStoreError
from veracity.core.infra import append_line
from veracity.evaluation.dirlock import DirLock as SharedDirLock

HEARTBEAT_S = 1.0


class RunLocked(RunStoreError, DirLocked):
    """Another session (another `veracity eval`) is using the run directory."""


def now() -> str:
    return datetime.now(timezone.utc).isoformat()


class DirLock(SharedDirLock):
    """The exclusive lock of one run directory (`veracity.evaluation.dirlock`)."""

    def __init__(self, folder: Path):
        super().__init__(
            folder,
            user="another veracity eval",
            hint="wait for it to finish or stop it, or choose another --out directory",
            error=RunLocked,
        )


class SessionLog:
    """``sessions.jsonl`` and the heartbeats of one run directory.

    Args:
        folder: the run directory.
        finished_at: the finishing times of the records written so far (to bound a
            killed session's wall time).
        running: whether a session is running now in another process.
    """

    def __init__(
        self,
        folder: Path,
        finished_at: Callable[[], Sequence[str]],
        running: Callable[[], bool],
    ):
        self.folder = folder
        self.path = folder / "sessions.jsonl"
        self._finished_at = finished_at
        self._running = running

    def start(self, **info: Any) -> str:
        """Log a session's start (with `info`, e.g. the engine); returns its id."""
        sid = uuid.uuid4().hex[:12]
        stamp = now()
        append_line(self.path, json.dumps({"session": sid, "event": "start", "started_at": stamp,
                                           "pid": os.getpid(), **info}))  # fmt: skip
        self.beat(sid)
        return sid

    def beat(self, sid: str) -> None:
        """Refresh the session's sign of life."""
        alive = self.folder / f".alive-{sid}"
        tmp = alive.with_suffix(".tmp")
        tmp.write_text(now(), encoding="utf-8")
        os.replace(tmp, alive)

    def end(self, sid: str, *, status: str, wall_time_s: float, finished: int) -> None:
        entry = {"session": sid, "event": "end", "ended_at": now(), "status": status,
                 "wall_time_s": round(wall_time_s, 3), "examples_finished": finished}  # fmt: skip
        append_line(self.path, json.dumps(entry))
        (self.folder / f".alive-{sid}").unlink(missing_ok=True)

    def read(self) -> list[dict[str, Any]]:
        """One dict per session: started_at, wall_time_s, examples_finished, status
        (``finished``, ``interrupted``, ``killed`` or ``running``)."""
        if not self.path.is_file():
            return []
        text = self.path.read_text(encoding="utf-8", errors="replace")
        sessions: dict[str, dict[str, Any]] = {}
        for lineno, line in enumerate(text.splitlines(keepends=True), 1):
            if not line.endswith("\n"):
                continue  # torn by a kill mid-write
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                raise RunStoreError(f"{self.path}:{lineno}: not JSON: {exc}") from exc
            sid = entry.get("session") or f"line{lineno}"
            sessions.setdefault(sid, {"session": sid}).update(
                {k: v for k, v in entry.items() if k != "event"}
            )
        out = list(sessions.values())
        for i, session in enumerate(out):
            if "status" not in session:
                until = out[i + 1].get("started_at") if i + 1 < len(out) else None
                session.update(self._killed(session, until))
                if until is None and self._running():
                    session["status"] = "running"
        return out

    def _killed(self, session: dict[str, Any], until: str | None) -> dict[str, Any]:
        """Wall time and records of a session that never wrote its end line."""
        started = session.get("started_at")
        if not started:
            return {"status": "killed", "wall_time_s": 0.0, "examples_finished": 0}
        stamps = [s for s in self._finished_at() if s >= started and (until is None or s < until)]
        alive = self.folder / f".alive-{session['session']}"
        last = [*stamps, started]
        if alive.is_file():
            last.append(alive.read_text(encoding="utf-8").strip())
        wall = (datetime.fromisoformat(max(last)) - datetime.fromisoformat(started)).total_seconds()
        return {"status": "killed", "wall_time_s": round(max(wall, 0.0), 3),
                "examples_finished": len(stamps)}  # fmt: skip
