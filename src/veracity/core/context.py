"""Per-check accounting: the trace and usage that every LLM call and search adds to.

A method runs inside `check_context()`. Shared parts (the LLM layer, sources, agents)
call `current()` to record what they did; when no check is running the records go to a
throw-away context, so shared parts can also be used on their own. The context is held
in a `contextvars.ContextVar`, so concurrent tasks started with `asyncio.gather` inside
one check record into the same trace and usage, and concurrent checks stay apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from veracity.core.events import Fault, ModelCall, SearchDone, make_event
from veracity.core.types import EventKind, Trace, TraceEvent, Usage


@dataclass
class CheckContext:
    trace: Trace = field(default_factory=Trace)
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.perf_counter)
    first_search_error: str | None = None  # the first failed search's error
    # evidence tool calls that answered without being recorded as searches (tools of an
    # external MCP server): they count as answered when failed searches are weighed
    tool_answers: int = 0
    # the claim being checked, set by a method that checks one claim: sources that answer
    # per claim (a recorded source replays that claim's recorded searches) read it here
    claim: str | None = None
    # the check this one runs inside (a document check, for each of its claims' checks)
    outer: CheckContext | None = field(default=None, repr=False)

    def root(self) -> CheckContext:
        """The outermost check this one runs inside (itself when it runs alone)."""
        ctx = self
        while ctx.outer is not None:
            ctx = ctx.outer
        return ctx

    def emit(self, event: TraceEvent) -> TraceEvent:
        """Record `event` (a `veracity.core.events` class) and show it to the observers."""
        recorded = self.trace.record(event)
        for observer in _observers.get():
            observer(recorded)
        return recorded

    def event(self, kind: EventKind, name: str, **data: Any) -> None:
        """Record the event of a known `kind` from keyword fields (for plugins and tests
        that have the kind as a string; emitters build the class and call `emit`).

        Raises:
            ValueError: an unknown kind, or fields that do not fit it.
        """
        self.emit(make_event(kind, name, **data))

    def record_llm(
        self,
        *,
        name: str,
        prompt_tokens: int,
        completion_tokens: int,
        cached: bool,
        cost_usd: float | None = 0.0,
        cached_prompt_tokens: int = 0,
        **data: Any,
    ) -> None:
        """Count one LLM call; `cost_usd` None means the model has no known price;
        `cached_prompt_tokens`: prompt tokens the server reused from its prefix cache."""
        u = self.usage
        u.llm_calls += 1
        u.cached_llm_calls += int(cached)
        # Cached replies cost nothing now, but their tokens are still counted so that a
        # replayed run reports the same token figures as the original run.
        u.prompt_tokens += prompt_tokens
        u.completion_tokens += completion_tokens
        u.cached_prompt_tokens += cached_prompt_tokens
        if cached_prompt_tokens:
            data["cached_prompt_tokens"] = cached_prompt_tokens
        if not cached:
            if cost_usd is None:
                u.unpriced_llm_calls += 1
            else:
                u.cost_usd += cost_usd
        self.emit(
            ModelCall(
                name=name,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cached=cached,
                **data,
            )
        )

    def record_search(self, *, name: str, cached: bool, **data: Any) -> None:
        self.usage.searches += 1
        self.usage.cached_searches += int(cached)
        self.emit(SearchDone(name=name, cached=cached, **data))

    def record_search_failure(self, *, name: str, error: str, **data: Any) -> None:
        """Count one search that failed after its retries (an ``error`` event marked
        ``search_failed``); the first error is kept for the verdict's warning."""
        self.usage.failed_searches += 1
        if self.first_search_error is None:
            self.first_search_error = error
        self.emit(Fault(name=name, error=error, search_failed=True, **data))

    def finish(self) -> Usage:
        self.usage.wall_time_s = round(time.perf_counter() - self.started, 4)
        return self.usage


# Kept ambient (issue 22): every model call and search deep below a method records into
# the check's trace and usage, across the tasks the method gathers, with no parameter.
_current: ContextVar[CheckContext | None] = ContextVar("veracity_check_context", default=None)
# Kept ambient: a front end's live event stream (progress, SSE, MCP) reaches checks it
# starts without every layer between passing a callback down.
_observers: ContextVar[tuple[Callable[[TraceEvent], None], ...]] = ContextVar(
    "veracity_trace_observers", default=()
)


@contextlib.contextmanager
def observe(callback: Callable[[TraceEvent], None]) -> Iterator[None]:
    """Call `callback` with every trace event recorded inside the block (e.g. progress UIs).

    Observers must be quick and must not raise; they run on the event loop.
    """
    token = _observers.set((*_observers.get(), callback))
    try:
        yield
    finally:
        _observers.reset(token)


T = TypeVar("T")


class EventStream(Generic[T]):
    """A replayable stream of items (trace events, by default) for live views.

    `push` may be called from any thread (it is a valid `observe` callback); any number of
    readers `follow` the stream in their own event loops, each from any position, so a
    late reader first gets what it missed and then each new item as it arrives. The
    stream ends for its readers when `close` is called.

    Example:
        >>> stream = EventStream()
        >>> with observe(stream.push):
        ...     verdict = await method.check(item)   # elsewhere: async for i, ev in
        ...     stream.close()                       #   stream.follow(): ...
    """

    def __init__(self) -> None:
        self._items: list[T] = []
        self._closed = False
        self._lock = threading.Lock()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    def push(self, item: T) -> None:
        """Append `item` and wake the readers (safe from any thread)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("push to a closed EventStream")
            self._items.append(item)
            self._wake()

    def close(self) -> None:
        """End the stream: readers finish once they have read every item."""
        with self._lock:
            self._closed = True
            self._wake()

    @property
    def closed(self) -> bool:
        return self._closed

    def items(self, start: int = 0) -> list[T]:
        """A copy of the items from index `start` on."""
        with self._lock:
            return self._items[start:]

    def __len__(self) -> int:
        return len(self._items)

    def _wake(self) -> None:  # holds the lock
        waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_resolve, fut)

    async def follow(self, start: int = 0) -> AsyncIterator[tuple[int, T]]:
        """Yield ``(index, item)`` from index `start` on, live until the stream closes."""
        loop = asyncio.get_running_loop()
        position = start
        while True:
            with self._lock:
                batch = self._items[position:]
                done = self._closed
                fut: asyncio.Future[None] | None = None
                if not batch and not done:
                    fut = loop.create_future()
                    self._waiters.append((loop, fut))
            for item in batch:
                yield position, item
                position += 1
            if not batch and done:
                return
            if fut is not None:
                await fut


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def current() -> CheckContext:
    """The running check's context, or a detached one when no check is running."""
    ctx = _current.get()
    return ctx if ctx is not None else CheckContext()


def active() -> CheckContext | None:
    return _current.get()


@contextlib.contextmanager
def check_context(ctx: CheckContext | None = None) -> Iterator[CheckContext]:
    """Run a block as one check: records go to `ctx` (a new one by default)."""
    ctx = ctx or CheckContext()
    running = _current.get()
    if running is not None and running is not ctx and ctx.outer is None:
        ctx.outer = running
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)
        ctx.finish()
