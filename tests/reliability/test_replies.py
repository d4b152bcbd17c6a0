"""Model replies are validated before they are cached or used (issue items 2 and 3)."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from veracity.core.errors import LLMBadReply
from veracity.core.infra import RetryPolicy
from veracity.core.types import Claim
from veracity.llm.base import LLMRequest, LLMResponse, TokenLogprob, user
from veracity.llm.cache import ResponseCache
from veracity.llm.chat_format import parse_chat_completion
from veracity.llm.client import ManagedLLM
from veracity.llm.openai_compat import OpenAICompatLLM
from veracity.llm.probs import ChoiceProbs, choice_probabilities
from veracity.methods.base import load_method
from veracity.testing.fake_openai import FAULTS, FakeOpenAIServer

GOOD = {"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]}


def _lp(entry):
    return {"choices": [{"message": {"content": "x"}, "logprobs": {"content": entry}}]}


MALFORMED = {
    "choices is a list of strings": {"choices": ["oops"]},
    "choices holds null": {"choices": [None]},
    "no choices": {"choices": []},
    "choices missing": {},
    "choices is an object": {"choices": {"a": 1}},
    "body is a list": [1, 2],
    "body is a string": "oops",
    "message is a string": {"choices": [{"message": "hi"}]},
    "content is a number": {"choices": [{"message": {"content": 5}}]},
    "logprob is text": _lp([{"token": "x", "logprob": "abc"}]),
    "logprob is NaN": _lp([{"token": "x", "logprob": math.nan}]),
    "logprob is +inf": _lp([{"token": "x", "logprob": math.inf}]),
    "logprob is 1000": _lp([{"token": "x", "logprob": 1000}]),
    "token missing": _lp([{"logprob": -0.1}]),
    "token is a number": _lp([{"token": 3, "logprob": -0.1}]),
    "logprobs.content is a string": _lp("abc"),
    "top_logprobs is a string": _lp([{"token": "x", "logprob": -1, "top_logprobs": "z"}]),
    "top logprob is NaN": _lp([{"token": "x", "logprob": -1, "top_logprobs": [
        {"token": "y", "logprob": math.nan}]}]),
    "usage is a list": {**GOOD, "usage": [1]},
    "usage tokens are text": {**GOOD, "usage": {"prompt_tokens": "many"}},
    "usage tokens are negative": {**GOOD, "usage": {"completion_tokens": -3}},
    "finish_reason is a number": {"choices": [{"message": {"content": "x"}, "finish_reason": 1}]},
}  # fmt: skip


@pytest.mark.parametrize("shape", MALFORMED)
def test_every_malformed_shape_is_a_typed_bad_reply(shape):
    with pytest.raises(LLMBadReply, match="malformed chat completion"):
        parse_chat_completion(MALFORMED[shape])


def test_well_formed_variants_still_parse():
    assert parse_chat_completion(GOOD).text == "x"
    assert parse_chat_completion({"choices": [{"message": {"content": None}}]}).text == ""
    minus_inf = parse_chat_completion(_lp([{"token": "x", "logprob": -math.inf}]))
    assert minus_inf.logprobs[0].prob == pytest.approx(0.0)
    rounded = parse_chat_completion(_lp([{"token": "x", "logprob": 1e-7}]))
    assert rounded.logprobs[0].logprob == 0.0


def test_non_finite_logprobs_cannot_be_built_or_reach_a_probability():
    with pytest.raises(ValueError):
        TokenLogprob(token="x", logprob=math.nan)
    with pytest.raises(ValueError):
        ChoiceProbs(probs={"STOP": math.nan, "CONTINUE": 0.5}, mass=1.0, method="logprobs")
    broken = LLMResponse.model_construct(
        text="STOP",
        logprobs=[TokenLogprob.model_construct(token="STOP", logprob=math.nan, top=[])],
    )
    assert choice_probabilities(broken, ["STOP", "CONTINUE"]) is None


def _managed(server, cache_path, **kw):
    inner = OpenAICompatLLM("fake", base_url=server.url, timeout_s=2.0, logprobs=True)
    return ManagedLLM(inner, cache=ResponseCache(cache_path), retry=RetryPolicy(5, 0.0, 0.0), **kw)


@pytest.mark.server
@pytest.mark.parametrize("fault", [f for f in FAULTS if f not in ("stall", "drop")])
async def test_each_fault_class_is_retried_recorded_and_never_cached(tmp_path, fault):
    with FakeOpenAIServer(faults={fault: 1.0}) as server:
        llm = _managed(server, tmp_path / "llm.sqlite")
        server.faults = {fault: 1.0}
        request = LLMRequest(messages=[user("hi")], logprobs=True, top_logprobs=2)
        first = load_method("direct", llm=llm)
        verdict = await first.check(Claim(text="The sky is green."))
        assert verdict.label is None and verdict.error  # recorded, not a crash
        errors = verdict.trace.of_kind("error")
        assert len([e for e in errors if "attempt" in e.data]) == 4  # retries bounded
        assert len(llm.cache) == 0
        server.faults = {}  # healthy again: the same check works at once
        again = await load_method("direct", llm=llm).check(Claim(text="The sky is green."))
        assert again.label is not None and again.error is None
        response = await llm.complete(request)
        assert response.text


@pytest.mark.server
async def test_a_poisoned_cache_entry_is_dropped_and_asked_again(tmp_path):
    path = tmp_path / "llm.sqlite"
    with FakeOpenAIServer() as server:
        llm = _managed(server, path)
        method = load_method("direct", llm=llm)
        claim = Claim(text="Bananas are blue.")
        assert (await method.check(claim)).label is not None
        asked = len(server.requests)
        # damage the stored reply as an older version could have written it
        db = sqlite3.connect(path)
        row = db.execute("SELECT key, response FROM responses").fetchone()
        data = json.loads(row[1])
        data["logprobs"] = [{"token": "x", "logprob": None, "top": []}]
        db.execute("UPDATE responses SET response=? WHERE key=?", (json.dumps(data), row[0]))
        db.commit()
        db.close()
        verdict = await load_method("direct", llm=_managed(server, path)).check(claim)
        assert verdict.label is not None and verdict.error is None
        assert len(server.requests) == asked + 1  # asked the healthy server again


@pytest.mark.server
async def test_an_invalid_structured_reply_is_not_cached(tmp_path):
    replies = iter(['{"label": "maybe"}', '{"label": "maybe"}', '{"label": "maybe"}'])
    with FakeOpenAIServer(responder=lambda body: next(replies, '{"label": "true"}')) as server:
        llm = _managed(server, tmp_path / "llm.sqlite")
        verdict = await load_method("direct", llm=llm).check(Claim(text="Snow is hot."))
        assert verdict.error and "StructuredOutputError" in verdict.error
        assert len(llm.cache) == 0  # three invalid replies, none kept
        # under --retry-errors the same check goes back to the (now healthy) model
        verdict = await load_method("direct", llm=llm).check(Claim(text="Snow is hot."))
        assert verdict.label == "true"
        assert len(llm.cache) == 1
