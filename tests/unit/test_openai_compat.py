import json
from pathlib import Path

import httpx
import pytest
import respx

from veracity.core import context
from veracity.core.labels import get_label_space
from veracity.core.types import Claim
from veracity.llm.base import (
    LLMAuthError,
    LLMRateLimited,
    LLMRequest,
    LLMRequestError,
    LLMServerError,
    LLMTimeout,
    user,
)
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM, RetryPolicy
from veracity.llm.openai_compat import EndpointOptions, OpenAICompatLLM
from veracity.llm.probs import choice_probabilities
from veracity.methods.baselines import DirectMethod

DATA = Path(__file__).parents[1] / "data" / "openai"
URL = "https://api.example.test/v1/chat/completions"
SECRET = "sk-test-THIS-MUST-NOT-LEAK-1234"


def body():
    return json.loads((DATA / "chat_completion_logprobs.json").read_text())


def make(**kw):
    return OpenAICompatLLM(
        "gpt-4o-mini", base_url="https://api.example.test/v1", api_key=SECRET, **kw
    )


@respx.mock
async def test_request_shape_and_parsed_logprobs():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=body()))
    llm = make()
    req = LLMRequest(
        messages=[user("Is it true?")],
        json_schema={"type": "object"},
        logprobs=True,
        top_logprobs=5,
        stop=["\n\n"],
        seed=7,
    )
    resp = await llm.complete(req)
    sent = json.loads(route.calls[0].request.content)
    assert sent["model"] == "gpt-4o-mini" and sent["messages"] == [
        {"role": "user", "content": "Is it true?"}
    ]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["logprobs"] is True and sent["top_logprobs"] == 5
    assert sent["stop"] == ["\n\n"] and sent["seed"] == 7
    assert route.calls[0].request.headers["authorization"] == f"Bearer {SECRET}"
    assert resp.text == '{"label":"false"}'
    assert resp.usage.prompt_tokens == 87 and resp.usage.completion_tokens == 5
    assert resp.model == "gpt-4o-mini-2024-07-18" and resp.finish_reason == "stop"
    probs = choice_probabilities(resp, ["true", "false"], field="label")
    assert probs.probs["false"] == pytest.approx(0.9 / 1.0, abs=1e-3)


@respx.mock
async def test_json_object_mode_and_no_logprobs_capability():
    route = respx.post(URL).mock(return_value=httpx.Response(200, json=body()))
    llm = make(json_mode="json_object", logprobs=False)
    assert not llm.capabilities.json_schema and not llm.capabilities.logprobs
    await llm.complete(
        LLMRequest(messages=[user("q")], json_schema={"type": "object"}, logprobs=True)
    )
    sent = json.loads(route.calls[0].request.content)
    assert sent["response_format"] == {"type": "json_object"}
    assert "logprobs" not in sent


@pytest.mark.parametrize(
    ("status", "error", "headers"),
    [
        (401, LLMAuthError, {}),
        (403, LLMAuthError, {}),
        (429, LLMRateLimited, {"retry-after": "3"}),
        (500, LLMServerError, {}),
        (503, LLMServerError, {}),
        (400, LLMRequestError, {}),
    ],
)
@respx.mock
async def test_http_errors_are_typed(status, error, headers):
    respx.post(URL).mock(
        return_value=httpx.Response(status, json={"error": {"message": "nope"}}, headers=headers)
    )
    with pytest.raises(error) as info:
        await make().complete(LLMRequest(messages=[user("q")]))
    assert "nope" in str(info.value) and SECRET not in str(info.value)
    if status == 429:
        assert info.value.retry_after == 3.0


@respx.mock
async def test_a_context_overflow_says_how_to_get_past_it():
    message = "the request exceeds the available context size, try increasing it"
    respx.post(URL).mock(return_value=httpx.Response(400, json={"error": {"message": message}}))
    with pytest.raises(LLMRequestError, match=r"llama\.cpp's -c"):
        await make().complete(LLMRequest(messages=[user("q")]))


@respx.mock
async def test_timeouts_and_connection_errors_are_transient():
    respx.post(URL).mock(side_effect=httpx.ReadTimeout("slow"))
    with pytest.raises(LLMTimeout):
        await make().complete(LLMRequest(messages=[user("q")]))
    respx.post(URL).mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(LLMServerError):
        await make().complete(LLMRequest(messages=[user("q")]))


@respx.mock
async def test_managed_retry_on_429_then_success():
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(
                429, json={"error": {"message": "slow down"}}, headers={"retry-after": "0"}
            ),
            httpx.Response(200, json=body()),
        ]
    )
    llm = ManagedLLM(make(), retry=RetryPolicy(base_delay_s=0, max_delay_s=0))
    resp = await llm.complete(LLMRequest(messages=[user("q")]))
    assert resp.text and route.call_count == 2


def test_provider_presets_and_errors(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", SECRET)
    llm = OpenAICompatLLM("deepseek-chat", provider="deepseek")
    assert llm.base_url == "https://api.deepseek.com/v1" and llm.json_mode == "json_object"
    assert SECRET not in repr(llm) and SECRET not in llm.backend_id
    with pytest.raises(ValueError, match="unknown provider"):
        OpenAICompatLLM("m", provider="nope")
    with pytest.raises(ValueError, match="base_url"):
        OpenAICompatLLM("m")


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://[::1]:8080/v1", True),
        ("https://api.openai.com/v1", False),
        ("http://10.0.0.5:8000/v1", False),  # a server on the network may well be billed
    ],
)
def test_only_endpoints_on_this_machine_count_as_local(url, local):
    assert OpenAICompatLLM("m", base_url=url, api_key="k").capabilities.local is local


@pytest.mark.parametrize(
    ("kwargs", "slot_cache"),
    [
        ({"provider": "llamacpp"}, True),  # llama.cpp keeps each prompt in one slot
        ({"provider": "ollama"}, True),
        ({"provider": "vllm"}, False),  # one prefix cache shared by every request
        ({"provider": "openai"}, False),
        ({"base_url": "http://127.0.0.1:8080/v1"}, True),  # taken to be llama.cpp
        ({"base_url": "https://api.example.org/v1"}, False),
        ({"provider": "vllm", "slot_cache": True}, True),  # the user's word wins
        ({"base_url": "http://127.0.0.1:8000/v1", "slot_cache": False}, False),
    ],
)
def test_which_endpoints_keep_prompts_per_slot(kwargs, slot_cache):
    llm = OpenAICompatLLM("m", api_key="k", **kwargs)
    assert llm.capabilities.slot_cache is slot_cache


@pytest.mark.parametrize(
    ("kwargs", "placed"),
    [
        ({"provider": "llamacpp", "slots": 2}, True),
        ({"base_url": "http://127.0.0.1:8080/v1", "slots": 4}, True),
        ({"base_url": "http://127.0.0.1:8080/v1"}, False),  # no slot count: llama.cpp picks
        ({"provider": "vllm", "slots": 2}, None),  # not llama.cpp: refused
        ({"provider": "ollama", "slots": 2}, None),
        ({"base_url": "https://api.example.org/v1", "slots": 2}, None),
    ],
)
@respx.mock
async def test_a_slot_count_places_each_request_on_a_llamacpp_slot(kwargs, placed):
    options = EndpointOptions(**kwargs)
    if placed is None:
        with pytest.raises(ValueError, match=r"only a llama\.cpp server"):
            OpenAICompatLLM.from_options("m", options)
        return
    llm = OpenAICompatLLM.from_options("m", options)
    route = respx.post(url__regex=r".*/chat/completions").mock(
        return_value=httpx.Response(200, json=body())
    )
    await llm.complete(LLMRequest(messages=[user("q")]))
    sent = json.loads(route.calls[0].request.content)
    assert ("id_slot" in sent) is placed
    if placed:
        assert sent["id_slot"] == 0 and llm.slots is not None and llm.slots.stats.placed == 1


@respx.mock
async def test_key_never_reaches_trace_or_cache(tmp_path):
    respx.post(URL).mock(return_value=httpx.Response(200, json=body()))
    cache = ResponseCache(tmp_path / "c.sqlite")
    method = DirectMethod(llm=ManagedLLM(make(), cache=cache))
    verdict = await method.check(Claim(text="The moon is made of cheese."))
    assert verdict.label == "false"
    assert verdict.probabilities["false"] == pytest.approx(0.9, abs=1e-3)
    assert SECRET not in verdict.model_dump_json()
    assert SECRET.encode() not in (tmp_path / "c.sqlite").read_bytes()
    assert get_label_space(verdict.label_space).name == "true_false"


@respx.mock
async def test_missing_key_hint_names_env_var(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    respx.post("https://api.openai.com/v1/chat/completions").mock(
        return_value=httpx.Response(401, json={"error": {"message": "no key"}})
    )
    with context.check_context(), pytest.raises(LLMAuthError, match="OPENAI_API_KEY"):
        await OpenAICompatLLM("gpt-4o", provider="openai").complete(
            LLMRequest(messages=[user("q")])
        )


@respx.mock
async def test_priced_as_the_requested_model_unless_the_user_maps_the_reported_one():
    reply = {**body(), "model": "smollm2-135m"}  # a proxy answering with another model
    respx.post(URL).mock(return_value=httpx.Response(200, json=reply))
    usage = reply["usage"]
    expected = (usage["prompt_tokens"] * 0.15 + usage["completion_tokens"] * 0.60) / 1e6
    with context.check_context() as ctx:
        await ManagedLLM(make()).complete(LLMRequest(messages=[user("q")]))
    assert ctx.usage.cost_usd == pytest.approx(expected)  # gpt-4o-mini's list price
    event = ctx.trace.of_kind("llm_call")[0].data
    assert event["model"] == "smollm2-135m" and event["priced_as"] == "gpt-4o-mini"

    mapped = ManagedLLM(make(), prices={"smollm2-135m": (1.0, 2.0)})
    with context.check_context() as ctx:
        await mapped.complete(LLMRequest(messages=[user("q")]))
    total = usage["prompt_tokens"] * 1.0 + usage["completion_tokens"] * 2.0
    assert ctx.usage.cost_usd == pytest.approx(total / 1e6)
    assert "priced_as" not in ctx.trace.of_kind("llm_call")[0].data
