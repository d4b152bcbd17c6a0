"""The OpenAI chat-completion format both model backends speak: the request body
(`chat_payload`) and the reply, validated field by field before anything reads or caches
it (`parse_chat_completion`). The HTTP client sends the body to an endpoint; the embedded
model hands the same body to llama.cpp in process.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veracity.llm.base import (
    LLMBadReply,
    LLMRequest,
    LLMResponse,
    TokenLogprob,
    TokenUsage,
    TopLogprob,
)


def chat_payload(
    request: LLMRequest,
    *,
    model: str | None = None,
    json_mode: str = "json_schema",
    logprobs: bool = True,
    max_top_logprobs: int | None = None,
    repeat_penalty: float | None = None,
    penalty_field: str = "repeat_penalty",
) -> dict[str, Any]:
    """The OpenAI-style chat-completion body for `request` (HTTP and embedded backends).

    Sampling parameters go into the body the same way for every backend, so one model
    answers the same whether it runs in process or behind a llama.cpp server.

    Args:
        request: the request.
        model: the ``model`` field (None: left out, as in process).
        json_mode: how a JSON schema is asked for: ``json_schema`` (constrained),
            ``json_object`` (any JSON) or ``none``.
        logprobs: whether the backend returns logprobs (else they are not asked).
        max_top_logprobs: the backend's cap on alternatives (None: no cap).
        repeat_penalty: penalty on recently generated tokens (None: not sent; nor when
            the request asks for logprobs, so that they describe the choice made). A
            request's own `repeat_penalty` replaces it where one is sent (answer-token
            samples ask for 1.0).
        penalty_field: the name the backend gives it (llama.cpp ``repeat_penalty``,
            vLLM ``repetition_penalty``).
    """
    body: dict[str, Any] = {"model": model} if model is not None else {}
    body.update(
        messages=[m.model_dump() for m in request.messages],
        temperature=request.temperature,
        max_tokens=request.max_tokens,
    )
    if request.stop:
        body["stop"] = request.stop
    if request.seed is not None:
        body["seed"] = request.seed
    if repeat_penalty is not None and request.repeat_penalty is not None:
        repeat_penalty = request.repeat_penalty
    if repeat_penalty is not None and not (request.logprobs and logprobs):
        # llama.cpp reports probabilities from before the penalty: with one, the token
        # chosen is not the most probable one reported (label answers on LIAR disagreed
        # with their own most probable label 6 times in 40), so a request whose
        # probabilities are read is sent without it (benchmarks/label_probs.py)
        body[penalty_field] = repeat_penalty
    if request.json_schema is not None and json_mode == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": request.json_schema},
        }
    elif request.json_schema is not None and json_mode == "json_object":
        body["response_format"] = {"type": "json_object"}
    if request.logprobs and logprobs:
        body["logprobs"] = True
        if request.top_logprobs:
            cap = max_top_logprobs if max_top_logprobs is not None else request.top_logprobs
            body["top_logprobs"] = min(request.top_logprobs, cap)
    return body


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class _WireTop(_Wire):
    token: str
    logprob: float


class _WireToken(_WireTop):
    top_logprobs: list[_WireTop] | None = None


class _WireLogprobs(_Wire):
    content: list[_WireToken] | None = None


class _WireMessage(_Wire):
    content: str | None = None


class _WireChoice(_Wire):
    message: _WireMessage | None = None
    logprobs: _WireLogprobs | None = None
    finish_reason: str | None = None


class _WirePromptDetails(_Wire):
    cached_tokens: int | None = Field(default=None, ge=0)


class _WireUsage(_Wire):
    prompt_tokens: int | None = Field(default=None, ge=0)
    completion_tokens: int | None = Field(default=None, ge=0)
    # OpenAI, vLLM and llama.cpp: usage.prompt_tokens_details.cached_tokens
    prompt_tokens_details: _WirePromptDetails | None = None
    # DeepSeek: usage.prompt_cache_hit_tokens (and _miss_tokens)
    prompt_cache_hit_tokens: int | None = Field(default=None, ge=0)


class _WireTimings(_Wire):
    cache_n: int | None = Field(default=None, ge=0)  # llama.cpp: prompt tokens reused


class _WireCompletion(_Wire):
    """The part of an OpenAI chat-completion body we read, with the types it promises."""

    choices: list[_WireChoice] = Field(min_length=1)
    usage: _WireUsage | None = None
    timings: _WireTimings | None = None
    model: str | None = None

    def cached_prompt_tokens(self) -> int:
        """Prompt tokens the server says it reused from its cache, whichever way it says
        so (at most the prompt's own count)."""
        usage = self.usage or _WireUsage()
        details = usage.prompt_tokens_details
        found = next(
            (
                n
                for n in (
                    details.cached_tokens if details else None,
                    usage.prompt_cache_hit_tokens,
                    self.timings.cache_n if self.timings else None,
                )
                if n is not None
            ),
            0,
        )
        return min(found, usage.prompt_tokens) if usage.prompt_tokens is not None else found


def sampling_suffix(repeat_penalty: float | None) -> str:
    """What the sampling settings add to a backend id (and so to cache keys)."""
    if repeat_penalty is None or repeat_penalty == 1.0:
        return ""
    return f":rp{repeat_penalty:g}"


def parse_chat_completion(
    data: Any, *, latency: float = 0.0, fallback_model: str = ""
) -> LLMResponse:
    """Turn an OpenAI-style chat-completion body into an `LLMResponse`.

    Raises:
        LLMBadReply: the body is not a chat completion of the documented shape (no
            choices, a choice that is not an object, a token without text, a
            log-probability that is not a finite number <= 0, ...). It is retried like
            a server fault and never cached.
    """
    try:
        wire = _WireCompletion.model_validate(data)
        choice = wire.choices[0]
        usage = wire.usage or _WireUsage()
        return LLMResponse(
            text=(choice.message.content if choice.message else None) or "",
            logprobs=_logprobs(choice.logprobs),
            usage=TokenUsage(
                prompt_tokens=usage.prompt_tokens or 0,
                completion_tokens=usage.completion_tokens or 0,
                cached_prompt_tokens=wire.cached_prompt_tokens(),
            ),
            latency_s=round(latency, 4),
            model=wire.model or fallback_model,
            finish_reason=choice.finish_reason,
        )
    except ValidationError as exc:
        shown = str(data)[:200]
        raise LLMBadReply(f"malformed chat completion ({_problem(exc)}): {shown}") from None


def _logprobs(wire: _WireLogprobs | None) -> list[TokenLogprob] | None:
    if wire is None or not wire.content:
        return None
    return [
        TokenLogprob(
            token=t.token,
            logprob=t.logprob,
            top=[TopLogprob(token=a.token, logprob=a.logprob) for a in t.top_logprobs or []],
        )
        for t in wire.content
    ]


def _problem(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "body"
    return f"{where}: {err['msg']}"
