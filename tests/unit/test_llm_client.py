import asyncio

import pytest

from veracity.core import context
from veracity.core.types import cost_text
from veracity.llm.base import (
    Capabilities,
    LLMAuthError,
    LLMRateLimited,
    LLMRequest,
    LLMResponse,
    LLMServerError,
    TokenUsage,
    user,
)
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM, RetryPolicy, ensure_managed
from veracity.testing import ScriptedLLM

FAST = RetryPolicy(max_attempts=3, base_delay_s=0.0, max_delay_s=0.0)


class Flaky:
    """Fails with the given errors, then answers."""

    capabilities = Capabilities()
    backend_id = "flaky"

    def __init__(self, errors):
        self.errors = list(errors)
        self.calls = 0

    async def complete(self, request):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return LLMResponse(
            text="ok", usage=TokenUsage(prompt_tokens=10, completion_tokens=5), model="gpt-4o-mini"
        )


def _req(**kw):
    return LLMRequest(messages=[user("q")], **kw)


async def test_retries_transient_errors_then_succeeds_and_traces_them():
    inner = Flaky([LLMServerError("502"), LLMRateLimited("429", retry_after=0.0)])
    llm = ManagedLLM(inner, retry=FAST)
    with context.check_context() as ctx:
        response = await llm.complete(_req(tag="judge"))
    assert response.text == "ok" and inner.calls == 3
    errors = ctx.trace.of_kind("error")
    assert [e.data["attempt"] for e in errors] == [1, 2]
    assert ctx.usage.llm_calls == 1


async def test_gives_up_after_max_attempts():
    inner = Flaky([LLMServerError("a"), LLMServerError("b"), LLMServerError("c")])
    with context.check_context() as ctx, pytest.raises(LLMServerError):
        await ManagedLLM(inner, retry=FAST).complete(_req())
    assert inner.calls == 3
    assert ctx.trace.of_kind("error")[-1].data["gave_up"] is True


async def test_auth_errors_are_not_retried():
    inner = Flaky([LLMAuthError("bad key")])
    with pytest.raises(LLMAuthError):
        await ManagedLLM(inner, retry=FAST).complete(_req())
    assert inner.calls == 1


def test_backoff_honours_retry_after_and_caps():
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=5.0)
    assert policy.delay(0, retry_after=2.5) == 2.5
    assert policy.delay(0, retry_after=60) == 5.0
    assert all(0 <= policy.delay(10) <= 5.0 for _ in range(50))


async def test_accounting_tokens_cost_and_cached_calls(tmp_path):
    inner = Flaky([])
    llm = ManagedLLM(inner, cache=ResponseCache(tmp_path / "c.sqlite"))
    with context.check_context() as ctx:
        await llm.complete(_req())
        second = await llm.complete(_req())
    assert second.cached and inner.calls == 1
    u = ctx.usage
    assert (u.llm_calls, u.cached_llm_calls, u.prompt_tokens, u.completion_tokens) == (2, 1, 20, 10)
    # gpt-4o-mini list price: $0.15 / $0.60 per million tokens; the cached call costs nothing
    assert u.cost_usd == pytest.approx((10 * 0.15 + 5 * 0.60) / 1e6)
    event = ctx.trace.of_kind("llm_call")[0]
    assert event.data["messages"][0]["content"] == "q" and event.data["response"] == "ok"


class Unpriced(Flaky):
    """A hosted model missing from the price table."""

    async def complete(self, request):
        r = await super().complete(request)
        return r.model_copy(update={"model": "acme-llm-9"})


async def test_unknown_price_is_counted_as_unpriced_not_as_free(tmp_path):
    llm = ManagedLLM(Unpriced([]), cache=ResponseCache(tmp_path / "c.sqlite"))
    with context.check_context() as ctx:
        await llm.complete(_req())
        await llm.complete(_req())  # from the cache: no fee either way
        await llm.complete(_req(temperature=0.5))
    assert (ctx.usage.cost_usd, ctx.usage.unpriced_llm_calls) == (0.0, 2)
    assert cost_text(ctx.usage.cost_usd, ctx.usage.unpriced_llm_calls) == (
        "unknown (2 unpriced calls)"
    )


async def test_a_local_model_without_a_price_is_free():
    local = ScriptedLLM(default="ok")  # declares capabilities.local
    with context.check_context() as ctx:
        await ManagedLLM(local).complete(_req())
    assert (ctx.usage.cost_usd, ctx.usage.unpriced_llm_calls) == (0.0, 0)


def test_cost_text():
    assert cost_text(0.01234) == "0.0123"
    assert cost_text(0.5, 1) == "≥ 0.5000 (+ 1 unpriced call)"
    assert cost_text(0.0, 3) == "unknown (3 unpriced calls)"
    assert cost_text(0.5, currency="$") == "$0.5000"
    assert cost_text(0.5, 2, currency="$") == "≥ $0.5000 (+ 2 unpriced calls)"
    assert cost_text(0.0, 2, currency="$") == "cost unknown (2 unpriced calls)"


async def test_concurrency_limit_is_respected():
    active = 0
    peak = 0

    class Slow(Flaky):
        async def complete(self, request):
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            await asyncio.sleep(0.01)
            active -= 1
            return await super().complete(request)

    llm = ManagedLLM(Slow([]), max_concurrency=3)
    await asyncio.gather(*(llm.complete(_req(temperature=0.5)) for _ in range(10)))
    assert peak == 3


def test_ensure_managed_wraps_once():
    raw = ScriptedLLM()
    managed = ensure_managed(raw)
    assert isinstance(managed, ManagedLLM) and ensure_managed(managed) is managed
    with pytest.raises(ValueError):
        ManagedLLM(raw, max_concurrency=0)


def test_llm_call_events_carry_purpose_round_and_sample_from_the_tag():
    from veracity.llm.base import tag_fields

    assert tag_fields("round_judge:3:sample1") == {
        "purpose": "round_judge",
        "round": 3,
        "sample": 1,
    }
    assert tag_fields("politician:rebuttal:2") == {"purpose": "politician", "round": 2}
    assert tag_fields("domain") == {"purpose": "domain"} and tag_fields("") == {}


async def test_sampled_requests_get_seeds_derived_from_the_run_seed():
    def req(text, temperature=0.8, seed=None):
        return LLMRequest(messages=[user(text)], temperature=temperature, seed=seed, tag="t")

    async def seeds(run_seed, requests):
        inner = ScriptedLLM(default="a")
        llm = ManagedLLM(inner, run_seed=run_seed)
        await asyncio.gather(*(llm.complete(r) for r in requests))
        return sorted(((c.messages[0].content, c.seed) for c in inner.calls), key=str)

    batch = [req("a"), req("b"), req("c", seed=1), req("c", seed=2), req("g", temperature=0.0)]
    first = await seeds(0, batch)
    assert first == await seeds(0, batch[::-1])  # serving order (slot) does not matter
    assert first != await seeds(1, batch)  # another run seed, other samples
    derived = [s for t, s in first if t != "g"]
    assert len(set(derived)) == 4 and all(0 <= s < 2**31 for s in derived)
    assert dict(first)["g"] is None  # greedy requests are left as they are
    assert await seeds(None, batch[:1]) == [("a", None)]  # no run seed: as given
