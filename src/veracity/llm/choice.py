"""Ask a model to choose one of a few answers, and read how sure it is.

`ask_choice` is the one way veracity asks for a discrete answer with probabilities: a
label (baselines), a ruling (judges), STOP/CONTINUE (RADAR's stop agent), Yes/No
(S2MAD's subjectivity question). It makes one structured call and reads the per-choice
distribution at the answer token from the reply's log-probabilities (`probs`); where the
backend has none, or none of them matched a choice, it can sample k answers and use
their frequencies instead (`ChoicePolicy.samples`). The result says which estimator
produced the numbers and how much probability mass matched the choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity import context
from veracity.errors import StructuredOutputError
from veracity.llm.base import LLM, LLMResponse, Message
from veracity.llm.probs import (
    ChoiceProbs,
    choice_probabilities,
    sampled_choice_probabilities,
    schema_choices,
)
from veracity.llm.structured import complete_structured, schema_for

Estimator = Literal["auto", "logprobs", "sampling"]


class ChoicePolicy(BaseModel):
    """How `ask_choice` estimates the probabilities of an answer.

    Attributes:
        top_logprobs: alternatives read at the answer token (0: logprobs are not asked).
        estimator: ``auto`` reads logprobs when the backend returns them and samples
            otherwise; ``logprobs`` never samples; ``sampling`` never reads logprobs.
        samples: answers sampled when logprobs give no distribution (0: no sampling;
            the result then has no probabilities).
        sample_temperature: temperature of the sampled answers.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    top_logprobs: int = Field(default=10, ge=0, le=20)
    estimator: Estimator = "auto"
    samples: int = Field(default=0, ge=0, le=50)
    sample_temperature: float = Field(default=0.8, gt=0.0, le=2.0)

    def reads_logprobs(self, llm: LLM) -> bool:
        """Whether the answer's logprobs are requested from `llm`."""
        return self.estimator != "sampling" and self.top_logprobs > 0 and llm.capabilities.logprobs

    def may_sample(self) -> bool:
        return self.estimator != "logprobs" and self.samples > 0


class ChoiceResult(BaseModel):
    """The answer and what is known about its probabilities.

    Attributes:
        label: the choice of the (greedy) reply; None when only samples were drawn.
        value: the validated reply object (None when only samples were drawn).
        probabilities: choice -> probability, or None when no estimate was possible.
        matched_mass: logprob estimator: the probability mass at the answer token that
            matched a choice; sampling: the fraction of samples that named a choice.
        estimator: ``logprobs`` or ``sampling``; None when there are no probabilities.
        samples: answers sampled (sampling estimator).
        response: the raw reply of the greedy call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    label: str | None
    value: Any = Field(default=None, exclude=True)
    probabilities: dict[str, float] | None = None
    matched_mass: float | None = None
    estimator: Literal["logprobs", "sampling"] | None = None
    samples: int = 0
    response: LLMResponse | None = Field(default=None, exclude=True)

    @property
    def confidence(self) -> float | None:
        """Probability of `label` (of the most probable choice when there is no label)."""
        if self.probabilities is None:
            return None
        if self.label is None:
            return max(self.probabilities.values())
        return self.probabilities.get(self.label)

    def with_probs(self, probs: ChoiceProbs) -> ChoiceResult:
        return self.model_copy(
            update={
                "probabilities": probs.probs,
                "matched_mass": probs.mass,
                "estimator": probs.method,
                "samples": probs.samples,
            }
        )


async def ask_choice(
    llm: LLM,
    messages: list[Message],
    output: type[BaseModel],
    field: str,
    choices: Sequence[str],
    *,
    tag: str,
    policy: ChoicePolicy | None = None,
    temperature: float = 0.0,
    max_tokens: int = 256,
    need_answer: bool = True,
) -> ChoiceResult:
    """Ask for `output`, whose `field` takes one of `choices`, and estimate its distribution.

    Args:
        llm: the model.
        messages: the prompt.
        output: the reply model; `field` holds the answer.
        field: the answer's key in the reply (its logprobs are read there).
        choices: the possible answers, as the reply spells them.
        tag: trace label of the call(s).
        policy: how probabilities are estimated (default: logprobs when available, no
            sampling).
        temperature, max_tokens: of the greedy call.
        need_answer: False when only the distribution matters: without usable logprobs
            no greedy call is made, only samples.

    Raises:
        StructuredOutputError: the greedy reply did not validate after its retries, or
            none of the samples named a choice.
    """
    policy = policy or ChoicePolicy()
    with_logprobs = policy.reads_logprobs(llm)
    result = ChoiceResult(label=None)
    if with_logprobs or need_answer or not policy.may_sample():
        reply = await complete_structured(
            llm,
            messages,
            output,
            temperature=temperature,
            max_tokens=max_tokens,
            logprobs=with_logprobs,
            top_logprobs=policy.top_logprobs if with_logprobs else None,
            tag=tag,
        )
        label = str(getattr(reply.value, field))
        result = ChoiceResult(label=label, value=reply.value, response=reply.response)
        probs = None
        if with_logprobs:
            exact = exact_choices(llm, output, field, choices)
            probs = choice_probabilities(reply.response, choices, field=field, exact=exact)
        if probs is not None:
            return result.with_probs(probs)
        if not policy.may_sample():
            return result
        if with_logprobs:
            context.current().event(
                "note", tag, note="no usable logprobs at the answer token; sampling instead"
            )
    sampled = await _sample(llm, messages, output, field, choices, tag, policy, max_tokens)
    return result.with_probs(sampled)


def exact_choices(llm: LLM, output: type[BaseModel], field: str, choices: Sequence[str]) -> bool:
    """Whether the reply's `field` is decoded under a schema that spells the choices.

    True when the backend constrains decoding to the JSON schema and the schema lets
    `field` take only strings among `choices` (a `Literal` of them): the logprobs are
    then read over the tokens that schema allows, matched case-sensitively.
    """
    if not llm.capabilities.json_schema:
        return False
    allowed = schema_choices(schema_for(output), field)
    return allowed is not None and allowed <= set(choices)


async def _sample(
    llm: LLM,
    messages: list[Message],
    output: type[BaseModel],
    field: str,
    choices: Sequence[str],
    tag: str,
    policy: ChoicePolicy,
    max_tokens: int,
) -> ChoiceProbs:
    """Frequencies of `field` over `policy.samples` answers at the sampling temperature."""

    async def one(i: int) -> str | None:
        try:
            reply = await complete_structured(
                llm,
                messages,
                output,
                temperature=policy.sample_temperature,
                max_tokens=max_tokens,
                seed=i,
                tag=f"{tag}:sample{i}",
            )
        except StructuredOutputError as exc:
            context.current().event("error", tag, error=str(exc), sample=i)
            return None
        return str(getattr(reply.value, field))

    try:
        return await sampled_choice_probabilities(one, choices, policy.samples)
    except ValueError as exc:
        raise StructuredOutputError(f"{tag}: {exc}", attempts=[]) from exc
