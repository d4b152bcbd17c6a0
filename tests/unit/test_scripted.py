import math

import pytest

from veracity.llm.base import LLMRequest, user
from veracity.llm.probs import choice_probabilities
from veracity.testing import ScriptedLLM, ScriptedReply, ScriptExhausted, tokenize


def _req(text, tag="", logprobs=False, top=None):
    return LLMRequest(messages=[user(text)], tag=tag, logprobs=logprobs, top_logprobs=top)


async def test_rules_then_queue_then_default_then_error():
    llm = ScriptedLLM().on("weather", "sunny", times=1).queue("q1")
    assert (await llm.complete(_req("the weather?"))).text == "sunny"
    assert (await llm.complete(_req("the weather?"))).text == "q1"  # rule used up
    with pytest.raises(ScriptExhausted, match="the weather"):
        await llm.complete(_req("the weather?"))
    llm.default = "fallback"
    assert (await llm.complete(_req("anything"))).text == "fallback"


async def test_tag_filter_and_callable_reply():
    llm = ScriptedLLM().on(".*", lambda r: f"echo {r.tag}", tag="judge")
    assert (await llm.complete(_req("x", tag="judge:retry1"))).text == "echo judge:retry1"
    with pytest.raises(ScriptExhausted):
        await llm.complete(_req("x", tag="judgement"))
    assert len(llm.calls_tagged("judge")) == 1


async def test_logprobs_alternatives_at_answer_token():
    reply = ScriptedReply(
        '{"decision": "STOP"}', alternatives={"STOP": 0.7, "CONTINUE": 0.3}, at="STOP"
    )
    llm = ScriptedLLM().queue(reply)
    resp = await llm.complete(_req("stop?", logprobs=True, top=5))
    assert "".join(t.token for t in resp.logprobs) == resp.text
    probs = choice_probabilities(resp, ["STOP", "CONTINUE"], field="decision")
    assert probs.probs["STOP"] == pytest.approx(0.7)
    answer = next(t for t in resp.logprobs if t.token == "STOP")
    assert math.exp(answer.logprob) == pytest.approx(0.7)


async def test_no_logprobs_unless_requested():
    llm = ScriptedLLM(default="yes")
    assert (await llm.complete(_req("q"))).logprobs is None


def test_tokenize_keeps_leading_spaces():
    assert tokenize('a "b" c') == ["a", ' "', "b", '"', " c"]
