"""SlotScheduler: requests go to the llama.cpp slot that holds most of their prompt."""

import asyncio
import random
import threading

import pytest

from veracity.core import context
from veracity.llm.base import LLMRequest, user
from veracity.llm.embedded import EmbeddedLLM, EmbeddedOptions
from veracity.llm.slots import SlotScheduler, prompt_text, shared_chars

SHARED = "evidence pool: " + "the bridge opened in 1932. " * 60  # ~1,600 characters


class Recorder:
    """Runs fake requests through a scheduler and records which slot ran what, when."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.events = []  # (what, name, slot)
        self.running = 0
        self.peak = 0

    async def request(self, name, text, hold=0.05):
        async def call(slot):
            self.running += 1
            self.peak = max(self.peak, self.running)
            self.events.append(("start", name, slot))
            await asyncio.sleep(hold)
            self.events.append(("end", name, slot))
            self.running -= 1
            return slot

        return await self.scheduler.run(text, call)

    def order(self):
        return [(what, name) for what, name, _ in self.events]


def test_shared_chars_is_the_common_prefix_length():
    rng = random.Random(7)
    for _ in range(300):
        a = "".join(rng.choice("ab") for _ in range(rng.randrange(0, 40)))
        b = a[: rng.randrange(0, len(a) + 1)] + "".join(
            rng.choice("ab") for _ in range(rng.randrange(0, 10))
        )
        pairs = enumerate(zip(a, b, strict=False))
        same = next((i for i, (x, y) in pairs if x != y), min(len(a), len(b)))
        assert shared_chars(a, b) == same


def test_prompt_text_follows_the_message_order_and_includes_tools():
    body = {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}
    one = prompt_text(body)
    assert one.index("s") < one.index("u")
    other = prompt_text(
        {**body, "messages": [*body["messages"][:1], {"role": "user", "content": "v"}]}
    )
    assert shared_chars(one, other) == len(one) - 1  # they differ only in the last character
    assert prompt_text({**body, "tools": [{"name": "search"}]}).startswith("[{'name': 'search'}]")


async def test_a_request_waits_for_the_slot_computing_its_prefix():
    rec = Recorder(SlotScheduler(2, wait_chars=512))
    first, second = await asyncio.gather(
        rec.request("politician", SHARED + "You argue for the claim."),
        rec.request("scientist", SHARED + "You test the claim."),
    )
    assert first == second  # the same slot, one after the other
    assert rec.order() == [
        ("start", "politician"),
        ("end", "politician"),
        ("start", "scientist"),
        ("end", "scientist"),
    ]
    assert rec.scheduler.stats.waited == 1
    assert rec.scheduler.stats.reused_chars >= len(SHARED)


async def test_a_prefix_the_busy_slot_already_held_is_worth_waiting_for():
    # a round's two rebuttals over the opening's prefix, which only slot 0 holds: the
    # second reuses it there instead of computing it again on the cold slot
    sched = SlotScheduler(2, wait_chars=512)
    rec = Recorder(sched)
    await rec.request("opening", SHARED + "opening statements")
    a, b = await asyncio.gather(
        rec.request("politician", SHARED + "politician's rebuttal"),
        rec.request("scientist", SHARED + "scientist's rebuttal"),
    )
    assert a == b and sched.stats.waited == 1 and rec.peak == 1
    assert sched.stats.reused_chars >= 2 * len(SHARED)  # both rebuttals reused it


async def test_two_checks_sharing_a_fixed_opening_run_side_by_side():
    # two checks of one method at once (an evaluation's examples): their prompts share the
    # method's instructions, not a check's material, so neither waits for the other, even
    # the first time, when the second slot holds nothing yet
    sched = SlotScheduler(2, wait_chars=512)
    rec = Recorder(sched)
    with context.check_context():
        await rec.request("earlier check", SHARED + "claim zero")

    async def check(name):
        with context.check_context():
            return [
                await rec.request(f"{name}{i}", SHARED + f"claim {name} step {i}") for i in range(3)
            ]

    first, second = await asyncio.gather(check("a"), check("b"))
    assert sched.stats.waited == 0 and rec.peak == 2
    assert set(first) != set(second) and len(set(first)) == len(set(second)) == 1
    # within one check the same prompts would have waited for the slot holding the prefix
    sched = SlotScheduler(2, wait_chars=512)
    rec = Recorder(sched)
    with context.check_context():
        await rec.request("earlier", SHARED + "claim zero")
        await asyncio.gather(rec.request("a", SHARED + "claim a"), rec.request("b", SHARED + "b"))
    assert sched.stats.waited == 1


async def test_two_streams_over_a_prefix_take_turns_once_then_keep_a_slot_each():
    sched = SlotScheduler(2, wait_chars=512)
    rec = Recorder(sched)
    await rec.request("opening", SHARED + "the debate so far")
    stop, judge = SHARED + "stop? " + "s" * 800, SHARED + "ruling? " + "j" * 800
    slots = {"stop": [], "judge": []}
    for i in range(4):  # a greedy answer and three samples each, both questions at once
        a, b = await asyncio.gather(rec.request(f"stop{i}", stop), rec.request(f"judge{i}", judge))
        slots["stop"].append(a)
        slots["judge"].append(b)
    # the first judge call waits for the slot holding the prefix; its repeat, pushed out
    # by the stop agent's, computes the prefix once on the other slot, and from then on
    # each stream keeps its slot (the rule that counted every held prefix made them take
    # turns at every call, each computing its own 800-character ending again)
    assert sched.stats.waited == 1
    assert slots["stop"] == [0, 0, 0, 0] and slots["judge"] == [0, 1, 1, 1]
    assert rec.peak == 2


async def test_without_waiting_both_start_at_once_on_two_slots():
    rec = Recorder(SlotScheduler(2, wait_chars=0))
    first, second = await asyncio.gather(
        rec.request("politician", SHARED + "You argue for the claim."),
        rec.request("scientist", SHARED + "You test the claim."),
    )
    assert first != second and rec.peak == 2 and rec.scheduler.stats.waited == 0


async def test_a_short_shared_prefix_is_not_worth_waiting_for():
    rec = Recorder(SlotScheduler(2, wait_chars=512))
    await asyncio.gather(
        rec.request("a", "short common opening " + "x" * 2000),
        rec.request("b", "short common opening " + "y" * 2000),
    )
    assert rec.peak == 2 and rec.scheduler.stats.waited == 0


async def test_an_unrelated_request_takes_the_free_slot_while_another_waits():
    rec = Recorder(SlotScheduler(2, wait_chars=512))
    results = await asyncio.gather(
        rec.request("first", SHARED + "one", hold=0.2),
        rec.request("waits", SHARED + "two", hold=0.05),
        rec.request("other", "a different check entirely " * 40, hold=0.05),
    )
    order = rec.order()
    assert order.index(("start", "other")) < order.index(("end", "first"))
    assert order.index(("start", "waits")) > order.index(("end", "first"))
    assert results[0] == results[1] != results[2]


async def test_a_fresh_prompt_evicts_the_least_recently_used_slot():
    sched = SlotScheduler(2, wait_chars=512)
    rec = Recorder(sched)
    await rec.request("old", "an earlier check " * 100)
    await rec.request("current", SHARED + "opening")
    # neither slot shares anything with this prompt: it takes the older one, so the
    # current check's prefix stays where the next call of that check will look for it
    fresh = await rec.request("fresh", "unrelated " * 100)
    again = await rec.request("current again", SHARED + "rebuttal")
    assert fresh != again
    assert shared_chars(SHARED + "rebuttal", sched._slots[again].held) >= len(SHARED)


async def test_never_more_requests_than_slots_and_all_finish():
    rec = Recorder(SlotScheduler(2, wait_chars=512))
    texts = [SHARED + str(i) if i % 2 else f"other {i} " * 50 for i in range(9)]
    done = await asyncio.gather(*(rec.request(str(i), t, hold=0.01) for i, t in enumerate(texts)))
    assert len(done) == 9 and rec.peak <= 2


async def test_a_cancelled_waiter_gives_no_slot_away():
    sched = SlotScheduler(1, wait_chars=512)
    rec = Recorder(sched)
    running = asyncio.create_task(rec.request("running", SHARED + "a", hold=0.1))
    await asyncio.sleep(0.01)
    waiting = asyncio.create_task(rec.request("waiting", SHARED + "b"))
    await asyncio.sleep(0.01)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await running
    assert await rec.request("after", "anything") == 0  # the only slot is free again
    assert ("start", "waiting") not in rec.order()


async def test_a_failed_request_leaves_its_slot_holding_nothing_known():
    sched = SlotScheduler(2, wait_chars=512)

    async def fails(slot):
        raise RuntimeError("stopped part-way")

    with pytest.raises(RuntimeError):
        await sched.run(SHARED + "a", fails)
    assert all(slot.held == "" and not slot.busy for slot in sched._slots)


def test_one_scheduler_serves_several_threads_and_loops():
    sched = SlotScheduler(2, wait_chars=512)
    lock = threading.Lock()
    state = {"running": 0, "peak": 0, "done": 0}

    async def call(slot):
        with lock:
            state["running"] += 1
            state["peak"] = max(state["peak"], state["running"])
        await asyncio.sleep(0.01)
        with lock:
            state["running"] -= 1
            state["done"] += 1

    async def many(tag):
        await asyncio.gather(*(sched.run(f"{SHARED}{tag}{i}", call) for i in range(6)))

    threads = [threading.Thread(target=asyncio.run, args=(many(t),)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert state["done"] == 12 and state["peak"] <= 2


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="at least one slot"):
        SlotScheduler(0)
    with pytest.raises(ValueError, match="wait_chars"):
        SlotScheduler(2, wait_chars=-1)


class SlowServer:
    """A stand-in llama.cpp that records each body and its slot; replies after a pause."""

    def __init__(self):
        self.log = []
        self.lock = threading.Lock()

    def handle_chat_completions(self, body, callback):
        with self.lock:
            self.log.append(("start", body["id_slot"], body["messages"][-1]["content"][-3:]))
        threading.Event().wait(0.05)
        with self.lock:
            self.log.append(("end", body["id_slot"], body["messages"][-1]["content"][-3:]))
        callback({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "ok"}}]})
        callback({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        callback({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 1}})


async def test_the_embedded_backend_sends_each_request_to_its_slot(tmp_path):
    llm = EmbeddedLLM(str(tmp_path / "m.gguf"), models_dir=tmp_path, n_parallel=2)
    llm._server = SlowServer()
    opening = [LLMRequest(messages=[user(SHARED + who)], max_tokens=4) for who in ("pol", "sci")]
    await asyncio.gather(*(llm.complete(r) for r in opening))
    log = llm._server.log
    assert [e[0] for e in log] == ["start", "end", "start", "end"]  # the second waited
    assert log[0][1] == log[2][1]  # on the slot that held the shared opening
    options = EmbeddedOptions(slot_wait_chars=0)  # as a run file's llm: section gives it
    loose = EmbeddedLLM.from_options(str(tmp_path / "m.gguf"), options, models_dir=tmp_path)
    assert loose.slots.wait_chars == 0
    loose._server = SlowServer()
    await asyncio.gather(*(loose.complete(r) for r in opening))
    assert [e[0] for e in loose._server.log][:2] == ["start", "start"]
    assert {e[1] for e in loose._server.log} == {0, 1}
