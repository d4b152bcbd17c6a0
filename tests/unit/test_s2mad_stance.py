"""S2MAD stance separation: batched, concurrent scoring with re-asks; P/N selection."""

import asyncio
import json

import pytest
from _s2mad_script import CLAIM, THREAD, comments_in, make_post, scorer

from veracity.core import context
from veracity.core.types import Reply
from veracity.llm.base import LLMRequest, LLMResponse
from veracity.methods.s2mad import (
    ScoredReply,
    StanceScorer,
    StanceScoringError,
    random_split,
    select_top_k,
)
from veracity.testing import ScriptedLLM


def _scored(*scores):
    return [
        ScoredReply(reply=Reply(id=f"r{i}", text=f"t{i}"), score=s) for i, s in enumerate(scores)
    ]


def _ids(items):
    return [s.reply.id for s in items]


def test_top_k_orders_each_side_strongest_first_and_drops_zeros():
    p, n = select_top_k(_scored(0.2, -0.3, 0.0, 0.9, -1.0, 0.5, 0.0), k=2)
    assert _ids(p) == ["r3", "r5"]  # 0.9, 0.5 (0.2 is third)
    assert _ids(n) == ["r4", "r1"]  # -1.0, -0.3
    assert all(s.score != 0 for s in p + n)


def test_top_k_ties_keep_time_order_and_fewer_than_k_is_fine():
    p, n = select_top_k(_scored(0.5, 0.5, -0.4, 0.5, -0.4), k=2)
    assert _ids(p) == ["r0", "r1"]  # equal scores: earlier replies first
    assert _ids(n) == ["r2", "r4"]
    p, n = select_top_k(_scored(0.3, 0.0, 0.0), k=5)
    assert _ids(p) == ["r0"] and n == []
    assert select_top_k([], k=3) == ([], [])
    with pytest.raises(ValueError):
        select_top_k(_scored(0.1), k=0)


def test_random_split_is_seeded_and_takes_up_to_2k():
    replies = [Reply(id=f"r{i}", text=f"t{i}") for i in range(11)]
    a1, b1 = random_split(replies, k=3, seed="0:p")
    a2, b2 = random_split(replies, k=3, seed="0:p")
    assert _ids(a1) == _ids(a2) and _ids(b1) == _ids(b2)
    assert len(a1) == len(b1) == 3 and not set(_ids(a1)) & set(_ids(b1))
    a3, b3 = random_split(replies, k=3, seed="1:p")
    assert _ids(a3) + _ids(b3) != _ids(a1) + _ids(b1)
    odd_a, odd_b = random_split(replies[:5], k=10, seed=0)  # fewer than 2k: all, halved
    assert len(odd_a) == 3 and len(odd_b) == 2
    assert all(s.score is None for s in odd_a + odd_b)


async def test_scores_every_reply_in_batches_with_local_ids():
    post = make_post()
    llm = ScriptedLLM().on(".", scorer(), tag="stance")
    with context.check_context() as ctx:
        outcome = await StanceScorer(llm, batch_size=4).score(CLAIM, post.replies)
    assert [c.tag for c in llm.calls] == ["stance:1:1", "stance:1:2"]
    assert [len(comments_in(c.messages[-1].content)) for c in llm.calls] == [4, 2]
    assert {s.reply.text: s.score for s in outcome.scored} == THREAD
    assert outcome.errors == {} and outcome.calls == 2
    # The batch schema only admits that batch's ids.
    ids = llm.calls[1].json_schema["$defs"]["CommentScore"]["properties"]["id"]["enum"]
    assert ids == ["c5", "c6"]
    logged = ctx.trace.of_kind("decision")[-1]
    assert logged.name == "stance_scorer" and logged.data["scores"]["r5"] == -0.95


class _CountingLLM:
    """A scripted LLM that counts how many requests are in flight at once."""

    def __init__(self, inner: ScriptedLLM):
        self.inner = inner
        self.capabilities = inner.capabilities
        self.backend_id = inner.backend_id
        self.in_flight = 0
        self.peak = 0

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.01)  # hold the slot so that overlapping calls are seen
            return await self.inner.complete(request)
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize(("concurrency", "peak"), [(1, 1), (3, 3), (10, 5)])
async def test_batches_run_concurrently_up_to_the_limit(concurrency, peak):
    texts = {f"reply number {i}": 0.1 for i in range(10)}
    llm = _CountingLLM(ScriptedLLM().on(".", scorer(texts), tag="stance"))
    outcome = await StanceScorer(llm, batch_size=2, concurrency=concurrency).score(
        CLAIM, make_post(texts).replies
    )
    assert len(outcome.scored) == 10 and llm.peak == peak


def _fixed(items):
    return json.dumps({"scores": [{"id": i, "reason": "r", "score": s} for i, s in items]})


async def test_missing_out_of_range_and_conflicting_scores_are_asked_again():
    post = make_post()
    llm = ScriptedLLM()
    # c2 missing, c3 out of range, c4 given twice with different scores
    first = [("c1", 0.9), ("c3", 1.7), ("c4", -0.6), ("c4", 0.4), ("c5", -0.95), ("c6", 0.0)]
    llm.on(".", _fixed(first), tag="stance:1")
    llm.on(".", scorer(), tag="stance:2")
    outcome = await StanceScorer(llm).score(CLAIM, post.replies)
    retry = llm.calls_tagged("stance:2")
    assert len(retry) == 1
    prompt = retry[0].messages[-1].content
    # the batch is shown as at the first ask, so the re-ask's prompt extends that one up
    # to the end of the replies; only the three without a usable score are asked for
    first_prompt = llm.calls_tagged("stance:1")[0].messages[-1].content
    replies_end = first_prompt.rindex("</reply>") + len("</reply>")
    assert prompt[:replies_end] == first_prompt[:replies_end]
    assert retry[0].messages[:-1] == llm.calls_tagged("stance:1")[0].messages[:-1]
    assert [lid for lid, _ in comments_in(prompt)] == ["c1", "c2", "c3", "c4", "c5", "c6"]
    assert "Score only c2, c3, c4 this time" in prompt
    ids = retry[0].json_schema["$defs"]["CommentScore"]["properties"]["id"]["enum"]
    assert ids == ["c2", "c3", "c4"]
    assert retry[0].json_schema["properties"]["scores"]["maxItems"] == 3
    assert "c2: no score was given" in prompt
    assert "c3: the score 1.7 is outside [-1, 1]" in prompt
    assert "c4: this comment got several different scores" in prompt
    assert {s.reply.text: s.score for s in outcome.scored} == THREAD


async def test_a_reply_still_unscored_after_every_ask_is_an_error_not_a_zero():
    post = make_post()
    llm = ScriptedLLM()
    good = [("c1", 0.9), ("c2", 0.7), ("c4", -0.6), ("c5", -0.95), ("c6", 0.0)]
    llm.on(".", _fixed([*good, ("c3", 2.0)]), tag="stance:1")
    llm.on(".", _fixed([("c3", -3.0)]), tag="stance:2")
    llm.on(".", _fixed([("c3", -3.0)]), tag="stance:single:c3")
    with context.check_context() as ctx:
        outcome = await StanceScorer(llm, attempts=2).score(CLAIM, post.replies)
    assert "r3" not in {s.reply.id for s in outcome.scored}
    assert outcome.errors == {"r3": "the score -3.0 is outside [-1, 1]"}
    assert outcome.counts == {"scored": 5, "unscored": 1}
    errors = [e for e in ctx.trace.of_kind("error") if e.name == "stance_scorer"]
    assert [e.data["reply_id"] for e in errors] == ["r3"]
    # two batched asks, then one ask with the reply alone
    assert [c.tag for c in llm.calls] == ["stance:1:1", "stance:2:1", "stance:single:c3"]


async def test_replies_a_failed_batch_left_unscored_are_scored_one_per_call():
    post = make_post()
    llm = ScriptedLLM()
    llm.on(".", "not json", tag="stance:1")  # every batched ask fails (3 tries each)
    llm.on(".", "not json", tag="stance:2")
    llm.on(".", scorer(), tag="stance:single")
    with context.check_context() as ctx:
        outcome = await StanceScorer(llm, batch_size=3).score(CLAIM, post.replies)
    assert {s.reply.text: s.score for s in outcome.scored} == THREAD
    assert outcome.errors == {} and outcome.counts == {"scored": 6, "unscored": 0}
    single = llm.calls_tagged("stance:single")
    assert len(single) == 6 and all(len(comments_in(c.messages[-1].content)) == 1 for c in single)
    assert "one per call" in ctx.trace.of_kind("note")[0].data["note"]
    # off: the replies stay unscored and the run fails loudly
    llm = ScriptedLLM(default="not json")
    with pytest.raises(StanceScoringError):
        await StanceScorer(llm, rescore_singly=False).score(CLAIM, post.replies)
    assert not llm.calls_tagged("stance:single")


async def test_invalid_json_batches_are_re_asked_then_fail_loudly():
    post = make_post()
    llm = ScriptedLLM(default="I would rather not say")
    with context.check_context() as ctx, pytest.raises(StanceScoringError, match="none of the 6"):
        await StanceScorer(llm, attempts=2).score(CLAIM, post.replies)
    # 3 structured-output tries per ask: 2 batched asks, then one ask per reply
    assert len(llm.calls) == 6 + 6 * 3
    assert len([e for e in ctx.trace.of_kind("error") if "reply_id" in e.data]) == 6


async def test_a_broken_batch_is_re_asked_and_can_recover():
    post = make_post()
    llm = ScriptedLLM()
    llm.on(".", "not json", tag="stance:1")
    llm.on(".", scorer(), tag="stance:2")
    outcome = await StanceScorer(llm).score(CLAIM, post.replies)
    assert len(outcome.scored) == 6 and outcome.errors == {}


async def test_no_replies_means_no_calls():
    llm = ScriptedLLM()
    outcome = await StanceScorer(llm).score(CLAIM, [])
    assert outcome.scored == [] and llm.calls == []


def test_scorer_rejects_bad_settings():
    with pytest.raises(ValueError):
        StanceScorer(ScriptedLLM(), batch_size=0)


async def test_reasons_can_be_left_out_of_the_scoring_format():
    def bare(request):
        items = comments_in(request.messages[-1].content)
        return json.dumps({"scores": [{"id": lid, "score": THREAD[t]} for lid, t in items]})

    llm = ScriptedLLM().on(".", bare, tag="stance")
    outcome = await StanceScorer(llm, reasons=False).score(CLAIM, make_post().replies)
    item = llm.calls[0].json_schema["$defs"]["CommentScore"]["properties"]
    assert set(item) == {"id", "score"} and "reason" not in llm.calls[0].messages[-1].content
    assert len(outcome.scored) == 6 and all(s.reason == "" for s in outcome.scored)
