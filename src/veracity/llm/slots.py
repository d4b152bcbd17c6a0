"""Which llama.cpp slot runs a request: the one that already holds most of its prompt.

llama.cpp keeps, per slot, the tokens of the last prompt it ran, and a new request on that
slot computes only what follows the longest prefix they share. A check's calls open alike
(`veracity.prompt_layout`), but when two of them start together on a server with two idle
slots, each slot computes the shared opening on its own: on one CPU thread, some 1,500
tokens take about 15 s, twice. `SlotScheduler` decides instead:

- a request goes to the free slot whose held prompt shares the longest prefix with it
  (ties: the slot used least recently, so a fresh prompt evicts the oldest one);
- it waits for a busy slot running a request of the same check when that slot holds at
  least `wait_chars` characters more of the request's prefix than any free slot: it
  then reuses that prefix once the running request is done instead of computing it a
  second time beside it (two debaters' rebuttals over one evidence pool, say);
- for a busy slot running another check's request, only text that request is computing
  itself counts: two checks that share a long fixed opening (a method's instructions)
  run side by side, each computing it once on its own slot, rather than one after the
  other for good;
- so does a repeat that another stream pushed out: a request whose prompt ran before
  and is held by no slot now (a sample of an answer whose slot another stream of calls
  has taken). Two streams of calls over one prefix (a judge's samples and a stop
  agent's) then take turns on one slot only once, and after that keep a slot each,
  instead of computing their own endings again at every turn.

Waiting costs the concurrency of the two generations, which on a CPU is small next to a
prefill of a few hundred tokens; `wait_chars=0` never waits (placement by prefix only). The
scheduler works across threads and event loops, and never runs more than `slots`
requests at once.

Prompts are compared as text (`prompt_text`), which follows the chat template's token
order closely enough to rank slots; llama.cpp itself decides how much it reuses.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from veracity.core import context

T = TypeVar("T")

DEFAULT_WAIT_CHARS = 512  # about 130 tokens; chosen, not tuned (`slot_wait_chars` sets it)
RECENT_PROMPTS = 8  # prompts remembered per slot to recognise a repeat (see `_choose`)


def prompt_text(body: dict[str, Any]) -> str:
    """A chat body's prompt as one string, in the order the chat template lays it out
    (tools first, then each message's role and content)."""
    parts = [repr(body["tools"])] if body.get("tools") else []
    for message in body.get("messages", ()):
        parts.append(f"\x00{message.get('role', '')}\x01{message.get('content', '')}")
    return "".join(parts)


def shared_chars(a: str, b: str) -> int:
    """Length of the longest common prefix of `a` and `b` (by bisection on slices, which
    compare in C: prompts run to tens of thousands of characters)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while hi - lo > 1:  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(eq=False)
class _Waiter:
    text: str
    check: int | None
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[int]


@dataclass
class _Slot:
    held: str = ""  # the prompt the slot's cache holds (or will, once its request ends)
    reused: int = 0  # characters of `held` the slot already held when its request began
    check: int | None = None  # the check whose request placed `held` (`_check_id`)
    busy: bool = False
    used: int = 0  # order of last use, for least-recently-used ties


@dataclass
class SlotStats:
    """How requests were placed: `waited` counts those that waited for a busy slot."""

    placed: int = 0
    waited: int = 0
    reused_chars: int = 0  # prefix characters shared with the chosen slot's prompt


class SlotScheduler:
    """Places requests on `slots` llama.cpp slots by the prefix each slot holds.

    Args:
        slots: the server's slot count (`n_parallel`).
        wait_chars: wait for a busy slot that holds at least this many characters more of
            the request's prefix than any free slot (see the module docstring for the
            exception); 0: never wait.
    """

    def __init__(self, slots: int, wait_chars: int = DEFAULT_WAIT_CHARS):
        if slots < 1:
            raise ValueError("a slot scheduler needs at least one slot")
        if wait_chars < 0:
            raise ValueError("wait_chars must be 0 (never wait) or more")
        self.wait_chars = wait_chars
        self._slots = [_Slot() for _ in range(slots)]
        self._waiters: list[_Waiter] = []
        self._lock = threading.Lock()
        self._clock = itertools.count(1)
        self._recent: OrderedDict[str, None] = OrderedDict()  # prompts placed lately
        self.stats = SlotStats()

    def _choose(self, text: str, check: int | None) -> int | None:
        """The free slot for `text` of `check`, or None when it should wait (lock held)."""
        slots = self._slots
        shares = {i: shared_chars(text, s.held) for i, s in enumerate(slots) if not s.busy}
        if not shares:
            return None
        best = max(shares, key=lambda i: (shares[i], -slots[i].used))
        if self.wait_chars:
            here = shares[best]
            # only what the busy request computes itself counts when it belongs to another
            # check, or when this is a repeat that another stream pushed out of its slot
            # (waiting would only swap them again)
            pushed_out = text in self._recent and all(s.held != text for s in slots)
            gains = [
                shared_chars(text, s.held)
                - (here if s.check == check and not pushed_out else max(here, s.reused))
                for s in slots
                if s.busy
            ]
            if gains and max(gains) >= self.wait_chars:
                return None
        return best

    def _take(self, index: int, text: str, check: int | None, waited: bool) -> int:
        slot = self._slots[index]
        stats = self.stats
        stats.placed += 1
        stats.waited += waited
        slot.reused = shared_chars(text, slot.held)
        stats.reused_chars += slot.reused
        slot.busy, slot.held, slot.check = True, text, check
        self._recent[text] = None
        self._recent.move_to_end(text)
        while len(self._recent) > RECENT_PROMPTS * len(self._slots):
            self._recent.popitem(last=False)
        return index

    async def acquire(self, text: str, check: int | None = None) -> int:
        """Wait for a slot for the prompt `text` of `check` (`_check_id`); returns its
        index (give it back with `release`)."""
        loop = asyncio.get_running_loop()
        with self._lock:
            index = self._choose(text, check)
            if index is not None:
                return self._take(index, text, check, waited=False)
            waiter = _Waiter(text, check, loop, loop.create_future())
            self._waiters.append(waiter)
        try:
            return await waiter.future
        except asyncio.CancelledError:
            with self._lock:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)
                    raise
            # placed just as it was cancelled: hand the slot on
            if waiter.future.done() and not waiter.future.cancelled():
                self.release(waiter.future.result(), ok=False)
            raise

    def release(self, index: int, *, ok: bool = True) -> None:
        """Free slot `index`; `ok` False when its request failed part-way, so what the
        slot holds is unknown."""
        with self._lock:
            slot = self._slots[index]
            slot.busy = False
            slot.used = next(self._clock)
            if not ok:
                slot.held = ""
            placed: list[tuple[_Waiter, int]] = []
            for waiter in list(self._waiters):  # first come, first placed
                if waiter.future.done():
                    self._waiters.remove(waiter)
                    continue
                chosen = self._choose(waiter.text, waiter.check)
                if chosen is None:
                    continue
                self._waiters.remove(waiter)
                placed.append((waiter, self._take(chosen, waiter.text, waiter.check, waited=True)))
        for waiter, chosen in placed:
            try:
                waiter.loop.call_soon_threadsafe(_resolve, waiter, chosen, self)
            except RuntimeError:  # its loop has closed: nobody will take the slot
                self.release(chosen, ok=False)

    async def run(self, text: str, call: Callable[[int], Awaitable[T]]) -> T:
        """Await `call(slot)` on the slot chosen for `text`, a prompt of the running check."""
        index = await self.acquire(text, _check_id())
        ok = False
        try:
            result = await call(index)
            ok = True
            return result
        finally:
            self.release(index, ok=ok)


def _check_id() -> int | None:
    """The running check (`veracity.core.context`), as the identity of its context; None
    outside a check (such requests count as one check)."""
    ctx = context.active()
    return None if ctx is None else id(ctx)


def _resolve(waiter: _Waiter, index: int, scheduler: SlotScheduler) -> None:
    """Hand `index` to `waiter` in its own loop; a waiter cancelled meanwhile gives it back."""
    if waiter.future.cancelled():
        scheduler.release(index, ok=False)
    else:
        waiter.future.set_result(index)
