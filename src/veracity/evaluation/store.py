"""The run directory: resolved config, predictions, metrics, usage and caches.

Layout of a run directory::

    RUN_DIR/
      run.json           the run record (`veracity.runtime.record`, secrets removed): its
                         format, the package version, the source revision where known,
                         the prompt hashes, the run config as given (resume, report) and
                         the effective spec (`veracity eval --spec RUN_DIR` runs it again);
                         older directories hold config.yaml (+ spec.json, prompts.json)
                         instead, read as well and replaced by run.json on their next session
      predictions.jsonl  one `PredictionRecord` per finished example, in finishing order
      metrics.json       `Metrics` over all records
      usage.json         totals and per-example means of tokens, calls, searches, cost
      sessions.jsonl     one line per session of the run (start, wall time, finished or not)
      cache/llm.sqlite   the LLM response cache (record/replay)
      cache/http.sqlite  the HTTP response cache of web sources (record/replay)
      report.md, report.html   written by `veracity report`

`predictions.jsonl` is append-only. Each record is written as one complete line with a
single write, then flushed and synced, so an interrupted run leaves only whole lines; a
torn last line (possible only after a hard kill mid-write) is skipped by readers and cut
off by the next session before it writes, and that example is simply run again.

One session at a time: a session takes an exclusive lock on the directory (``.lock``,
an OS file lock, so it is released even when the process is killed); a second
`veracity eval` on the same directory gets a `RunLocked` error instead of interleaving.
Each session writes a start line and an end line to ``sessions.jsonl`` and keeps a
heartbeat while it runs; a session with no end line was killed, and its wall time runs
to its last heartbeat or record (see `veracity.evaluation.rundir`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from veracity.core.errors import RunStoreError
from veracity.core.infra import append_line, cut_torn_line
from veracity.core.redaction import strip_credentials
from veracity.core.storage import write_atomically
from veracity.core.types import CheckInput, Usage, Verdict
from veracity.documents.report import DocumentReport
from veracity.evaluation.rundir import DirLock, RunLocked, SessionLog
from veracity.runtime.record import (
    LEGACY_FILES,
    RECORD_FILE,
    RunRecord,
    has_record,
    make_record,
    read_record,
)

__all__ = ["PredictionRecord", "RunLocked", "RunStore", "RunStoreError", "redact"]


Status = Literal["ok", "abstained", "error", "exception"]
INPUT_CHARS = 500  # a record keeps this much of what was checked, for reports


def input_summary(item: CheckInput, limit: int = INPUT_CHARS) -> str:
    """What was checked, in short: the claim, an article's title and opening, or a post
    and its number of replies; runs of white space made single, cut at `limit`."""
    tail = ""
    if item.kind == "article":
        text = f"{item.title} — {item.body}" if item.title else item.body
    elif item.kind == "post":
        text, n = item.text, len(item.replies)
        tail = f" ({n} {'reply' if n == 1 else 'replies'})" if n else ""
    else:
        text = item.text
    flat, room = " ".join(text.split()), limit - len(tail)
    return (flat if len(flat) <= room else flat[: room - 1].rstrip() + "…") + tail


_SECRET_KEY = re.compile(r"(api[_-]?key|token|secret|password|passwd|authorization|cookie)", re.I)
REDACTED = "***redacted***"


class PredictionRecord(BaseModel):
    """One finished example.

    Attributes:
        id: the example id (unique within the run).
        gold: the gold label in the method's label space; None in a batch run (inputs
            without labels, see `veracity batch`).
        gold_original: the gold label as the dataset gives it (None: no label).
        input: what was checked, in short (`input_summary`); None in runs written before
            records kept it.
        predicted: the method's label, or None (abstained, error or exception).
        status: ok, abstained, error (the verdict records a fault) or exception (the
            method crashed: a bug; `exception` holds the traceback).
        score: the verdict's veracity score.
        confidence: the verdict's confidence.
        latency_s: wall time of this example as the runner measured it.
        verdict: the full verdict (with trace and usage), when there is one.
        report: a document's report (the payload of its `DocumentVerdict`: every claim with
            its own verdict), when the input was a document.
        exception: the traceback of a crash.
        finished_at: UTC time the record was written.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    gold: str | None = None
    gold_original: str | None = None
    input: str | None = None
    predicted: str | None
    status: Status
    score: float | None = None
    confidence: float | None = None
    latency_s: float = 0.0
    verdict: Verdict | None = None
    report: DocumentReport | None = None
    exception: str | None = None
    finished_at: str = Field(default_factory=lambda: datetime.now(timezone.utc).isoformat())

    @field_validator("exception")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        return strip_credentials(v) if v else v

    @property
    def usage(self) -> Usage:
        """The verdict's usage (zero when there is no verdict)."""
        return self.verdict.usage if self.verdict is not None else Usage()

    @property
    def correct(self) -> bool:
        return self.predicted is not None and self.predicted == self.gold

    @classmethod
    def from_verdict(
        cls,
        example_id: str,
        gold: str | None,
        gold_original: str | None,
        verdict: Verdict,
        latency_s: float,
        input: str | None = None,
    ) -> PredictionRecord:
        if verdict.error:
            status: Status = "error"
        elif verdict.label is None:
            status = "abstained"
        else:
            status = "ok"
        return cls(
            id=example_id,
            gold=gold,
            gold_original=gold_original,
            input=input,
            predicted=verdict.label if status == "ok" else None,
            status=status,
            score=verdict.score if status == "ok" else None,
            confidence=verdict.confidence if status == "ok" else None,
            latency_s=round(latency_s, 4),
            verdict=verdict,
            report=report if isinstance(report := getattr(verdict, "report", None),
                                        DocumentReport) else None,
        )  # fmt: skip


def redact(data: Any) -> Any:
    """A copy of `data` with secret-looking values replaced and URL credentials removed.

    Keys that name an environment variable (``*_env``) are kept: they hold no secret.
    """
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            key = str(k)
            secret = _SECRET_KEY.search(key) and not key.endswith("_env")
            out[k] = REDACTED if secret and isinstance(v, str) and v else redact(v)
        return out
    if isinstance(data, list | tuple):
        return [redact(v) for v in data]
    if isinstance(data, str):
        return strip_credentials(data)  # user:password@host -> host
    return data


class RunStore:
    """Reads and writes one run directory."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._lock = DirLock(self.path)
        self.sessions = SessionLog(
            self.path,
            lambda: [r.finished_at for r in self.read_predictions()],
            self._lock.held_elsewhere,
        )

    # ------------------------------------------------------------------ lock
    @property
    def locked(self) -> bool:
        """Whether this object holds the directory's lock."""
        return self._lock.held

    def acquire(self) -> None:
        """Take the directory's exclusive lock, then repair torn last lines.

        Raises:
            RunLocked: another session holds it (its pid and start time are named).
        """
        if not self._lock.held:
            self._lock.acquire()
            self.repair()

    def release(self) -> None:
        """Give the lock back (the OS also does when the process ends)."""
        self._lock.release()

    def __enter__(self) -> RunStore:
        """``with RunStore(path) as store:`` holds the lock (repaired) for the block."""
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        self.release()

    # ------------------------------------------------------------------ paths
    @property
    def record_path(self) -> Path:
        """``run.json``, the run record (an older directory may hold ``config.yaml``)."""
        return self.path / RECORD_FILE

    @property
    def predictions_path(self) -> Path:
        return self.path / "predictions.jsonl"

    @property
    def metrics_path(self) -> Path:
        return self.path / "metrics.json"

    @property
    def usage_path(self) -> Path:
        return self.path / "usage.json"

    @property
    def llm_cache_path(self) -> Path:
        return self.path / "cache" / "llm.sqlite"

    @property
    def http_cache_path(self) -> Path:
        return self.path / "cache" / "http.sqlite"

    def exists(self) -> bool:
        """Whether the directory holds a run record (of any layout)."""
        return has_record(self.path)

    # ------------------------------------------------------------------ record
    def write_record(
        self, config: dict[str, Any], spec: Any = None, prompt_hashes: dict[str, str] | None = None
    ) -> None:
        """Write the run record, ``run.json`` (secrets removed), and remove the files an
        older layout kept instead, so the directory holds the run once.

        Args:
            config: the run config as JSON (``RunConfig.model_dump(mode="json")``).
            spec: the effective run (a `veracity.runtime.spec.RunSpec`), or None (a
                repeated run's parent).
            prompt_hashes: template name -> hash of each prompt the method renders.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        spec_json = spec.model_dump(mode="json") if spec is not None else None
        record = make_record(config, spec_json, prompt_hashes or {})
        text = json.dumps(redact(record), indent=2, ensure_ascii=False) + "\n"
        write_atomically(self.record_path, lambda f: f.write(text), "run record")
        for name in LEGACY_FILES:
            (self.path / name).unlink(missing_ok=True)

    def read_record(self) -> RunRecord:
        """The run record, of whichever layout the directory holds.

        Raises:
            RunStoreError: no record, or one that cannot be read.
        """
        return read_record(self.path)

    def read_config(self) -> dict[str, Any]:
        """The run config the record holds (see `read_record`)."""
        return self.read_record().config

    # ------------------------------------------------------------------ predictions
    def repair(self) -> bool:
        """Cut off a torn last line (no trailing newline) of the predictions and sessions
        files, so the next append starts a line of its own. Returns whether it cut."""
        return any([cut_torn_line(self.predictions_path), cut_torn_line(self.sessions_path)])

    def read_predictions(self) -> list[PredictionRecord]:
        """All whole records; a malformed or duplicated line is an error naming the line.

        A torn last line (a kill mid-write, or a record being written right now by the
        session that holds the lock) is not a record yet and is skipped.
        """
        p = self.predictions_path
        if not p.is_file():
            return []
        records, seen = [], set()
        with p.open(encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                if not line.endswith("\n") or not line.strip():
                    continue
                try:
                    rec = PredictionRecord.model_validate_json(line)
                except ValidationError as exc:
                    raise RunStoreError(
                        f"{p}:{lineno}: not a prediction record: {exc}; move the line out of "
                        "the file to check that example again"
                    ) from exc
                if rec.id in seen:
                    raise RunStoreError(f"{p}:{lineno}: example {rec.id!r} appears twice")
                seen.add(rec.id)
                records.append(rec)
        return records

    def append(self, record: PredictionRecord) -> None:
        """Append one record as a whole line, flushed and synced to disk."""
        append_line(self.predictions_path, record.model_dump_json())

    def rewrite_predictions(self, records: Iterable[PredictionRecord]) -> None:
        """Replace the predictions file atomically (used to drop records to redo)."""

        def write(f: IO[str]) -> None:
            for rec in records:
                f.write(rec.model_dump_json() + "\n")

        write_atomically(self.predictions_path, write, "predictions file")

    def append_many(self, records: Sequence[PredictionRecord]) -> None:
        """Append several records with one write and one sync (a group commit): a kill
        leaves whole lines and at most one torn last line, as `append` does."""
        if records:
            append_line(self.predictions_path, "\n".join(r.model_dump_json() for r in records))

    # ------------------------------------------------------------------ sessions
    @property
    def sessions_path(self) -> Path:
        return self.path / "sessions.jsonl"

    def start_session(self, **info: Any) -> str:
        """Record that a session starts now (with `info`, e.g. how its examples are run);
        returns its id (for `end_session`)."""
        return self.sessions.start(**info)

    def heartbeat(self, sid: str) -> None:
        """Refresh session `sid`'s sign of life (its wall time if it gets killed)."""
        self.sessions.beat(sid)

    def end_session(self, sid: str, *, status: str, wall_time_s: float, finished: int) -> None:
        """Record how session `sid` ended (``finished`` or ``interrupted``)."""
        self.sessions.end(sid, status=status, wall_time_s=wall_time_s, finished=finished)

    def read_sessions(self) -> list[dict[str, Any]]:
        """One dict per session (see `SessionLog.read`); killed ones are counted too."""
        return self.sessions.read()

    # ------------------------------------------------------------------ results
    def write_json(self, path: Path, data: Any) -> None:
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        write_atomically(path, lambda f: f.write(text), "run file")

    def read_json(self, path: Path) -> Any:
        if not path.is_file():
            raise RunStoreError(f"{path} does not exist; run `veracity eval` to finish the run")
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunStoreError(f"{path}: not valid JSON: {exc}") from exc
