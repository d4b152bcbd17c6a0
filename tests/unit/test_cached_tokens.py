"""Cached prompt tokens: read from every server's own report, summed into Usage and
priced at the cached-input rate (issue "pay for shared context once")."""

from __future__ import annotations

import pytest

from veracity.core import context
from veracity.llm.base import Capabilities, LLMRequest, LLMResponse, TokenUsage, user
from veracity.llm.chat_format import parse_chat_completion
from veracity.llm.client import DEFAULT_PRICES, ManagedLLM, priced


def _body(**extra):
    return {"choices": [{"message": {"content": "ok"}}], "model": "m", **extra}


# Bodies shaped as each server sends them (fields as documented / as llama.cpp answered).
OPENAI = _body(
    usage={
        "prompt_tokens": 1200,
        "completion_tokens": 20,
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
    }
)
DEEPSEEK = _body(
    usage={
        "prompt_tokens": 900,
        "completion_tokens": 12,
        "prompt_cache_hit_tokens": 640,
        "prompt_cache_miss_tokens": 260,
    }
)
LLAMA_CPP = _body(  # as xllamacpp answered on this machine (usage and timings)
    usage={
        "completion_tokens": 8,
        "prompt_tokens": 921,
        "total_tokens": 929,
        "prompt_tokens_details": {"cached_tokens": 910},
    },
    timings={"cache_n": 910, "prompt_n": 11, "prompt_ms": 238.6},
)
LLAMA_CPP_OLD = _body(  # older llama.cpp: the count only in timings
    usage={"prompt_tokens": 500, "completion_tokens": 8}, timings={"cache_n": 480, "prompt_n": 20}
)
VLLM = _body(
    usage={
        "prompt_tokens": 300,
        "completion_tokens": 4,
        "prompt_tokens_details": {"cached_tokens": 288},
    }
)
PLAIN = _body(usage={"prompt_tokens": 50, "completion_tokens": 4})


@pytest.mark.parametrize(
    ("body", "cached"),
    [
        (OPENAI, 1024),
        (DEEPSEEK, 640),
        (LLAMA_CPP, 910),
        (LLAMA_CPP_OLD, 480),
        (VLLM, 288),
        (PLAIN, 0),
        (_body(), 0),
    ],
)
def test_each_servers_cached_count_is_read(body, cached):
    assert parse_chat_completion(body).usage.cached_prompt_tokens == cached


def test_a_cached_count_above_the_prompt_is_capped():
    body = _body(
        usage={
            "prompt_tokens": 10,
            "completion_tokens": 1,
            "prompt_tokens_details": {"cached_tokens": 99},
        }
    )
    assert parse_chat_completion(body).usage.cached_prompt_tokens == 10


def test_cached_input_is_billed_at_the_cached_rate_and_never_free_without_one():
    full, out, cached = DEFAULT_PRICES["gpt-4o"]
    assert priced((full, out, cached), 1200, 20, 1024) == pytest.approx(
        (176 * full + 1024 * cached + 20 * out) / 1e6
    )
    # a price without a cached rate bills cached input at the full input rate
    assert priced((full, out), 1200, 20, 1024) == pytest.approx((1200 * full + 20 * out) / 1e6)


class Reporting:
    capabilities = Capabilities()
    backend_id = "reporting"

    def __init__(self, model: str, cached: int):
        self.model, self.cached = model, cached

    async def complete(self, request):
        usage = TokenUsage(
            prompt_tokens=1000, completion_tokens=10, cached_prompt_tokens=self.cached
        )
        return LLMResponse(text="ok", usage=usage, model=self.model)


async def test_usage_trace_and_cost_carry_the_cached_tokens():
    llm = ManagedLLM(Reporting("deepseek-chat", 800), cache=None)
    with context.check_context() as ctx:
        await llm.complete(LLMRequest(messages=[user("a")]))
        await llm.complete(LLMRequest(messages=[user("b")]))
    u = ctx.usage
    assert (u.prompt_tokens, u.cached_prompt_tokens) == (2000, 1600)
    inp, out, hit = DEFAULT_PRICES["deepseek-chat"]
    assert u.cost_usd == pytest.approx(2 * (200 * inp + 800 * hit + 10 * out) / 1e6)
    event = ctx.trace.of_kind("llm_call")[0]
    assert event.data["cached_prompt_tokens"] == 800


async def test_an_unknown_model_stays_unpriced_with_cached_tokens():
    llm = ManagedLLM(Reporting("acme-9", 800), cache=None)
    with context.check_context() as ctx:
        await llm.complete(LLMRequest(messages=[user("a")]))
    assert (ctx.usage.cost_usd, ctx.usage.unpriced_llm_calls) == (0.0, 1)
    assert ctx.usage.cached_prompt_tokens == 800


def test_the_cli_line_and_run_metrics_show_reused_prompt_tokens():
    from veracity.cli.render import usage_line
    from veracity.core.types import Usage, Verdict
    from veracity.evaluation.metrics import usage_stats

    used = Usage(prompt_tokens=5000, completion_tokens=80, cached_prompt_tokens=4100, llm_calls=4)
    verdict = Verdict(label="TRUE", label_space="liar3", method="radar", usage=used)
    assert "(4,100 prompt tokens reused)" in usage_line(verdict)
    assert "reused" not in usage_line(
        Verdict(label="TRUE", label_space="liar3", method="radar", usage=Usage())
    )
    stats = usage_stats([used, used.model_dump()], [1.0, 2.0])
    assert (stats.prompt_tokens, stats.cached_prompt_tokens) == (10000, 8200)
    # metrics stored before the field existed still read back (as 0)
    old = stats.model_dump(exclude={"cached_prompt_tokens"})
    assert type(stats).model_validate(old).cached_prompt_tokens == 0


async def test_a_run_files_price_may_name_its_cached_input_rate():
    from veracity.core.config import LLMConfig
    from veracity.runtime import resolve_llm

    spec = resolve_llm(
        LLMConfig(backend="openai", model="my-model", prices={"my-model": [1, 4, 0.1]})
    )
    assert spec.prices["my-model"] == (1.0, 4.0, 0.1)
    llm = ManagedLLM(Reporting("my-model", 800), cache=None, prices=spec.prices)
    with context.check_context() as ctx:
        await llm.complete(LLMRequest(messages=[user("a")]))
    assert ctx.usage.cost_usd == pytest.approx((200 * 1 + 800 * 0.1 + 10 * 4) / 1e6)
