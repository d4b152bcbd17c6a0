"""`RayEngine`: the jobs of a run spread over worker processes of a Ray cluster.

Ray is an optional extra (``veracity[ray]``; `veracity.core.extras.install_command` says how
to add it to this installation); nothing here imports it
until an engine runs. The design keeps everything that must stay consistent in the
driver:

- **Workers** are Ray actors (`CheckWorker`). Each builds the run once, through the
  composition root (`veracity.runtime.build_run`), from the resolved config the driver
  sends: the model is loaded and the indexes opened once per process, not per example.
  A worker checks up to `concurrency` jobs at once (an async actor).
- **Results** come back to the driver as each job finishes; the driver alone writes
  the run store (through the caller's sink), so resume and repair work unchanged.
- **Limits**: each worker's model keeps its own limit on LLM calls in flight
  (``llm.max_concurrency``); `RayOptions.llm_limit` adds a global one across all
  workers, held by one small actor (`LLMSlots`) that live calls take a slot from
  (cached replies take none).
- **Faults**: a worker that dies (killed, out of memory, its node lost) fails its
  in-flight jobs with `RayActorError`; the driver starts a replacement and gives those
  jobs to the pool again, up to `RayOptions.max_attempts` tries per job, after which
  the job is recorded as an ``exception`` record (retry it with ``--retry-errors``).
  Errors that concern the whole run (a rejected API key) stop the run, as locally.
- **Caches**: workers open the run's LLM and HTTP caches (SQLite in WAL mode) at the
  paths the driver gives, so every worker must reach the run directory (see docs/batch.md,
  "On a Ray cluster").
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.bounds import MAX_CONCURRENCY, Attempts, Concurrency
from veracity.core.errors import EngineError
from veracity.core.extras import install_command
from veracity.evaluation.engines import FATAL, Job, Sink, WorkerSpec, check_job
from veracity.evaluation.ray_slots import LLMSlots, SlotLimit
from veracity.evaluation.store import PredictionRecord, input_summary
from veracity.llm.base import LLM
from veracity.runtime import CachePaths


class RayOptions(BaseModel):
    """How a run uses a Ray cluster.

    Attributes:
        address: the cluster to join (``auto``, ``ray://host:10001``, ``host:6379``);
            None starts a local cluster for the run and stops it afterwards.
        workers: worker processes (each builds the run once).
        worker_cpus: CPUs Ray reserves for each worker.
        local_cpus: CPUs of a local cluster this engine starts (None: all).
        llm_limit: most live LLM calls in flight across all workers (None: only each
            worker's own ``llm.max_concurrency``).
        max_attempts: tries per job when the worker checking it dies.
    """

    model_config = ConfigDict(extra="forbid")

    address: str | None = None
    workers: Concurrency = Field(default=2, ge=1)
    worker_cpus: float = Field(default=1.0, gt=0, le=MAX_CONCURRENCY)
    local_cpus: Concurrency | None = Field(default=None, ge=1)
    llm_limit: Concurrency | None = Field(default=None, ge=1)
    max_attempts: Attempts = Field(default=3, ge=1)


def require_ray() -> Any:
    """The `ray` module, or an `EngineError` saying how to install it."""
    try:
        import ray
    except ImportError:
        hint = install_command("ray")
        raise EngineError(f"--engine ray needs Ray, the optional extra `ray`: {hint}") from None
    return ray


# --------------------------------------------------------------------------- actors


class CheckWorker:
    """One worker process: builds the run once, then checks the jobs it is given."""

    def __init__(
        self, spec: WorkerSpec, backend: Callable[[], LLM] | None, slots: Any | None
    ) -> None:
        import ray

        from veracity.runtime.service import Veracity

        started = time.perf_counter()
        holder = ray.get_runtime_context().get_actor_id()
        limit = SlotLimit(slots, holder) if slots is not None else None
        inner = backend() if backend is not None else None
        service = Veracity(spec.config, caches=spec.caches, backend=inner, shared_limit=limit)
        self.run = service.run()
        # the method over the run: a document's composite, the document task, or its own
        self.method = spec.over(self.run) if spec.over is not None else self.run.method
        self.space = self.method.label_space
        self.built_s = time.perf_counter() - started

    async def ready(self) -> dict[str, Any]:
        """Where the worker runs and how long building the run took."""
        return {"pid": os.getpid(), "built_s": round(self.built_s, 3)}

    async def check(self, job: Job) -> PredictionRecord:
        return await check_job(self.method, self.space, job)


# --------------------------------------------------------------------------- driver


class RayEngine:
    """Checks jobs on Ray worker processes; results stream back to the driver.

    Args:
        options: cluster address, workers, limits (see `RayOptions`).
        backend: builds the LLM backend inside each worker instead of the configured
            one (tests and benchmarks; it must be picklable, e.g. a module-level
            function or class).
    """

    def __init__(
        self, options: RayOptions | None = None, *, backend: Callable[[], LLM] | None = None
    ):
        self.options = options or RayOptions()
        self.backend = backend
        self.workers_started = 0  # over the last run, replacements included
        self.startup_s = 0.0  # the last run's wait for its workers to build the run
        self.llm_slots: dict[str, int] | None = None  # the global limit's stats after a run
        self._pool: _Pool | None = None

    def describe(self) -> dict[str, object]:
        opts = self.options
        return {"engine": "ray", "address": opts.address or "local cluster",
                "workers": opts.workers, "llm_limit": opts.llm_limit}  # fmt: skip

    def workers(self) -> dict[Any, int]:
        """The live worker actors of the run in progress and their jobs in flight (safe to
        call from another thread: a copy taken while the driver changes it is retried)."""
        while True:
            pool = self._pool
            try:
                return dict(pool.load) if pool is not None else {}
            except RuntimeError:  # changed size while being copied
                continue

    async def run(
        self,
        spec: WorkerSpec,
        method: object,
        jobs: AsyncIterator[Job],
        concurrency: int,
        sink: Sink,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        ray = require_ray()
        started_here = self._connect(ray)
        pool = None
        try:
            self._check_fits(ray)
            spec = _absolute(spec)  # workers may start in another directory
            pool = self._pool = _Pool(ray, spec, self.backend, self.options, concurrency)
            began = time.perf_counter()
            await pool.start()
            self.startup_s = time.perf_counter() - began
            await _Dispatch(ray, pool, self.options.max_attempts, sink).run(jobs)
        finally:
            if pool is not None:
                self.llm_slots = pool.close()
                self.workers_started = pool.started
                self._pool = None
            if started_here:
                ray.shutdown()

    def _connect(self, ray: Any) -> bool:
        """Join the configured cluster or start a local one; True when started here."""
        if ray.is_initialized():
            return False
        opts = self.options
        # worker output stays in Ray's logs: the driver's stdout may carry results
        if opts.address is None:
            ray.init(num_cpus=opts.local_cpus, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=opts.address, log_to_driver=False)
        return True

    def _check_fits(self, ray: Any) -> None:
        cpus = ray.cluster_resources().get("CPU", 0)
        want = self.options.workers * self.options.worker_cpus
        if want > cpus:
            raise EngineError(
                f"{self.options.workers} workers of {self.options.worker_cpus:g} CPU each need "
                f"{want:g} CPUs; the Ray cluster has {cpus:g}. Use fewer --workers, or add nodes"
            )


class _Pool:
    """The worker actors, their load, and their replacements."""

    def __init__(
        self,
        ray: Any,
        spec: WorkerSpec,
        backend: Callable[[], LLM] | None,
        options: RayOptions,
        concurrency: int,
    ):
        self.ray = ray
        self.spec = spec
        self.backend = backend
        self.options = options
        self.capacity = concurrency
        self.slots = None
        if options.llm_limit is not None:
            slots_cls = ray.remote(num_cpus=0, max_concurrency=100_000)(LLMSlots)
            self.slots = slots_cls.remote(options.llm_limit)
        self._worker_cls = ray.remote(CheckWorker)
        self.load: dict[Any, int] = {}
        self.started = 0
        self.max_started = options.workers * (options.max_attempts + 1)

    def spawn(self) -> Any:
        if self.started >= self.max_started:
            raise EngineError(
                f"{self.started} Ray workers started and they keep dying; see the worker "
                "logs under Ray's session directory (/tmp/ray/session_latest/logs)"
            )
        actor = self._worker_cls.options(
            num_cpus=self.options.worker_cpus, max_concurrency=self.capacity
        ).remote(self.spec, self.backend, self.slots)
        self.started += 1
        self.load[actor] = 0
        return actor

    async def start(self) -> None:
        """Start the workers and wait until each has built its run."""
        actors = [self.spawn() for _ in range(self.options.workers)]
        try:
            await asyncio.gather(*(asyncio.wrap_future(a.ready.remote().future()) for a in actors))
        except self.ray.exceptions.RayActorError as exc:
            raise EngineError(f"a Ray worker could not build the run: {exc}") from None

    def pick(self) -> Any | None:
        """The least loaded worker with room for another job, or None."""
        actor = min(self.load, key=self.load.__getitem__, default=None)
        return actor if actor is not None and self.load[actor] < self.capacity else None

    def replace(self, dead: Any) -> None:
        """Drop a dead worker (giving back its LLM slots) and start another."""
        if dead not in self.load:
            return  # already replaced (it had several jobs in flight)
        del self.load[dead]
        with contextlib.suppress(Exception):  # merely unreachable: make sure it is gone
            self.ray.kill(dead)
        if self.slots is not None:
            self.slots.forget.remote(dead._actor_id.hex())
        self.spawn()

    def close(self) -> dict[str, int] | None:
        """Stop the workers; returns the global limit's stats, if there is one."""
        stats = None
        if self.slots is not None:
            try:
                stats = self.ray.get(self.slots.stats.remote(), timeout=10)
            except Exception:  # stats are informative only; the slots actor may be gone
                stats = None
        for actor in [*self.load, *([self.slots] if self.slots is not None else [])]:
            self.ray.kill(actor)
        self.load.clear()
        return stats


class _Dispatch:
    """The driver's loop: hand out jobs as workers have room, collect results."""

    def __init__(self, ray: Any, pool: _Pool, max_attempts: int, sink: Sink):
        self.ray = ray
        self.pool = pool
        self.max_attempts = max_attempts
        self.sink = sink
        self.inflight: dict[asyncio.Future, tuple[Job, Any, Any]] = {}
        self.retry: deque[Job] = deque()
        self.attempts: Counter[str] = Counter()
        self.done: set[str] = set()

    async def run(self, jobs: AsyncIterator[Job]) -> None:
        fetch: asyncio.Future | None = None
        exhausted = False
        try:
            while True:
                self._submit_retries()
                if fetch is None and not exhausted and self.pool.pick() is not None:
                    fetch = asyncio.ensure_future(anext(jobs, None))
                waiting = set(self.inflight) | ({fetch} if fetch is not None else set())
                if not waiting:
                    return
                finished, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
                for fut in finished:
                    if fut is fetch:
                        fetch, job = None, fut.result()
                        if job is None:
                            exhausted = True
                        else:
                            self.retry.appendleft(job)  # next in line
                    else:
                        self._collect(fut)
        finally:
            if fetch is not None:
                fetch.cancel()
            for _, _, ref in self.inflight.values():
                self.ray.cancel(ref)

    def _submit_retries(self) -> None:
        while self.retry and (actor := self.pool.pick()) is not None:
            job = self.retry.popleft()
            ref = actor.check.remote(job)
            self.pool.load[actor] += 1
            self.inflight[asyncio.wrap_future(ref.future())] = (job, actor, ref)

    def _collect(self, fut: asyncio.Future) -> None:
        job, actor, _ = self.inflight.pop(fut)
        if actor in self.pool.load:
            self.pool.load[actor] -= 1
        exceptions = self.ray.exceptions
        try:
            record = fut.result()
        except exceptions.RayActorError as exc:
            self.pool.replace(actor)
            self._retry_or_record(job, exc)
            return
        except exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, FATAL):
                raise cause from None
            record = _crash_record(job, f"the worker task failed: {exc}")
        if job.id not in self.done:  # a job is written once, whatever happened
            self.done.add(job.id)
            self.sink(record)

    def _retry_or_record(self, job: Job, exc: BaseException) -> None:
        self.attempts[job.id] += 1
        if self.attempts[job.id] < self.max_attempts:
            self.retry.append(job)
            return
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        self.done.add(job.id)
        self.sink(
            _crash_record(
                job, f"the worker checking this example died {self.attempts[job.id]} times: {why}"
            )
        )


def _absolute(spec: WorkerSpec) -> WorkerSpec:
    """`spec` with its cache paths made absolute (relative to this process's directory)."""
    if spec.caches is None:
        return spec
    llm, http = spec.caches.llm, spec.caches.http
    caches = CachePaths(
        llm=llm.resolve() if llm is not None else None,
        http=http.resolve() if http is not None else None,
    )
    return dataclasses.replace(spec, caches=caches)


def _crash_record(job: Job, message: str) -> PredictionRecord:
    return PredictionRecord(
        id=job.id,
        gold=job.gold,
        gold_original=job.gold_original,
        input=input_summary(job.input),
        predicted=None,
        status="exception",
        exception=message,
    )


__all__ = ["CheckWorker", "LLMSlots", "RayEngine", "RayOptions", "SlotLimit", "require_ray"]
