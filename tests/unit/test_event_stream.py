"""`context.EventStream`: replay for late readers, live delivery across threads."""

from __future__ import annotations

import asyncio
import threading

import pytest

from veracity.core import context
from veracity.core.context import EventStream
from veracity.testing import ScriptedLLM


async def _collect(stream: EventStream, start: int = 0) -> list:
    return [item async for item in stream.follow(start)]


async def test_a_late_reader_replays_then_ends_with_the_stream():
    stream: EventStream[str] = EventStream()
    stream.push("a")
    stream.push("b")
    reader = asyncio.create_task(_collect(stream))
    await asyncio.sleep(0.01)
    stream.push("c")
    stream.close()
    assert await reader == [(0, "a"), (1, "b"), (2, "c")]
    assert await _collect(stream, 1) == [(1, "b"), (2, "c")]


async def test_items_pushed_from_another_thread_wake_the_reader():
    stream: EventStream[int] = EventStream()
    reader = asyncio.create_task(_collect(stream))
    await asyncio.sleep(0.01)

    def produce() -> None:
        for i in range(50):
            stream.push(i)
        stream.close()

    thread = threading.Thread(target=produce)
    thread.start()
    got = await asyncio.wait_for(reader, 5)
    thread.join()
    assert [i for _, i in got] == list(range(50))


async def test_pushing_to_a_closed_stream_is_an_error():
    stream: EventStream[int] = EventStream()
    stream.close()
    with pytest.raises(RuntimeError):
        stream.push(1)


async def test_observe_feeds_a_stream_with_every_trace_event_of_a_check():
    import veracity

    stream: EventStream = EventStream()
    with context.observe(stream.push):
        verdict = await veracity.acheck("x", "direct", llm=ScriptedLLM(default='{"label": "true"}'))
    stream.close()
    got = [e for _, e in [item async for item in stream.follow()]]
    assert got == verdict.trace.events
