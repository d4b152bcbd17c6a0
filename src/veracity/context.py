"""Per-check accounting: the trace and usage that every LLM call and search adds to.

A method runs inside `check_context()`. Shared parts (the LLM layer, sources, agents)
call `current()` to record what they did; when no check is running the records go to a
throw-away context, so shared parts can also be used on their own. The context is held
in a `contextvars.ContextVar`, so concurrent tasks started with `asyncio.gather` inside
one check record into the same trace and usage, and concurrent checks stay apart.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from veracity.types import EventKind, Trace, TraceEvent, Usage


@dataclass
class CheckContext:
    trace: Trace = field(default_factory=Trace)
    usage: Usage = field(default_factory=Usage)
    started: float = field(default_factory=time.perf_counter)

    def event(self, kind: EventKind, name: str, **data: Any) -> None:
        event = self.trace.add(kind, name, **data)
        for observer in _observers.get():
            observer(event)

    def record_llm(
        self,
        *,
        name: str,
        prompt_tokens: int,
        completion_tokens: int,
        cached: bool,
        cost_usd: float | None = 0.0,
        **data: Any,
    ) -> None:
        """Count one LLM call; `cost_usd` None means the model has no known price."""
        u = self.usage
        u.llm_calls += 1
        u.cached_llm_calls += int(cached)
        # Cached replies cost nothing now, but their tokens are still counted so that a
        # replayed run reports the same token figures as the original run.
        u.prompt_tokens += prompt_tokens
        u.completion_tokens += completion_tokens
        if not cached:
            if cost_usd is None:
                u.unpriced_llm_calls += 1
            else:
                u.cost_usd += cost_usd
        self.event(
            "llm_call",
            name,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cached=cached,
            **data,
        )

    def record_search(self, *, name: str, cached: bool, **data: Any) -> None:
        self.usage.searches += 1
        self.usage.cached_searches += int(cached)
        self.event("search", name, cached=cached, **data)

    def finish(self) -> Usage:
        self.usage.wall_time_s = round(time.perf_counter() - self.started, 4)
        return self.usage


_current: ContextVar[CheckContext | None] = ContextVar("veracity_check_context", default=None)
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
    token = _current.set(ctx)
    try:
        yield ctx
    finally:
        _current.reset(token)
        ctx.finish()
