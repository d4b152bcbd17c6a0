"""The global limit on live LLM calls of a Ray run (`RayOptions.llm_limit`).

`LLMSlots` runs as one small Ray actor holding a semaphore; each worker's model takes a
slot through `SlotLimit` (a `SharedLimit` for `ManagedLLM`) around every live call, so at
most `limit` calls are in flight across all workers. Cached replies take no slot. Slots
are counted per holder, so the driver can give back those of a worker that died.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class LLMSlots:
    """The global limit on live LLM calls: a semaphore held by one actor.

    Slots are counted per holder (a worker's actor id), so the driver can give back
    the slots of a worker that died while holding them (`forget`).
    """

    def __init__(self, limit: int):
        self.limit = limit
        self._sem = asyncio.Semaphore(limit)
        self._held: Counter[str] = Counter()
        self._dead: set[str] = set()
        self.peak = 0

    async def acquire(self, holder: str) -> bool:
        await self._sem.acquire()
        if holder in self._dead:  # it died while waiting: the slot goes straight back
            self._sem.release()
            return False
        self._held[holder] += 1
        self.peak = max(self.peak, sum(self._held.values()))
        return True

    async def release(self, holder: str) -> None:
        if self._held[holder] > 0:
            self._held[holder] -= 1
            self._sem.release()

    async def forget(self, holder: str) -> None:
        """Give back every slot `holder` holds; it will never take another."""
        self._dead.add(holder)
        for _ in range(self._held.pop(holder, 0)):
            self._sem.release()

    async def stats(self) -> dict[str, int]:
        return {"limit": self.limit, "in_use": sum(self._held.values()), "peak": self.peak}


class SlotLimit:
    """A worker's side of `LLMSlots`: a `SharedLimit` for `ManagedLLM`."""

    def __init__(self, slots: Any, holder: str):
        self.slots = slots
        self.holder = holder

    async def run(self, call: Callable[[], Awaitable[T]]) -> T:
        await self.slots.acquire.remote(self.holder)
        try:
            return await call()
        finally:
            self.slots.release.remote(self.holder)


__all__ = ["LLMSlots", "SlotLimit"]
