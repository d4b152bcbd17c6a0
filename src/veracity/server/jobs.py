"""Running checks as jobs: a bounded queue, a concurrency limit, live event streams.

Each submitted check becomes a task that waits for one of `workers` slots (FIFO), so at
most `queue_size` checks wait and `workers` run. Its trace events reach the job as they
are recorded (`context.observe`), are written to the store and pushed to a
`context.EventStream` that any number of subscribers follow; a late subscriber replays
from the store or the stream, from any event id.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from veracity.core import context
from veracity.core.context import EventStream
from veracity.core.errors import InputError, StorageError
from veracity.core.types import TraceEvent
from veracity.documents import DocumentText
from veracity.runtime import Run
from veracity.runtime.service import Plan
from veracity.server.runs import RequestProblem, RunBuilder
from veracity.server.schemas import FINISHED, CheckRequest
from veracity.server.store import JobStore

log = logging.getLogger("veracity.server")

StreamItem = tuple[int, str, dict[str, Any]]  # (seq, "trace" | "status", body)
PREVIEW_CHARS = 200


class QueueFull(Exception):
    """No room in the queue; try again after `retry_after` seconds."""

    def __init__(self, retry_after: int):
        super().__init__(f"the queue is full; retry in {retry_after} s")
        self.retry_after = retry_after


@dataclass
class LiveJob:
    """A job this process is running or holding in its queue."""

    id: str
    plan: Plan  # the check: its run and input (a document's URL fetched when it starts)
    store: JobStore
    status: str = "queued"
    stream: EventStream[StreamItem] = field(default_factory=EventStream)
    task: asyncio.Task | None = None
    seq: int = 0

    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def run(self) -> Run:
        return self.plan.run

    @property
    def document(self) -> bool:
        """Whether the check is a document's (its result is the report)."""
        return self.plan.method is not None

    @property
    def text(self) -> DocumentText | None:
        """A document check's document, once read (or fetched)."""
        return self.plan.item if self.document else None  # type: ignore[return-value]

    def emit(self, kind: str, body: dict[str, Any]) -> None:
        """Persist one stream item, then publish it (events may come from any thread)."""
        with self.lock:
            self.seq += 1
            self.store.add_event(self.id, self.seq, kind, body)
            self.stream.push((self.seq, kind, body))

    def on_trace(self, event: TraceEvent) -> None:
        if self.stream.closed:
            # a task the method left running records after the job ended: the verdict
            # is already stored, so the event is logged, not streamed
            log.debug("job %s: late %s event from %s dropped", self.id, event.kind, event.name)
            return
        self.emit("trace", event.model_dump(mode="json"))

    def set_status(self, status: str, **extra: Any) -> None:
        self.status = status
        self.emit("status", {"status": status, **extra})


class JobManager:
    """Submits, runs, cancels and streams jobs.

    Args:
        store: where jobs, events and verdicts are kept.
        builder: turns requests into runs.
        workers: checks that run at once.
        queue_size: checks that may wait.
    """

    def __init__(self, store: JobStore, builder: RunBuilder, *, workers: int, queue_size: int):
        self.store = store
        self.builder = builder
        self.workers = workers
        self.queue_size = queue_size
        self.live: dict[str, LiveJob] = {}
        self._waiting: OrderedDict[str, None] = OrderedDict()
        self._slots: asyncio.Semaphore | None = None
        self._running = 0
        self._stopping = False
        self._durations: list[float] = []
        self.max_waiting = 0  # the deepest the queue has been (for load reports)

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> list[str]:
        """Prepare to run; mark jobs a previous process left unfinished as interrupted."""
        self._slots = asyncio.Semaphore(self.workers)
        ids = self.store.interrupt_unfinished()
        for job_id in ids:
            seq = self.store.last_seq(job_id) + 1
            body = {"status": "interrupted", "error": "the server stopped before the check ended"}
            self.store.add_event(job_id, seq, "status", body)
        return ids

    async def stop(self) -> None:
        """Cancel what is queued or running; those jobs end as interrupted."""
        self._stopping = True
        tasks = [j.task for j in self.live.values() if j.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    @property
    def queued(self) -> int:
        return len(self._waiting)

    @property
    def running(self) -> int:
        return self._running

    # ---------------------------------------------------------------- submit

    def submit(self, request: CheckRequest, *, rerun_of: str | None = None) -> LiveJob:
        """Queue a check.

        Raises:
            RequestProblem: the request cannot be built (422) or the server is stopping.
            QueueFull: `queue_size` checks are already waiting.
        """
        if self._slots is None or self._stopping:
            raise RequestProblem(503, "not accepting checks", "the server is starting or stopping")
        if len(self._waiting) >= self.queue_size:
            raise QueueFull(self.retry_after())
        job = self._prepare(request)
        item = job.plan.item  # None only for a document's URL, fetched when the job starts
        preview = _document_preview(request) if job.document else item.content  # type: ignore[union-attr]
        self.store.create(
            job.id,
            request.model_dump(mode="json", exclude_none=True),
            method=job.run.method.name,
            input_kind="document" if job.document else item.kind,  # type: ignore[union-attr]
            preview=preview[:PREVIEW_CHARS],
            rerun_of=rerun_of,
        )
        self.live[job.id] = job
        self._waiting[job.id] = None
        self.max_waiting = max(self.max_waiting, len(self._waiting))
        job.set_status("queued", position=len(self._waiting))
        job.task = asyncio.create_task(self._execute(job), name=f"veracity-job-{job.id}")
        return job

    def _prepare(self, request: CheckRequest) -> LiveJob:
        return LiveJob(id=uuid.uuid4().hex, plan=self.builder.build(request), store=self.store)

    def retry_after(self) -> int:
        """Seconds until a queue slot is likely free (from recent check durations)."""
        recent = self._durations[-20:]
        mean = sum(recent) / len(recent) if recent else 5.0
        return max(1, min(300, math.ceil(mean * max(1, self.queued) / self.workers)))

    def position(self, job_id: str) -> int | None:
        """1 for the next job to start; None when not waiting."""
        for i, key in enumerate(self._waiting):
            if key == job_id:
                return i + 1
        return None

    # ---------------------------------------------------------------- run

    async def _execute(self, job: LiveJob) -> None:
        assert self._slots is not None
        started: float | None = None
        try:
            async with self._slots:
                self._waiting.pop(job.id, None)
                self._running += 1
                started = time.perf_counter()
                try:
                    self.store.started(job.id)
                    job.set_status("running")
                    with context.observe(job.on_trace):
                        status, result, error = await self._work(job)
                finally:
                    self._running -= 1
            self._finish(job, status, verdict=result, error=error)
        except asyncio.CancelledError:
            status = "interrupted" if self._stopping else "cancelled"
            why = "the server stopped" if self._stopping else "cancelled on request"
            self._finish(job, status, error=why)
        except Exception as exc:  # the job fails; the server goes on
            log.exception("check %s failed", job.id)
            self._finish(job, "failed", error=f"{type(exc).__name__}: {exc}")
        finally:
            self._waiting.pop(job.id, None)
            if started is not None:
                self._durations = [*self._durations[-99:], time.perf_counter() - started]

    async def _work(self, job: LiveJob) -> tuple[str, dict[str, Any] | None, str | None]:
        """Run the job: (status, its result as JSON, the error)."""
        try:  # a URL is fetched here, through the service's guarded HTTP client
            await job.plan.read()
        except InputError as exc:
            return "failed", None, str(exc)
        verdict = await job.plan.check()
        if job.document:  # the document's report: what the web UI's view reads; a long
            report = verdict.report  # one is megabytes of JSON: built off the event loop
            return "done", await asyncio.to_thread(report.model_dump, mode="json"), None
        status = "failed" if verdict.error else "done"
        return status, verdict.model_dump(mode="json"), verdict.error

    def _finish(
        self,
        job: LiveJob,
        status: str,
        *,
        verdict: dict[str, Any] | None = None,
        error: str | None = None,
    ) -> None:
        extra: dict[str, Any] = {"error": error} if error else {}
        label, score = result_label(job, verdict)
        if verdict is not None:
            extra.update(label=label, score=score)
            failures = (verdict.get("metadata") or {}).get("search_failures")
            if failures:  # the status line can say that searches failed
                extra["search_failures"] = failures
        try:
            self.store.finish(
                job.id, status, verdict=verdict, error=error, label=label, score=score
            )
            job.set_status(status, **extra)
        except StorageError as exc:  # the end is lost, not the server: followers are let go
            log.error("check %s ended %s but could not be stored: %s", job.id, status, exc)
        finally:
            job.stream.close()
            self.live.pop(job.id, None)

    # ---------------------------------------------------------------- control

    def cancel(self, job_id: str) -> str:
        """Cancel a queued or running job; its status once the cancel lands.

        Raises:
            KeyError: no such job. RequestProblem: 409, the job has already finished.
        """
        job = self.live.get(job_id)
        if job is None:
            row = self.store.get(job_id)
            if row is None:
                raise KeyError(job_id)
            raise RequestProblem(409, "already finished", f"the job ended as {row.status}")
        if job.task is not None:
            job.task.cancel()
        return "cancelled"

    def rerun(self, job_id: str) -> LiveJob:
        """Submit a finished job's request again (e.g. after `interrupted`)."""
        row = self.store.get(job_id)
        if row is None:
            raise KeyError(job_id)
        if row.status not in FINISHED:
            raise RequestProblem(409, "still active", f"the job is {row.status}")
        return self.submit(CheckRequest.model_validate(row.request), rerun_of=job_id)

    async def follow(self, job_id: str, after: int = 0) -> AsyncIterator[StreamItem]:
        """The job's stream items with seq > `after`: stored ones, then live ones."""
        job = self.live.get(job_id)
        if job is None:  # a finished job: its stored events, parsed in a worker thread
            for item in await asyncio.to_thread(self.store.events, job_id, after):
                yield item
            return
        async for _, item in job.stream.follow(max(after, 0)):
            yield item


def _document_preview(request: CheckRequest) -> str:
    item = request.input
    return str(getattr(item, "title", None) or getattr(item, "text", None) or item.url or "")


def result_label(job: LiveJob, result: dict[str, Any] | None) -> tuple[str | None, float | None]:
    """The label and score the history shows: a verdict's own; for a document, its
    factuality as the report defines it (`veracity.documents.report`: claims supported by
    their label, over every check-worthy claim sent to the method, an abstention or a
    failed check counting as not supported), as ``S of N supported`` and the share."""
    if result is None:
        return None, None
    if not job.document:
        return result.get("label"), result.get("score")
    return document_line(result.get("summary") or {})


def document_line(summary: dict[str, Any]) -> tuple[str, float | None]:
    """``S of N supported`` and the factuality of a document report's `summary`: N counts
    the facts (checked, abstained and failed claims), so S / N is the factuality."""
    facts = sum(int(summary.get(k) or 0) for k in ("checked", "abstained", "errors"))
    supported = int(summary.get("supported") or 0)
    factuality = summary.get("factuality")
    if factuality is None and facts:
        factuality = supported / facts
    return f"{supported} of {facts} supported", factuality
