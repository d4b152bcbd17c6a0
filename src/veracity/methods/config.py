"""The base classes of method configs: `MethodConfig` (unknown keys refused, numbers
checked for every method) and `ChoiceConfig` (the settings of `veracity.llm.choice`
for methods that read a label's probabilities)."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, model_validator

from veracity.core.bounds import MaxTokens, PromptChars, Temperature
from veracity.llm.choice import ChoicePolicy, Estimator, SampleOrder
from veracity.methods.options import check_declaration

_SIZES = ("_tokens", "_chars", "_words")


class MethodConfig(BaseModel):
    """Base of every method's config; unknown keys are errors.

    Numbers are checked here for every method, so a subclass need not bound each field:
    a count (any int field except ``seed``) must be >= 0, a size (``*_tokens``,
    ``*_chars``, ``*_words``) >= 1, a float finite and a ``temperature`` in [0, 2]. A
    field that declares its own bounds (``Field(ge=...)``) keeps them.
    """

    model_config = ConfigDict(extra="forbid")

    # The options a request (REST `method_config`, MCP `options`) may set, beside those
    # of the base classes: booleans, enumerations and bounded numbers only, checked when
    # the class is made (`veracity.methods.options`). Everything else comes only from
    # the operator's run config.
    request_options: ClassVar[tuple[str, ...]] = ()

    # No ``labels`` here: the label space is the run's (`RunSpec.labels`), reaching the
    # method as an object (`MethodParts.labels`); a method's default is its class's
    # `default_labels`.

    @property
    def needs_given_evidence(self) -> bool:
        """Whether this config checks a claim only against the evidence it carries (an
        ``evidence`` setting of ``given``), so an evaluation must hand each claim its
        gold evidence."""
        return getattr(self, "evidence", None) == "given"

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        check_declaration(cls)

    @model_validator(mode="after")
    def _sane_numbers(self) -> MethodConfig:
        for name, field in type(self).model_fields.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                continue
            if any(hasattr(m, "ge") or hasattr(m, "gt") for m in field.metadata):
                continue
            problem = _number_problem(name, value)
            if problem:
                raise ValueError(f"{name} {problem}")
        return self


def _number_problem(name: str, value: float) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return "must be a finite number"
    if name == "temperature" or name.endswith("_temperature"):
        return None if 0.0 <= value <= 2.0 else "must be between 0 and 2"
    if isinstance(value, int) and name != "seed":
        low = 1 if name.endswith(_SIZES) else 0
        return None if value >= low else f"must be at least {low}"
    return None


class ChoiceConfig(MethodConfig):
    """A method config with the settings of `veracity.llm.choice.ask_choice`, for methods
    that read the probabilities of a label or ruling."""

    top_logprobs: int = Field(default=10, ge=0, le=20)  # alternatives read at the answer token
    # auto: logprobs when the backend returns them, else sampling (when samples_k > 0)
    estimator: Estimator = "auto"
    # answers sampled for the probabilities when logprobs give none (0: never sample)
    samples_k: int = Field(default=0, ge=0, le=50)
    sample_temperature: float = Field(default=0.8, gt=0.0, le=2.0)
    # a logprob reading that matched less probability than this is replaced by sampled
    # answers (when samples_k > 0), and the trace says so (0: every reading is used)
    min_matched_mass: float = Field(default=0.0, ge=0.0, le=1.0)
    # auto: one after another where the backend keeps prompts per slot (llama.cpp), so
    # each sample reuses the prompt; concurrent / sequential force either (ChoicePolicy)
    sample_order: SampleOrder = "auto"

    request_options = (
        "top_logprobs", "estimator", "samples_k", "sample_temperature", "min_matched_mass",
        "sample_order",
    )  # fmt: skip

    @property
    def choice(self) -> ChoicePolicy:
        return ChoicePolicy(
            top_logprobs=self.top_logprobs,
            estimator=self.estimator,
            samples=self.samples_k,
            sample_temperature=self.sample_temperature,
            min_mass=self.min_matched_mass,
            sample_order=self.sample_order,
        )


# The settings most methods share, each declared once: its type carries the bounds and
# the meaning, so a config whose paper uses another default states only that default
# (``max_tokens: ReplyTokens = 700``) and keeps both; the mixins below declare the field
# with the default most methods use.
SamplingTemperature = Annotated[
    Temperature, Field(description="sampling temperature of the method's model calls")
]
ReplyTokens = Annotated[
    MaxTokens, Field(ge=1, description="tokens the model may generate in one reply")
]
ResultsPerSearch = Annotated[int, Field(ge=1, le=50, description="results read from a search")]
ResultChars = Annotated[
    PromptChars, Field(ge=50, description="characters of a result's text shown to the model")
]


class GenerationSettings(BaseModel):
    """A config mixin: ``temperature`` and ``max_tokens`` of the method's model calls."""

    temperature: SamplingTemperature = 0.0
    max_tokens: ReplyTokens = 600


class RetrievalSettings(BaseModel):
    """A config mixin for a method that searches one of the run's sources through a
    search tool (`veracity.methods.kit.check_tool`)."""

    source: str | None = Field(
        None, description="the source searched (None: the only source the run has)"
    )
    top_k: ResultsPerSearch = 5
    max_result_chars: ResultChars = 400


def refuse_own_variant(
    method: str, data: Any, moved: dict[str, str], default: str | None = None
) -> Any:
    """`data` (a method config's input) without a ``variant`` key, or a clear refusal.

    A method has no variants of its own: an ablation is an experiment file's variant
    (``variants:``, chosen with ``--config FILE --variant NAME``), one mechanism for every
    method. `moved` maps a name a method once took to the experiment file (under
    ``configs/experiments/``) whose variant of that name sets the same method settings, so
    the refusal says what to run; `default` is a name that meant the defaults (recorded by
    older runs), dropped.

    Raises:
        ValueError: a ``variant`` key other than None or `default`.
    """
    if not isinstance(data, dict) or "variant" not in data:
        return data
    data = dict(data)
    name = data.pop("variant")
    if name is None or name == default:
        return data
    if name not in moved:
        raise ValueError(
            f"{method} takes no `variant`: variants are an experiment file's (`variants:`), "
            "chosen with --config FILE --variant NAME"
        )
    path = f"configs/experiments/{moved[name]}.yaml"
    raise ValueError(
        f"{method}'s own variant {name!r} is now the experiment variant {name!r}: run "
        f"`veracity eval --config {path} --variant {name}`, or give the method settings that "
        f"variant sets in {path} (e.g. with --set)"
    )
