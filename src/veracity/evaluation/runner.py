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
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from veracity.datasets.base import DatasetInfo, Example
from veracity.errors import (
    EvalError,
    LLMAuthError,
    ModelNotAvailable,
    RunStoreError,
    SourceAuthError,
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
from veracity.labels import LabelSpace, get_label_space
from veracity.retrieval.guards import EvalGuards, eval_guards
from veracity.types import Verdict, cost_text

# Errors that concern the whole run, not one example: they stop the run.
FATAL: tuple[type[BaseException], ...] = (LLMAuthError, ModelNotAvailable, SourceAuthError)

__all__ = [
    "FATAL",
    "EvalError",
    "PreparedRun",
    "RunningStats",
    "check_one",
    "execute",
    "finalize",
    "gold_mapper",
    "map_gold",
    "open_dataset",
    "prepare_run",
    "run_session",
    "select_examples",
]


# --------------------------------------------------------------------------- execution


@dataclass
class RunningStats:
    """Counts shown while a run goes (including records from earlier sessions)."""

    done: int = 0
    correct: int = 0
    cost_usd: float = 0.0
    unpriced: int = 0
    tokens: int = 0
    by_status: dict[str, int] = field(default_factory=dict)

    def add(self, rec: PredictionRecord) -> None:
        self.done += 1
        self.correct += int(rec.correct)
        usage = rec.usage
        self.cost_usd += usage.cost_usd
        self.unpriced += usage.unpriced_llm_calls
        self.tokens += usage.total_tokens
        self.by_status[rec.status] = self.by_status.get(rec.status, 0) + 1

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.done if self.done else None

    def line(self) -> str:
        acc = f"acc {self.accuracy:.3f}" if self.done else "acc –"
        parts = [acc, f"{self.tokens:,} tok", cost_text(self.cost_usd, self.unpriced, currency="$")]
        bad = {k: v for k, v in self.by_status.items() if k != "ok" and v}
        parts += [f"{v} {k}" for k, v in sorted(bad.items())]
        return " · ".join(parts)


def guards_for(example: Example, info: DatasetInfo) -> EvalGuards:
    """The dataset's excluded domains plus any the example names (e.g. the site of its
    own fact-check article), and the example's date as the evidence cutoff."""
    own = example.metadata.get("exclude_domains") or ()
    domains = tuple(dict.fromkeys([*info.exclude_domains, *own]))
    return EvalGuards(before=example.input.cutoff, exclude_domains=domains)


async def check_one(run: PreparedRun, example: Example) -> PredictionRecord:
    """Check one example; a crash becomes an ``exception`` record, FATAL errors propagate."""
    gold, original = run.gold[example.id]
    started = time.perf_counter()
    try:
        with eval_guards(guards_for(example, run.info)):
            verdict = await run.method.check(example.input)
        if not isinstance(verdict, Verdict):
            raise TypeError(f"check() returned a {type(verdict).__name__}, not a Verdict")
        if verdict.label is not None:
            verdict.label = run.space.parse(verdict.label)
    except FATAL:
        raise
    except Exception:
        return PredictionRecord(
            id=example.id,
            gold=gold,
            gold_original=original,
            predicted=None,
            status="exception",
            latency_s=round(time.perf_counter() - started, 4),
            exception=traceback.format_exc(),
        )
    return PredictionRecord.from_verdict(
        example.id, gold, original, verdict, time.perf_counter() - started
    )


async def execute(
    run: PreparedRun,
    concurrency: int | None = None,
    on_record: Callable[[PredictionRecord], None] | None = None,
) -> int:
    """Check the examples not yet done, at most `concurrency` at a time.

    Each finished example is appended to ``predictions.jsonl`` before the next one is
    taken. Cancellation or KeyboardInterrupt stops the workers; in-flight examples are
    not written and will be checked again on the next run. Returns how many examples
    this call finished.
    """
    k = concurrency or run.config.concurrency
    if k < 1:
        raise EvalError("--concurrency must be at least 1")
    run.store.acquire()  # no-op when prepare_run took it; repairs a torn last line
    run.store.write_config(run.config.model_dump(mode="json"))
    run.store.write_prompts(run.prompts)
    todo = iter(run.todo)
    finished = 0

    async def worker() -> None:
        nonlocal finished
        for example in todo:  # workers share one iterator: each example is taken once
            record = await check_one(run, example)
            run.store.append(record)
            finished += 1
            if on_record is not None:
                on_record(record)

    workers = [asyncio.ensure_future(worker()) for _ in range(k)]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return finished


def finalize(store: RunStore, space: LabelSpace | None = None) -> Metrics:
    """Compute metrics over every record and write metrics.json and usage.json."""
    records = store.read_predictions()
    if not records:
        raise RunStoreError(f"{store.path}: no predictions yet")
    if space is None:
        space = get_label_space(store.read_config().get("labels") or "")
    metrics = compute_metrics(records, space)
    store.write_json(store.metrics_path, metrics.model_dump(mode="json"))
    sessions = store.read_sessions()
    usage = metrics.usage.model_dump(mode="json")
    usage["wall_time_s"] = round(sum(s.get("wall_time_s", 0.0) for s in sessions), 3)
    usage["sessions"] = len(sessions)
    store.write_json(store.usage_path, usage)
    return metrics


async def run_session(
    run: PreparedRun,
    concurrency: int | None = None,
    on_record: Callable[[PredictionRecord], None] | None = None,
) -> Metrics:
    """`execute` then `finalize`, logging the session (its start at once, its end also when
    interrupted), under the run directory's lock, which is given back at the end."""
    started = time.perf_counter()
    finished, status = 0, "interrupted"

    def counted(record: PredictionRecord) -> None:
        nonlocal finished
        finished += 1
        if on_record is not None:
            on_record(record)

    try:
        run.store.acquire()
        sid = run.store.start_session()
        beating = asyncio.ensure_future(_heartbeat(run.store, sid))
        try:
            await execute(run, concurrency, counted)
            status = "finished"
        finally:
            beating.cancel()
            wall = time.perf_counter() - started
            run.store.end_session(sid, status=status, wall_time_s=wall, finished=finished)
        return finalize(run.store, run.space)
    finally:
        run.store.release()


async def _heartbeat(store: RunStore, sid: str) -> None:
    """Refresh the session's sign of life, so a killed session's wall time is known."""
    while True:
        await asyncio.sleep(HEARTBEAT_S)
        store.heartbeat(sid)
