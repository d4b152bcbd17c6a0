"""The evaluation runner: a method over a dataset, async, resumable, into a run directory.

`prepare_run` (see `veracity.evaluation.prepare`) resolves everything that can fail
before any example is checked. `execute` then checks the examples not yet in
``predictions.jsonl`` with at most `concurrency` in flight, appending one record per
finished example. `finalize` writes ``metrics.json`` and ``usage.json``.

A crash of the method on one example (an unexpected exception: a bug) is recorded in
that example's record with its traceback and the run goes on. Errors that concern the
whole run (a rejected API key, a missing model) stop it. Interrupting a run (Ctrl-C,
task cancellation) loses nothing already written: re-running the same command skips
the finished examples.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field

from veracity.core.errors import EvalError, RunStoreError
from veracity.core.labels import LabelSpace, get_label_space
from veracity.core.types import cost_text
from veracity.datasets.base import DatasetInfo, Example
from veracity.evaluation.document_metrics import with_document_metrics
from veracity.evaluation.document_task import DocumentTask
from veracity.evaluation.engines import (
    FATAL,
    Engine,
    Job,
    LocalEngine,
    WorkerSpec,
    iterate,
)
from veracity.evaluation.metrics import Metrics, compute_metrics
from veracity.evaluation.prepare import (
    PreparedRun,
    gold_mapper,
    map_gold,
    open_dataset,
    prepare_run,
    select_examples,
)
from veracity.evaluation.rundir import HEARTBEAT_S
from veracity.evaluation.store import PredictionRecord, RunStore
from veracity.evaluation.writer import RecordWriter
from veracity.retrieval.guards import EvalGuards

__all__ = [
    "FATAL",
    "EvalError",
    "PreparedRun",
    "RunningStats",
    "Session",
    "execute",
    "finalize",
    "gold_mapper",
    "holding",
    "map_gold",
    "open_dataset",
    "prepare_run",
    "run_session",
    "select_examples",
    "session",
]


# --------------------------------------------------------------------------- execution


@dataclass
class RunningStats:
    """Counts shown while a run goes (including records from earlier sessions)."""

    done: int = 0
    graded: int = 0  # records with a gold label (none in a batch run)
    correct: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    tokens: int = 0
    by_status: dict[str, int] = field(default_factory=dict)

    def add(self, rec: PredictionRecord) -> None:
        self.done += 1
        if rec.gold is not None:
            self.graded += 1
            self.correct += int(rec.correct)
        usage = rec.usage
        self.cost_usd += usage.cost_usd
        self.unpriced += usage.unpriced_llm_calls
        self.tokens += usage.total_tokens
        self.by_status[rec.status] = self.by_status.get(rec.status, 0) + 1

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.graded if self.graded else None

    def line(self, accuracy: bool = True) -> str:
        """One status line; `accuracy` False leaves the accuracy out (unlabelled inputs)."""
        parts = [f"{self.tokens:,} tok", cost_text(self.cost_usd, self.unpriced, currency="$")]
        if accuracy:
            acc = self.accuracy
            parts.insert(0, f"acc {acc:.3f}" if acc is not None else "acc –")
        bad = {k: v for k, v in self.by_status.items() if k != "ok" and v}
        parts += [f"{v} {k}" for k, v in sorted(bad.items())]
        return " · ".join(parts)


def guards_for(example: Example, info: DatasetInfo) -> EvalGuards:
    """The dataset's excluded domains plus any the example names (e.g. the site of its
    own fact-check article), and the example's date as the evidence cutoff."""
    own = example.metadata.get("exclude_domains") or ()
    domains = tuple(dict.fromkeys([*info.exclude_domains, *own]))
    return EvalGuards(before=example.input.cutoff, exclude_domains=domains)


def jobs_for(run: PreparedRun) -> list[Job]:
    """The examples not yet done, as jobs carrying their gold labels and guards."""
    return [Job(e.id, e.input, guards_for(e, run.info), *run.gold[e.id]) for e in run.todo]


async def execute(
    run: PreparedRun,
    concurrency: int | None = None,
    on_record: Callable[[PredictionRecord], None] | None = None,
    engine: Engine | None = None,
) -> int:
    """Check the examples not yet done, at most `concurrency` at a time (per worker).

    Each finished example is appended to ``predictions.jsonl`` (here, in this process,
    whatever the engine; in group commits, see `RecordWriter`) before it is reported.
    Cancellation or KeyboardInterrupt stops the workers; in-flight examples are not
    written and will be checked again on the next run. Returns how many examples this call finished.
    """
    k = concurrency or run.config.concurrency
    if k < 1:
        raise EvalError("--concurrency must be at least 1")
    run.store.acquire()  # no-op when prepare_run took it; repairs a torn last line
    run.store.write_record(run.config.model_dump(mode="json"), run.spec, run.prompts)
    finished = 0

    def saved(record: PredictionRecord) -> None:
        nonlocal finished
        finished += 1
        if on_record is not None:
            on_record(record)

    # a worker of another engine builds the document task over the run it builds itself
    over = run.method.recipe() if isinstance(run.method, DocumentTask) else None
    spec = WorkerSpec(run.config, run.caches, over)
    jobs = iterate(jobs_for(run))
    chosen = engine or LocalEngine()
    await RecordWriter(run.store, saved).run(
        lambda sink: chosen.run(spec, run.method, jobs, k, sink)
    )
    return finished


def finalize(store: RunStore, space: LabelSpace | None = None) -> Metrics:
    """Compute metrics over every record and write metrics.json and usage.json."""
    records = store.read_predictions()
    if not records:
        raise RunStoreError(f"{store.path}: no predictions yet")
    if space is None:
        space = get_label_space(store.read_config().get("labels") or "")
    metrics = with_document_metrics(store, records, compute_metrics(records, space))
    store.write_json(store.metrics_path, metrics.model_dump(mode="json"))
    sessions = store.read_sessions()
    usage = metrics.usage.model_dump(mode="json")
    usage["wall_time_s"] = round(sum(s.get("wall_time_s", 0.0) for s in sessions), 3)
    usage["sessions"] = len(sessions)
    store.write_json(store.usage_path, usage)
    return metrics


class Session:
    """One session on a run directory, as `session` yields it: count what it finishes."""

    def __init__(self) -> None:
        self.finished = 0

    def add(self, record: PredictionRecord) -> None:
        self.finished += 1


@contextlib.contextmanager
def holding(store: RunStore) -> Iterator[RunStore]:
    """The run directory's lock for the block: taken (repairing a torn last line) unless
    already held, given back at the end. Raises `RunLocked` while another session runs."""
    store.acquire()
    try:
        yield store
    finally:
        store.release()


@contextlib.asynccontextmanager
async def session(store: RunStore, engine: Engine | None = None) -> AsyncIterator[Session]:
    """A session on `store`, inside `holding` (`eval` and `batch` both run in one): its
    start is logged at once with the engine that runs it, its end also when interrupted,
    with a heartbeat meanwhile (so a killed session's wall time is known)."""
    started = time.perf_counter()
    current, status = Session(), "interrupted"
    store.acquire()  # a no-op inside `holding`
    sid = store.start_session(**(engine or LocalEngine()).describe())
    beating = asyncio.ensure_future(_heartbeat(store, sid))
    try:
        yield current
        status = "finished"
    finally:
        beating.cancel()
        wall = time.perf_counter() - started
        store.end_session(sid, status=status, wall_time_s=wall, finished=current.finished)


async def _heartbeat(store: RunStore, sid: str) -> None:
    """Refresh the session's sign of life, so a killed session's wall time is known."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        store.heartbeat(sid)


async def run_session(
    run: PreparedRun,
    concurrency: int | None = None,
    on_record: Callable[[PredictionRecord], None] | None = None,
    engine: Engine | None = None,
) -> Metrics:
    """`execute` (on `engine`, default local) in one `session`, then `finalize`, all while
    `holding` the run directory."""
    with holding(run.store):
        async with session(run.store, engine) as current:

            def counted(record: PredictionRecord) -> None:
                current.add(record)
                if on_record is not None:
                    on_record(record)

            await execute(run, concurrency, counted, engine)
        return finalize(run.store, run.space)
