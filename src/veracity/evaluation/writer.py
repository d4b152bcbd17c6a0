"""`RecordWriter`: finished records reach the run store in group commits.

Syncing every record to disk on its own caps a run at a few hundred records a second
(one ``fsync`` each, in the event loop, holding up every worker). The writer takes the
records as they finish and appends whatever has gathered with one write and one sync,
in a thread, while the workers go on; a record is reported (`on_saved`) only once it is
on disk, so what a caller has seen survives a crash, and an interrupted run loses at
most the records still being written, which the next session checks again.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from veracity.evaluation.store import PredictionRecord, RunStore


class RecordWriter:
    """The engine's sink: groups records, appends each group to `store` in a thread.

    Args:
        store: the run directory.
        on_saved: called in the event loop for each record once it is on disk.
    """

    def __init__(self, store: RunStore, on_saved: Callable[[PredictionRecord], None]):
        self.store = store
        self.on_saved = on_saved
        self._pending: list[PredictionRecord] = []
        self._task: asyncio.Future | None = None
        self._owner: asyncio.Task | None = None  # the task in `run`, stopped on a failure
        self._failure: BaseException | None = None
        self.groups = 0  # group commits made

    def __call__(self, record: PredictionRecord) -> None:
        """Take a finished record.

        Raises:
            OSError, RunStoreError: an earlier write failed (the run stops).
        """
        if self._failure is not None:
            raise self._failure
        self._pending.append(record)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._drain())
            self._task.add_done_callback(self._ended)

    async def _drain(self) -> None:
        while self._pending:
            group, self._pending = self._pending, []
            await asyncio.to_thread(self.store.append_many, group)
            self.groups += 1
            for record in group:
                self.on_saved(record)

    def _ended(self, task: asyncio.Future) -> None:
        """A write failed, or a callback raised or cancelled it: stop the run."""
        failure = asyncio.CancelledError() if task.cancelled() else task.exception()
        if failure is None:
            return
        self._failure = failure
        if self._owner is not None and not self._owner.done():
            self._owner.cancel()

    async def close(self) -> None:
        """Wait until every record given is on disk; raises a failed write's error."""
        while self._task is not None:
            task = self._task
            await task  # raises what the write raised
            if task is self._task:  # no record came in meanwhile
                return

    def save_pending(self) -> None:
        """Write what has not been handed to a write yet, here and now (the run is being
        interrupted; a group already being written finishes in its thread)."""
        group, self._pending = self._pending, []
        self.store.append_many(group)
        for record in group:
            self.on_saved(record)

    async def run(self, work: Callable[[RecordWriter], Awaitable[None]]) -> None:
        """`work(self)`, then wait for every record to be on disk.

        When `work` fails or is interrupted, what is pending is saved before the error
        goes on; when a write fails (or an `on_saved` callback raises), `work` is
        cancelled and that error raised.
        """
        self._owner = asyncio.current_task()
        try:
            await work(self)
            await self.close()
        except BaseException as exc:
            failure = self._failure
            if failure is None:
                self.save_pending()
                raise
            with contextlib.suppress(Exception):  # the writes are failing already
                self.save_pending()
            if failure is exc or isinstance(failure, asyncio.CancelledError):
                raise
            raise failure from None
