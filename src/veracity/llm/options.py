"""Backend options: how each registered LLM backend declares and builds from its options.

A backend registered under ``veracity.llms`` is either a class with

- ``options_class``: a pydantic model of its options (defaults and ranges, unknown keys
  refused), and
- ``from_options(model, options, progress)``: the backend built from a model name and
  a validated ``options_class`` instance,

or (older plugins) a plain callable ``(llm_config, progress) -> LLM``. The composition
root (`veracity.runtime.resolve_llm`) validates a run's backend options with
``options_class`` once, into an `LLMSpec`; `veracity.llm.factory` builds from it without
knowing any backend's fields.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

from veracity.core.bounds import Attempts, Concurrency, Price, RepeatPenalty, Seconds
from veracity.core.config import BACKEND_OPTION_KEYS, LLMConfig
from veracity.core.infra import CacheMode

# Penalty on recently generated tokens, sent alike to the embedded model and to endpoints
# that take it (llama.cpp, vLLM, local servers); 1.0 turns it off. 1.1 stops small models
# looping (e.g. "1.1.1.1…" inside a JSON string, seen with SmolLM2-135M).
DEFAULT_REPEAT_PENALTY = 1.1


class BackendOptions(BaseModel):
    """Base of every backend's options; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # per-request limit in seconds; None: scaled by max_tokens and the measured speed
    timeout_s: Seconds | None = Field(default=None, gt=0)
    repeat_penalty: RepeatPenalty = DEFAULT_REPEAT_PENALTY


class NoOptions(BaseModel):
    """The options of a backend that declares none (a plain-callable plugin)."""

    model_config = ConfigDict(extra="allow", frozen=True)


def options_class(backend: Any) -> type[BaseModel] | None:
    """The options model a registered backend declares (None: a plain callable)."""
    cls = getattr(backend, "options_class", None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseModel) else None


class LLMSpec(BaseModel):
    """The resolved model of a run: backend, model, the backend's own typed options and
    the shared options (cache, concurrency, retries, prices), every default filled in.

    Built once from a run's ``llm:`` section by `veracity.runtime.resolve_llm`;
    `veracity.llm.factory` builds the model from it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str
    model: str
    options: SerializeAsAny[BaseModel]
    cache_mode: CacheMode
    user_cache: bool
    max_concurrency: Concurrency = Field(ge=1)
    max_attempts: Attempts = Field(ge=1)
    prices: dict[str, tuple[Price, Price] | tuple[Price, Price, Price]] = Field(
        default_factory=dict
    )

    def to_config(self) -> LLMConfig:
        """The same model as a run file's flat ``llm:`` section."""
        shared = self.model_dump(exclude={"options"})
        opts = self.options.model_dump()
        declared = {k: opts.pop(k) for k in list(opts) if k in BACKEND_OPTION_KEYS}
        return LLMConfig.model_validate({**shared, **declared, "options": opts})
