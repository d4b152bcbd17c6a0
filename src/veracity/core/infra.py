"""Bottom-layer primitives shared by the LLM layer, the HTTP client, sources, the evidence
memory and the run store: cache modes, the retry policy and loop, per-event-loop
semaphores, SQLite connections in WAL mode, crash-safe line appends, and the machine's
usable cores.

This module imports only `veracity.core.errors` and `veracity.core.storage`, so every layer
may use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import random
import sqlite3
import time
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import tenacity

from veracity.core.errors import StorageError
from veracity.core.storage import StoreConnection, StoreHealth, move_aside, storage_error

T = TypeVar("T")
_log = logging.getLogger("veracity.core.storage")

CacheMode = Literal["off", "auto", "record", "replay"]
"""How a cache is used: ``off`` nothing; ``auto`` deterministic requests read and written;
``record`` everything written (sampled replies per occurrence); ``replay`` read only, a
miss is an error."""

CACHE_MODES: tuple[str, ...] = ("off", "auto", "record", "replay")


def available_cpus() -> int:
    """CPU cores this process may run on (its affinity mask, else the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_concurrency() -> int:
    """Examples checked at once when a run does not say: the core count, 2 to 8.

    On a 2-core machine 4 examples at once ran no faster than 1 (the model is the
    bottleneck) while deepening contention; see docs/performance.md.
    """
    return min(8, max(2, available_cpus()))


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff with full jitter, honouring a server's Retry-After.

    Attributes:
        max_attempts: tries in all (1: no retry).
        base_delay_s: the first backoff cap; it doubles with each attempt.
        max_delay_s: no wait is longer than this, Retry-After included.
    """

    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before try `attempt + 1` (`attempt` counts from 0)."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay_s)
        cap = min(self.max_delay_s, self.base_delay_s * (2**attempt))
        return random.uniform(0, cap)


async def retrying(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    retry_on: tuple[type[BaseException], ...],
    on_retry: Callable[[BaseException, int, float], None] | None = None,
    on_give_up: Callable[[BaseException, int], None] | None = None,
    retry_after: Callable[[BaseException], float | None] = lambda exc: None,
    give_up_if: Callable[[BaseException], bool] = lambda exc: False,
) -> T:
    """Await `call()` until it succeeds, retrying the `retry_on` faults per `policy`
    (the loop is tenacity's; the waits are `RetryPolicy.delay`'s).

    Args:
        call: makes one attempt.
        policy: how often and how long to wait.
        retry_on: the exception types that are retried; others propagate at once.
        on_retry: told (fault, attempts so far, delay) before each wait — for traces/logs.
        on_give_up: told (fault, attempts) when the last attempt failed; the fault is
            then raised.
        retry_after: a server-requested delay carried by the fault, if any.
        give_up_if: faults that are not worth another try although of a retried type.
    """

    def fault(state: tenacity.RetryCallState) -> BaseException:
        assert state.outcome is not None
        return state.outcome.exception()

    def stop(state: tenacity.RetryCallState) -> bool:
        return state.attempt_number >= policy.max_attempts or give_up_if(fault(state))

    def wait(state: tenacity.RetryCallState) -> float:
        return policy.delay(state.attempt_number - 1, retry_after(fault(state)))

    def before_sleep(state: tenacity.RetryCallState) -> None:
        if on_retry is not None and state.next_action is not None:
            on_retry(fault(state), state.attempt_number, state.next_action.sleep)

    def gave_up(state: tenacity.RetryCallState) -> T:
        if on_give_up is not None:
            on_give_up(fault(state), state.attempt_number)
        assert state.outcome is not None
        return state.outcome.result()  # raises the last fault itself

    retry = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception_type(retry_on),
        stop=stop,
        wait=wait,
        before_sleep=before_sleep,
        retry_error_callback=gave_up,
        sleep=asyncio.sleep,
    )

    async def attempt() -> T:  # `call` may be a lambda returning an awaitable
        return await call()

    return await retry(attempt)


class LoopSemaphore:
    """A concurrency limit usable from several event loops.

    An `asyncio.Semaphore` binds to the loop it first waits on; a process that runs
    checks in several loops (threads, repeated `asyncio.run`) gets one per loop.
    """

    def __init__(self, limit: int | None):
        if limit is not None and limit < 1:
            raise ValueError("a concurrency limit must be at least 1")
        self.limit = limit
        self._by_loop: dict[int, asyncio.Semaphore] = {}

    def get(self) -> asyncio.Semaphore | None:
        """This loop's semaphore (None when unlimited)."""
        if self.limit is None:
            return None
        loop_id = id(asyncio.get_running_loop())
        sem = self._by_loop.get(loop_id)
        if sem is None:
            sem = self._by_loop[loop_id] = asyncio.Semaphore(self.limit)
        return sem

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        """Await `call()` inside the limit."""
        sem = self.get()
        if sem is None:
            return await call()
        async with sem:
            return await call()


class _NoWaitExecutor(ThreadPoolExecutor):
    """A default executor whose shutdown drops queued calls and does not wait for running ones."""

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        super().shutdown(wait=False, cancel_futures=True)


def run_interruptible(main: Coroutine[object, object, T]) -> T:
    """`asyncio.run` for a command that Ctrl-C must stop at once.

    On Ctrl-C `asyncio.run` cancels the tasks and then waits for every blocking call still
    running in a worker thread (an embedded model's generation can take a minute on a
    busy machine) before `KeyboardInterrupt` reaches the caller. Here the loop's default
    executor does not wait, so the caller gets `KeyboardInterrupt` as soon as the tasks
    have unwound (their ``finally`` blocks ran). Their threads still run: a program that
    then ends should leave with `os._exit`, which does not join them.
    """
    with asyncio.Runner() as runner:
        runner.get_loop().set_default_executor(_NoWaitExecutor(thread_name_prefix="veracity"))
        return runner.run(main)


def open_sqlite(
    path: str | Path,
    schema: str = "",
    *,
    autocommit: bool = False,
    timeout_s: float = 30.0,
    what: str = "SQLite database",
    rebuild: bool = False,
) -> sqlite3.Connection:
    """A thread-shareable SQLite connection in WAL mode with `schema` applied.

    WAL lets readers and one writer work at once and stays crash-safe with
    ``synchronous=NORMAL``. It needs a local file system: SQLite's locking is not
    reliable on network file systems (NFS, SMB), so put these files on local disk.

    Storage faults, when opening and on every later statement, raise a `StorageError`
    that names the file and the fix (`veracity.core.storage`): a damaged file, a read-only
    folder, a full disk, a failing device. `health` on the connection remembers the last.

    Args:
        path: the database file (its folder is created).
        schema: SQL script run once (``CREATE TABLE IF NOT EXISTS ...``).
        autocommit: no implicit transactions (callers issue BEGIN/COMMIT themselves).
        timeout_s: how long a statement waits for another writer's lock.
        what: what the file is, in words, for messages ("LLM cache", "job database").
        rebuild: the file is a cache: when it is damaged or not a database, move it aside
            (``NAME.corrupt-<time>``, with a warning saying so) and start a new one.

    Raises:
        StorageError: the file cannot be opened or written (after a rebuild, if allowed).
    """
    p = Path(path)
    try:
        return _open_store(p, schema, autocommit, timeout_s, what)
    except StorageError as exc:
        if not rebuild or exc.kind != "corrupt":
            raise
        if _readable(p):  # another process rebuilt it meanwhile
            return _open_store(p, schema, autocommit, timeout_s, what)
        moved = move_aside(p)
        _log.warning(
            "the %s %s was damaged or not a SQLite database; it was moved aside to %s and "
            "a new one is started in its place",
            what,
            p,
            moved,
        )
    return _open_store(p, schema, autocommit, timeout_s, what)


def _open_store(
    p: Path, schema: str, autocommit: bool, timeout_s: float, what: str
) -> sqlite3.Connection:
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(
            p,
            check_same_thread=False,
            timeout=timeout_s,
            isolation_level=None if autocommit else "",
            factory=StoreConnection,
        )
    except (OSError, sqlite3.Error) as exc:
        if (fault := storage_error(exc, p, what)) is None:
            raise
        raise fault from exc
    assert isinstance(conn, StoreConnection)
    conn.store_path, conn.store_what, conn.health = p, what, StoreHealth(p)
    try:
        _enable_wal(conn, timeout_s)
        conn.execute("PRAGMA synchronous=NORMAL")
        if schema:
            conn.executescript(schema)
            if not autocommit:
                conn.commit()
    except BaseException:
        conn.close()
        raise
    return conn


def _readable(p: Path) -> bool:
    """The file at `p` is now a readable database (someone replaced the damaged one)."""
    try:
        with contextlib.closing(sqlite3.connect(p, timeout=5)) as probe:
            probe.execute("PRAGMA schema_version").fetchone()
        return True
    except sqlite3.Error:
        return False


def _enable_wal(conn: sqlite3.Connection, timeout_s: float) -> None:
    """Switch to WAL, retrying while another process holds the lock.

    Switching the journal mode takes an exclusive lock and SQLite may refuse it at once
    ("database is locked") instead of calling the busy handler, e.g. when several worker
    processes open a new database together; so wait and try again up to `timeout_s`.
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)


def append_line(path: Path, line: str, what: str = "run file") -> None:
    """Append `line` and a newline with one write, synced to disk.

    A write the disk could hold only part of is taken back (the file keeps whole lines).

    Raises:
        StorageError: the disk is full, the folder read-only, or the device failing.
    """
    data = (line + "\n").encode("utf-8")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            start = os.fstat(fd).st_size
            if os.write(fd, data) < len(data):  # one write: a whole line or a torn one
                os.ftruncate(fd, start)
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        if (fault := storage_error(exc, path, what)) is None:
            raise
        raise fault from exc


def cut_torn_line(path: Path, chunk: int = 1 << 16) -> bool:
    """Truncate `path` after its last newline; returns whether there was a torn line."""
    if not path.is_file() or path.stat().st_size == 0:
        return False
    with path.open("rb+") as f:
        end = f.seek(0, os.SEEK_END)
        f.seek(end - 1)
        if f.read(1) == b"\n":
            return False
        pos = end
        while pos > 0:
            start = max(0, pos - chunk)
            f.seek(start)
            found = f.read(pos - start).rfind(b"\n")
            if found != -1:
                f.truncate(start + found + 1)
                return True
            pos = start
        f.truncate(0)
    return True
