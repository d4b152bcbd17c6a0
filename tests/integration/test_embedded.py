"""End-to-end runs on the real embedded model (SmolLM2-135M through llama.cpp)."""

import asyncio
import json
import subprocess
import sys

import pytest

import veracity
from veracity.core.config import LLMConfig
from veracity.core.labels import get_label_space
from veracity.llm.base import LLMRequest, user
from veracity.llm.factory import build_llm
from veracity.llm.probs import choice_probabilities
from veracity.llm.structured import complete_structured
from veracity.methods.baselines import _answer_model
from veracity.runtime import resolve_llm
from veracity.runtime.home import home_paths

pytestmark = pytest.mark.embedded


@pytest.fixture(scope="module")
def llm():
    return build_llm(resolve_llm(LLMConfig(cache_mode="off")), models_dir=home_paths().models)


async def test_constrained_json_with_label_logprobs(llm):
    space = get_label_space("true_half_false")
    result = await complete_structured(
        llm,
        [user("Is this accurate? 'Paris is the capital of France.' Pick a label.")],
        _answer_model(space, reasoning=False),
        logprobs=True,
        top_logprobs=10,
        max_tokens=40,
    )
    assert result.value.label in space.labels
    probs = choice_probabilities(result.response, space.labels, field="label")
    assert probs is not None and abs(sum(probs.probs.values()) - 1) < 1e-6
    assert result.response.usage.prompt_tokens > 0 and result.response.usage.completion_tokens > 0


async def test_concurrent_requests_all_complete(llm):
    requests = [
        LLMRequest(messages=[user(f"Count to {n}.")], max_tokens=12, temperature=0.0)
        for n in range(2, 6)
    ]
    replies = await asyncio.gather(*(llm.complete(r) for r in requests))
    assert all(r.text for r in replies) and len({r.text for r in replies}) > 1


def test_python_api_check_on_embedded_default():
    verdict = veracity.check("The Eiffel Tower is in Berlin.", method="cot")
    assert verdict.error is None, verdict.error
    assert verdict.label in ("true", "false") and verdict.usage.llm_calls == 1
    assert verdict.rationale


def test_cli_check_on_embedded_default():
    proc = subprocess.run(
        [sys.executable, "-m", "veracity", "check", "Water boils at 100 C at sea level.", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    verdict = json.loads(proc.stdout)
    assert verdict["label"] in ("true", "false") and verdict["method"] == "direct"
    assert verdict["usage"]["llm_calls"] == 1


async def test_a_repeated_prefix_is_reused_and_counted(llm):
    shared = "Evidence: " + " ".join(
        f"passage {i} dates the bridge to {1900 + i}." for i in range(40)
    )
    first, second = (
        LLMRequest(
            messages=[user(f"{shared}\nYou are the {who}. Answer in one word.")], max_tokens=4
        )
        for who in ("politician", "scientist")
    )
    one = await llm.complete(first)
    two = await llm.complete(second)
    # llama.cpp computed the shared part once: the second call reports it as reused
    assert one.usage.prompt_tokens > 300
    assert two.usage.cached_prompt_tokens >= 0.8 * two.usage.prompt_tokens


async def test_calls_started_together_compute_their_shared_prefix_once(llm):
    shared = "Record: " + " ".join(
        f"item {i} of the ledger reads {7 * i} crowns." for i in range(40)
    )
    pair = [
        LLMRequest(messages=[user(f"{shared}\nYou are the {who}. One word.")], max_tokens=4)
        for who in ("auditor", "clerk")
    ]
    replies = await asyncio.gather(*(llm.complete(r) for r in pair))
    # started at once, yet one of them waited for the other's slot and reused its prefix
    reused = sorted(r.usage.cached_prompt_tokens or 0 for r in replies)
    assert replies[0].usage.prompt_tokens > 300
    assert reused[0] < 0.2 * replies[0].usage.prompt_tokens  # the first computed it
    assert reused[1] >= 0.8 * replies[1].usage.prompt_tokens  # the second reused it
