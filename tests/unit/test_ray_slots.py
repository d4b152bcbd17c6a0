"""The global LLM limit of a Ray run, as plain asyncio (the actor's own logic)."""

from __future__ import annotations

import asyncio

from veracity.evaluation.ray_slots import LLMSlots


async def test_slots_cap_calls_and_a_dead_holder_gives_its_slots_back():
    slots = LLMSlots(2)
    assert await slots.acquire("a") and await slots.acquire("a")
    waiting = asyncio.ensure_future(slots.acquire("b"))
    await asyncio.sleep(0.01)
    assert not waiting.done()  # the limit holds
    await slots.forget("a")  # worker a died holding both slots
    assert await asyncio.wait_for(waiting, 1) is True
    assert (await slots.stats())["in_use"] == 1
    assert await slots.acquire("a") is False  # a dead holder never takes one again
    await slots.release("a")  # nor gives back one it does not hold
    await slots.release("b")
    assert await slots.stats() == {"limit": 2, "in_use": 0, "peak": 2}
