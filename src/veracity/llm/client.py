"""`ManagedLLM`: what every backend gets for free.

Wraps any `LLM` with, in this order: the response cache (record/replay), a concurrency
limit, retries with exponential backoff and jitter on transient faults, and accounting
(tokens, calls, cost, a trace event per call) into the running check's context.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeVar

from veracity.core import context
from veracity.core.events import Fault
from veracity.core.infra import LoopSemaphore, RetryPolicy, retrying
from veracity.llm.base import (
    LLM,
    Capabilities,
    LLMBadReply,
    LLMRequest,
    LLMResponse,
    LLMTimeout,
    LLMTransientError,
    tag_fields,
)
from veracity.llm.cache import ResponseCache
from veracity.llm.read_through import ReadThroughCache

log = logging.getLogger(__name__)

T = TypeVar("T")

# USD per million tokens (input, output, cached input), list prices as published by each
# provider; used only for the cost estimate in Usage. Override or extend through `prices=`
# (a price without its third number bills cached input at the full input rate: an upper
# bound, never free).
Price = tuple[float, float] | tuple[float, float, float]
DEFAULT_PRICES: dict[str, Price] = {
    "gpt-4o": (2.50, 10.00, 1.25),
    "gpt-4o-mini": (0.15, 0.60, 0.075),
    "gpt-4.1": (2.00, 8.00, 0.50),
    "gpt-4.1-mini": (0.40, 1.60, 0.10),
    "gpt-5-mini": (0.25, 2.00, 0.025),
    "deepseek-chat": (0.27, 1.10, 0.07),
    "deepseek-reasoner": (0.55, 2.19, 0.14),
}


def priced(price: Price, prompt: int, completion: int, cached_prompt: int = 0) -> float:
    """USD for one reply at `price`; cached prompt tokens at the cached-input rate (the
    input rate when the price names none)."""
    cached = min(cached_prompt, prompt)
    cached_rate = price[2] if len(price) > 2 else price[0]
    return ((prompt - cached) * price[0] + cached * cached_rate + completion * price[1]) / 1e6


class SharedLimit(Protocol):
    """A concurrency limit that wraps one call (`LoopSemaphore` is one)."""

    async def run(self, call: Callable[[], Awaitable[T]]) -> T: ...


class ManagedLLM:
    """An `LLM` with caching, concurrency limit, retries and accounting.

    Args:
        inner: the backend.
        cache: a `ResponseCache` (or a run's `ReadThroughCache`), or None for no caching.
        max_concurrency: most requests in flight at once through this object.
        retry: retry policy for `LLMTransientError`s.
        prices: USD per million (input, output[, cached input]) tokens by model name
            (`Price`). Replies are priced
            as the requested model; an entry here for the model an endpoint reports
            instead maps that reply to this price.
        trace_prompts: store full prompts and replies in the trace (default on; turn off
            for very large batch runs where only the verdicts matter).
        run_seed: when set, every sampled request (temperature > 0) is sent with a seed
            derived from the run seed, the request's own seed and the request itself
            (`request_seed`): the same run seed gives the same samples whichever
            parallel slot serves a request and in whatever order, and another run seed
            gives other samples. Greedy requests are left as they are.
        shared_limit: a second limit on live calls, shared with other processes (the
            global limit of a Ray run); anything with an async ``run(call)``, like
            `LoopSemaphore`. Cached replies pass neither limit.
    """

    def __init__(
        self,
        inner: LLM,
        *,
        cache: ResponseCache | ReadThroughCache | None = None,
        max_concurrency: int = 8,
        retry: RetryPolicy | None = None,
        prices: Mapping[str, Price] | None = None,
        trace_prompts: bool = True,
        run_seed: int | None = None,
        shared_limit: SharedLimit | None = None,
    ):
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.inner = inner
        self.cache = cache
        self.retry = retry or RetryPolicy()
        self.user_prices = dict(prices or {})
        self.prices = {**DEFAULT_PRICES, **self.user_prices}
        self.trace_prompts = trace_prompts
        self.run_seed = run_seed
        self.max_concurrency = max_concurrency
        self._limit = LoopSemaphore(max_concurrency)
        self.shared_limit = shared_limit

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    @property
    def backend_id(self) -> str:
        return self.inner.backend_id

    @property
    def requested_model(self) -> str | None:
        """The model this backend was asked to use (None when it does not say)."""
        for attr in ("model", "name"):
            value = getattr(self.inner, attr, None)
            if isinstance(value, str) and value:
                return value
        return None

    def price_key(self, response: LLMResponse) -> str:
        """The model a reply is priced as: the requested one, unless the user's own
        `prices` name the model the endpoint reported (a proxy or router may answer
        with another model's name, and must not change the bill silently)."""
        if response.model and response.model in self.user_prices:
            return response.model
        return self.requested_model or response.model

    def cost(self, response: LLMResponse) -> float | None:
        """USD for this response; 0 for a local model, None when no price is known."""
        key = self.price_key(response)
        price = self.prices.get(key) or self.prices.get(key.rsplit("/", 1)[-1])
        if price is None:
            return 0.0 if self.inner.capabilities.local else None
        u = response.usage
        return priced(price, u.prompt_tokens, u.completion_tokens, u.cached_prompt_tokens)

    async def complete(self, request: LLMRequest, *, accept: Accept | None = None) -> LLMResponse:
        """Answer `request` from the cache or the backend.

        Every reply is validated before it is cached or returned: one that does not
        survive a JSON round trip (a log-probability that is not finite, ...) is a
        retried `LLMBadReply`. `accept`, when given, is the caller's own check (e.g. the
        reply parses into the expected object): a deterministic reply that fails it is
        returned but not cached, and such a reply found in the cache is dropped and asked
        for again, so a bad reply never poisons later runs.
        """
        if self.run_seed is not None and request.temperature > 0:
            request = request.model_copy(update={"seed": request_seed(self.run_seed, request)})
        response = self._from_cache(request, accept)
        if response is None:
            response = await self._call_with_retries(request)
            if self.cache is not None and (request.temperature > 0 or _accepts(accept, response)):
                self.cache.put(request, self.backend_id, response)
        self._record(request, response)
        return response

    def _from_cache(self, request: LLMRequest, accept: Accept | None) -> LLMResponse | None:
        if self.cache is None:
            return None
        hit = self.cache.get(request, self.backend_id)
        if hit is None or self.cache.mode == "replay" or _accepts(accept, hit):
            return hit
        self.cache.drop(request, self.backend_id)
        context.current().emit(
            Fault(name=request.tag or "llm", error="cached reply failed validation; asked again")
        )
        return None

    async def _call_with_retries(self, request: LLMRequest) -> LLMResponse:
        ctx = context.current()
        tag = request.tag or "llm"

        async def call() -> LLMResponse:
            started = time.perf_counter()
            response = checked(await self.inner.complete(request))
            if not response.latency_s:
                response.latency_s = round(time.perf_counter() - started, 4)
            return response

        async def attempt() -> LLMResponse:
            if self.shared_limit is None:
                return await self._limit.run(call)
            shared = self.shared_limit
            return await self._limit.run(lambda: shared.run(call))

        def retry(exc: BaseException, n: int, delay: float) -> None:
            error = f"{type(exc).__name__}: {exc}"
            ctx.emit(
                Fault(name=tag, error=error, attempt=n, retry_in_s=round(delay, 3), **_timeout(exc))
            )
            if isinstance(exc, LLMTimeout) and exc.local:
                log.warning("%s; %s", exc, _LOCAL_RETRY)

        def give_up(exc: BaseException, n: int) -> None:
            error = f"{type(exc).__name__}: {exc}"
            ctx.emit(Fault(name=tag, error=error, attempts=n, gave_up=True))

        return await retrying(
            attempt,
            self.retry,
            retry_on=(LLMTransientError,),
            retry_after=lambda exc: getattr(exc, "retry_after", None),
            on_retry=retry,
            on_give_up=give_up,
        )

    def _record(self, request: LLMRequest, response: LLMResponse) -> None:
        data: dict = {
            "model": response.model,
            "latency_s": response.latency_s,
            "finish_reason": response.finish_reason,
            "temperature": request.temperature,
            "request_hash": request.cache_key(self.backend_id)[:16],
            **tag_fields(request.tag),
        }
        priced_as = self.price_key(response)
        if priced_as != response.model:  # the endpoint answered with another model's name
            data["priced_as"] = priced_as
        if self.trace_prompts:
            data["messages"] = [m.model_dump() for m in request.messages]
            data["response"] = response.text
        context.current().record_llm(
            name=request.tag or "llm",
            prompt_tokens=response.usage.prompt_tokens,
            completion_tokens=response.usage.completion_tokens,
            cached_prompt_tokens=response.usage.cached_prompt_tokens,
            cached=response.cached,
            cost_usd=self.cost(response),
            **data,
        )


def request_seed(run_seed: int, request: LLMRequest) -> int:
    """A 31-bit seed from the run seed, the request's own seed (a sample's index, say)
    and the request's content (messages, schema, sampling settings)."""
    key = request.model_copy(update={"seed": None}).cache_key("")
    digest = hashlib.sha256(f"{run_seed}:{request.seed}:{key}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


Accept = Callable[[LLMResponse], object]
"""A caller's check of a reply: returns anything when usable, raises ValueError when not."""


def _accepts(accept: Accept | None, response: LLMResponse) -> bool:
    if accept is None:
        return True
    try:
        accept(response)
    except ValueError:  # pydantic's ValidationError is a ValueError
        return False
    return True


def checked(response: LLMResponse) -> LLMResponse:
    """`response` if it survives the JSON round trip the cache will make of it.

    Raises:
        LLMBadReply: it does not (a value a backend put in without validation).
    """
    try:
        return LLMResponse.model_validate_json(response.model_dump_json())
    except ValueError as exc:
        raise LLMBadReply(f"unusable reply from the backend: {str(exc).splitlines()[0]}") from None


async def complete_accepted(llm: LLM, request: LLMRequest, accept: Accept) -> LLMResponse:
    """`llm.complete(request)`, with `accept` gating the cache when `llm` is managed."""
    if isinstance(llm, ManagedLLM):
        return await llm.complete(request, accept=accept)
    return await llm.complete(request)


_LOCAL_RETRY = "retrying from the start with a longer limit (a local server keeps no partial reply)"


def _timeout(exc: BaseException) -> dict[str, Any]:
    """Trace fields that say how a timeout is retried."""
    if not isinstance(exc, LLMTimeout):
        return {}
    data: dict[str, Any] = {"timeout_s": exc.timeout_s, "local": exc.local}
    if exc.local:
        data["note"] = _LOCAL_RETRY
    return data


def ensure_managed(llm: LLM) -> ManagedLLM:
    """`llm` itself when already managed, else wrapped (no cache) for retries and accounting."""
    return llm if isinstance(llm, ManagedLLM) else ManagedLLM(llm)
