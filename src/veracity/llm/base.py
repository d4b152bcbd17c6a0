"""The LLM protocol: one async call shape for every backend.

`LLM.complete(LLMRequest) -> LLMResponse`. Backends declare what they can do in
`Capabilities`; callers that need JSON-schema output or token logprobs check it (the
structured-output helper and the probability helpers in this package do so for you).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from veracity.core.bounds import RepeatPenalty
from veracity.core.errors import (  # noqa: F401  (re-exported)
    CacheMiss,
    LLMAuthError,
    LLMBadReply,
    LLMError,
    LLMRateLimited,
    LLMRequestError,
    LLMServerError,
    LLMTimeout,
    LLMTransientError,
    ModelNotAvailable,
    StructuredOutputError,
)

Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    content: str


class LLMRequest(BaseModel):
    """One chat completion request.

    Attributes:
        messages: the conversation.
        temperature: sampling temperature; 0 is greedy and cacheable.
        max_tokens: completion length cap.
        stop: stop strings.
        json_schema: a JSON schema the reply must satisfy (constrained decoding where the
            backend supports it).
        logprobs: return per-token log-probabilities.
        top_logprobs: how many alternatives per token (requires `logprobs`).
        seed: sampling seed where the backend honours it.
        repeat_penalty: penalty on recently generated tokens where the backend has one
            (1.0: none; None: the backend's own setting). Calls whose answer token's
            probabilities are read ask for 1.0: a penalty applied after the logprobs are
            reported would let the decoded answer differ from the most probable one.
        tag: a short label for traces (e.g. the agent role); not sent to the model and
            not part of the cache key.
    """

    model_config = ConfigDict(extra="forbid")

    messages: list[Message]
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int = Field(default=512, ge=1, le=65536)
    stop: list[str] = Field(default_factory=list)
    json_schema: dict[str, Any] | None = None
    logprobs: bool = False
    top_logprobs: int | None = Field(default=None, ge=0, le=20)
    seed: int | None = Field(default=None, ge=-(2**63), le=2**63 - 1)  # a 64-bit seed
    repeat_penalty: RepeatPenalty | None = None
    tag: str = ""

    @field_validator("messages")
    @classmethod
    def _non_empty(cls, v: list[Message]) -> list[Message]:
        if not v:
            raise ValueError("a request needs at least one message")
        return v

    def cache_key(self, backend_id: str) -> str:
        """Hash of the normalised request plus the backend identity (never a key)."""
        body = self.model_dump(exclude={"tag"})
        if body["repeat_penalty"] is None:  # keys of requests that do not set it stay as
            del body["repeat_penalty"]  # they were before the field existed
        body["messages"] = [
            {"role": m["role"], "content": m["content"].strip()} for m in body["messages"]
        ]
        blob = json.dumps({"backend": backend_id, "request": body}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()


LOGPROB_SLACK = 1e-3  # servers round: a log-probability up to this far above 0 reads as 0


def _logprob(value: float) -> float:
    """A log-probability: a finite number <= 0 (tiny positive rounding is read as 0)."""
    if not math.isfinite(value) and value != -math.inf:
        raise ValueError(f"log-probability {value!r} is not a number")
    if value > LOGPROB_SLACK:
        raise ValueError(f"log-probability {value!r} is above 0")
    return max(min(value, 0.0), -1e4)  # -inf (probability 0) is kept as a very small number


class TopLogprob(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str
    logprob: float

    @field_validator("logprob")
    @classmethod
    def _finite(cls, v: float) -> float:
        return _logprob(v)


class TokenLogprob(BaseModel):
    model_config = ConfigDict(extra="forbid")

    token: str
    logprob: float
    top: list[TopLogprob] = Field(default_factory=list)

    @field_validator("logprob")
    @classmethod
    def _finite(cls, v: float) -> float:
        return _logprob(v)

    @property
    def prob(self) -> float:
        return math.exp(self.logprob)


class TokenUsage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = Field(default=0, ge=0)
    completion_tokens: int = Field(default=0, ge=0)
    # of prompt_tokens, those the server reused from its prefix cache instead of computing
    cached_prompt_tokens: int = Field(default=0, ge=0)


class LLMResponse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    parsed: Any = None  # the validated object when a schema or output model was given
    logprobs: list[TokenLogprob] | None = None
    usage: TokenUsage = Field(default_factory=TokenUsage)
    latency_s: float = 0.0
    model: str = ""
    finish_reason: str | None = None
    cached: bool = False


class Capabilities(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    json_schema: bool = False
    logprobs: bool = False
    max_top_logprobs: int = 0
    seed: bool = False
    context_window: int | None = None  # tokens the model can attend to, when known
    # runs on this machine (in process or on localhost): no per-token fee to account for
    local: bool = False
    # the server keeps each prompt's prefix in one of a few slots (llama.cpp): requests
    # that share a prompt reuse it one after another, while concurrent ones are spread
    # over slots that must each compute it again (vLLM, SGLang and hosted APIs share one
    # prefix cache between concurrent requests)
    slot_cache: bool = False


@runtime_checkable
class LLM(Protocol):
    """Anything that completes chat requests.

    `backend_id` identifies backend + model for caching and traces; it must never
    contain a secret.
    """

    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def backend_id(self) -> str: ...

    async def complete(self, request: LLMRequest) -> LLMResponse: ...


def tag_fields(tag: str) -> dict[str, str | int]:
    """What a request tag says, for the typed ``llm_call`` event.

    Tags read ``<purpose>[:<phase>]:<round>[:sample<i>]`` (``stop:2``,
    ``politician:rebuttal:2``, ``round_judge:3:sample1``): the purpose is the first part,
    the round the first number, the sample index the number after ``sample``. Parts a
    tag lacks are left out.
    """
    parts = tag.split(":") if tag else []
    out: dict[str, str | int] = {}
    if parts and parts[0]:
        out["purpose"] = parts[0]
    number = next((p for p in parts[1:] if p.isdigit()), None)
    if number is not None:
        out["round"] = int(number)
    sample = next((p[6:] for p in parts[1:] if p.startswith("sample") and p[6:].isdigit()), None)
    if sample is not None:
        out["sample"] = int(sample)
    return out


# --------------------------------------------------------------------------- errors


def user(content: str) -> Message:
    return Message(role="user", content=content)


def system(content: str) -> Message:
    return Message(role="system", content=content)


def assistant(content: str) -> Message:
    return Message(role="assistant", content=content)
