"""Engines: how the examples of a run are spread over workers.

`eval` and `batch` describe their work as `Job`s (an id, the input, its retrieval guards
and, in an evaluation, the gold label) and hand them to an engine together with a
`sink`. The engine checks the jobs and calls the sink once per finished job, always in
the driver process, so the caller alone writes the run store (and its resume and
repair work the same whatever the engine).

- `LocalEngine` (the default): asyncio workers in this process, sharing the run's
  method; at most `concurrency` jobs in flight.
- `veracity.evaluation.ray_engine.RayEngine` (``--engine ray``, the optional extra
  ``veracity[ray]``): worker processes on a Ray cluster, each building the run once.

`check_job` is what a worker does with one job, in either engine.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from veracity.core.errors import LLMAuthError, ModelNotAvailable, SourceAuthError, StorageError
from veracity.core.labels import LabelSpace
from veracity.core.types import CheckInput, Verdict
from veracity.evaluation.store import PredictionRecord, input_summary
from veracity.retrieval.guards import EvalGuards, eval_guards
from veracity.runtime import CachePaths

# Errors that concern the whole run, not one example: they stop the run.
# a run stops on these: every later example would meet them too (a storage fault: a
# damaged cache, a full disk, a read-only folder)
FATAL: tuple[type[BaseException], ...] = (
    LLMAuthError,
    ModelNotAvailable,
    SourceAuthError,
    StorageError,
)

Sink = Callable[[PredictionRecord], None]


@dataclass(frozen=True)
class Job:
    """One input to check.

    Attributes:
        id: unique within the run (the run store skips ids it holds).
        input: the claim, article or post.
        guards: retrieval restrictions while it is checked (None: none).
        gold: the gold label in the method's label space (evaluations only).
        gold_original: the gold label as the dataset gives it.
    """

    id: str
    input: CheckInput
    guards: EvalGuards | None = None
    gold: str | None = None
    gold_original: str | None = None


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker process needs to build the run itself (see `runtime.build_run`).

    Attributes:
        config: the resolved run config (label space filled in).
        caches: the run's LLM and HTTP caches; None: the user-level caches.
        over: how a worker builds the method it checks with over the run it built (None:
            the run's method): the composite that checks documents, or the evaluation's
            document task; picklable (a `functools.partial` of a module-level function).
    """

    config: object  # a veracity.core.config.RunConfig (kept loose: it only travels)
    caches: CachePaths | None = None
    over: Callable[[Any], Any] | None = None


class Engine(Protocol):
    """Checks jobs and reports each finished one to `sink` in the calling process."""

    async def run(
        self,
        spec: WorkerSpec,
        method: object,
        jobs: AsyncIterator[Job],
        concurrency: int,
        sink: Sink,
    ) -> None:
        """Check every job of `jobs`.

        Args:
            spec: how a worker process builds the run (engines with workers of their own).
            method: the run's method as built in this process (the local engine uses it).
            jobs: the jobs, possibly arriving over time (a stream on standard input).
            concurrency: jobs checked at once per worker process.
            sink: called once per finished job, in this process.
        """
        ...

    def describe(self) -> dict[str, object]:
        """How jobs are run (``{"engine": "local"}`` ...), for the run's session log."""
        ...


async def check_job(method, space: LabelSpace, job: Job) -> PredictionRecord:
    """Check one job; a crash becomes an ``exception`` record, FATAL errors propagate."""
    started = time.perf_counter()
    try:
        with eval_guards(job.guards or EvalGuards()):
            verdict = await method.check(job.input)
        if not isinstance(verdict, Verdict):
            raise TypeError(f"check() returned a {type(verdict).__name__}, not a Verdict")
        if verdict.label is not None:
            verdict.label = space.parse(verdict.label)
    except FATAL:
        raise
    except Exception:
        return PredictionRecord(
            id=job.id,
            gold=job.gold,
            gold_original=job.gold_original,
            input=input_summary(job.input),
            predicted=None,
            status="exception",
            latency_s=round(time.perf_counter() - started, 4),
            exception=traceback.format_exc(),
        )
    return PredictionRecord.from_verdict(
        job.id, job.gold, job.gold_original, verdict, time.perf_counter() - started,
        input=input_summary(job.input),
    )  # fmt: skip


async def iterate(items: Iterable[Job]) -> AsyncIterator[Job]:
    """Jobs from a list (or any iterable that never blocks) as an async iterator."""
    for item in items:
        yield item


class LocalEngine:
    """Asyncio workers in this process sharing one method (the default engine)."""

    def describe(self) -> dict[str, object]:
        return {"engine": "local"}

    async def run(
        self,
        spec: WorkerSpec,
        method,
        jobs: AsyncIterator[Job],
        concurrency: int,
        sink: Sink,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        space = method.label_space
        lock = asyncio.Lock()  # workers share one iterator: each job is taken once

        async def take() -> Job | None:
            async with lock:
                return await anext(jobs, None)

        async def worker() -> None:
            while (job := await take()) is not None:
                sink(await check_job(method, space, job))

        workers = [asyncio.ensure_future(worker()) for _ in range(concurrency)]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)


__all__ = [
    "FATAL",
    "Engine",
    "Job",
    "LocalEngine",
    "Sink",
    "WorkerSpec",
    "check_job",
    "iterate",
]
