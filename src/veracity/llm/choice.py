"""Ask a model to choose one of a few answers, and read how sure it is.

`ask_choice` is the one way veracity asks for a discrete answer with probabilities: a
label (baselines), a ruling (judges), STOP/CONTINUE (RADAR's stop agent), Yes/No
(S2MAD's subjectivity question). It makes one structured call and reads the per-choice
distribution at the answer token from the reply's log-probabilities (`probs`); where the
backend has none, where none of them matched a choice, or where the alternatives that
matched carry less than `ChoicePolicy.min_mass` of the probability, it can sample k
answers and use their frequencies instead (`ChoicePolicy.samples`), and says so in the
trace. The result says which estimator produced the numbers and how much probability
mass matched the choices.

One rule holds for every result with probabilities: its label is the most probable
choice (`probs.most_probable`). When the decoded answer is another choice, the result
keeps the label its probabilities give, notes the disagreement in the trace, and carries
the reply of a sampled answer with that label where there is one. A tie at the top is
reported (`tie`) and broken by the decoded answer. Calls made here ask for no repetition
penalty: a penalty applied after the logprobs are reported would let the decoded answer
differ from the most probable one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.core import context
from veracity.core.errors import StructuredOutputError
from veracity.core.events import Fault, Note
from veracity.llm.base import LLM, LLMResponse, Message
from veracity.llm.probs import (
    ChoiceProbs,
    choice_probabilities,
    most_probable,
    sampled_choice_probabilities,
    schema_choices,
)
from veracity.llm.structured import complete_structured, schema_for

Estimator = Literal["auto", "logprobs", "sampling"]
SampleOrder = Literal["auto", "concurrent", "sequential"]
NO_PENALTY = 1.0  # repeat penalty of every call made here


class ChoicePolicy(BaseModel):
    """How `ask_choice` estimates the probabilities of an answer.

    Attributes:
        top_logprobs: alternatives read at the answer token (0: logprobs are not asked).
        estimator: ``auto`` reads logprobs when the backend returns them and samples
            otherwise; ``logprobs`` never samples; ``sampling`` never reads logprobs.
        samples: answers sampled when logprobs give no distribution (0: no sampling;
            the result then has no probabilities).
        sample_temperature: temperature of the sampled answers.
        min_mass: a logprob reading whose matched mass is below this is not trusted:
            the answer is sampled instead (when `samples` > 0), and the trace says so.
            With little mass matched, a choice missing from the top alternatives reads
            as probability 0 and the rest is inflated (0: every reading is trusted).
        sample_order: ``concurrent`` asks for the samples all at once; ``sequential``
            one after another; ``auto`` (default) goes one after another where the
            backend keeps prompts per slot (`Capabilities.slot_cache`, llama.cpp), so
            every sample reuses the prompt the slot holds, and all at once elsewhere.
            The samples are the same either way (each has its own seed).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    top_logprobs: int = Field(default=10, ge=0, le=20)
    estimator: Estimator = "auto"
    samples: int = Field(default=0, ge=0, le=50)
    sample_temperature: float = Field(default=0.8, gt=0.0, le=2.0)
    min_mass: float = Field(default=0.0, ge=0.0, le=1.0)
    sample_order: SampleOrder = "auto"

    def reads_logprobs(self, llm: LLM) -> bool:
        """Whether the answer's logprobs are requested from `llm`."""
        return self.estimator != "sampling" and self.top_logprobs > 0 and llm.capabilities.logprobs

    def may_sample(self) -> bool:
        return self.estimator != "logprobs" and self.samples > 0

    def samples_in_turn(self, llm: LLM) -> bool:
        """Whether the samples are asked one after another on `llm`."""
        if self.sample_order == "auto":
            return llm.capabilities.slot_cache
        return self.sample_order == "sequential"


class ChoiceResult(BaseModel):
    """The answer and what is known about its probabilities.

    Attributes:
        label: the decided choice: the most probable one when there are probabilities
            (see the module docstring), else the decoded answer; None when neither exists.
        answer: the choice the greedy reply decoded (None when only samples were drawn).
        value: the validated reply object behind `label`: the greedy reply, or a sampled
            reply that gave `label` when the greedy one answered otherwise.
        probabilities: choice -> probability (summing to 1), or None when no estimate
            was possible.
        tie: the choices sharing the top probability, when more than one does.
        matched_mass: logprob estimator: the probability mass at the answer token that
            matched a choice; sampling: the fraction of samples that named a choice.
        logprob_mass: the matched mass of a logprob reading that was read but not used
            (below `ChoicePolicy.min_mass`), so the answer was sampled instead.
        estimator: ``logprobs`` or ``sampling``; None when there are no probabilities.
        samples: answers sampled (sampling estimator).
        note: what a reader must know about the numbers (a tie, a decoded answer that
            was not the most probable, probabilities that could not be read).
        response: the raw reply of the greedy call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    label: str | None
    answer: str | None = None
    value: Any = Field(default=None, exclude=True)
    probabilities: dict[str, float] | None = None
    tie: tuple[str, ...] = ()
    matched_mass: float | None = None
    logprob_mass: float | None = None
    estimator: Literal["logprobs", "sampling"] | None = None
    samples: int = 0
    note: str | None = None
    response: LLMResponse | None = Field(default=None, exclude=True)

    @property
    def confidence(self) -> float | None:
        """Probability of `label` (the largest probability, by the rule above)."""
        if self.probabilities is None or self.label is None:
            return None
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
    replies: dict[str, Any] = {}  # choice -> a reply object that gave it
    if with_logprobs or need_answer or not policy.may_sample():
        reply = await complete_structured(
            llm,
            messages,
            output,
            temperature=temperature,
            max_tokens=max_tokens,
            logprobs=with_logprobs,
            top_logprobs=policy.top_logprobs if with_logprobs else None,
            repeat_penalty=NO_PENALTY,
            tag=tag,
        )
        answer = str(getattr(reply.value, field))
        replies[answer] = reply.value
        result = ChoiceResult(
            label=answer, answer=answer, value=reply.value, response=reply.response
        )
        probs = None
        if with_logprobs:
            exact = exact_choices(llm, output, field, choices)
            probs = choice_probabilities(reply.response, choices, field=field, exact=exact)
        trusted = probs is not None and probs.mass >= policy.min_mass
        if probs is not None and (trusted or not policy.may_sample()):
            if not trusted:
                result = result.model_copy(
                    update={"note": f"only {probs.mass:.2f} of the probability matched a choice"}
                )
            return _decide(result.with_probs(probs), replies, field, tag)
        if not policy.may_sample():
            if with_logprobs:
                note = "no probabilities: no choice among the answer token's alternatives"
                result = result.model_copy(update={"note": note})
            return result
        if with_logprobs:
            why = (
                "no usable logprobs at the answer token"
                if probs is None
                else f"the logprobs matched only {probs.mass:.2f} of the probability "
                f"(below {policy.min_mass:.2f})"
            )
            mass = probs.mass if probs is not None else None
            result = result.model_copy(update={"logprob_mass": mass})
            context.current().emit(
                Note(name=tag, note=f"{why}; sampling instead", detail={"mass": mass})
            )
    sampled = await _sample(llm, messages, output, field, choices, tag, policy, max_tokens, replies)
    return _decide(result.with_probs(sampled), replies, field, tag)


def _decide(result: ChoiceResult, replies: dict[str, Any], field: str, tag: str) -> ChoiceResult:
    """Apply the rule: the label is the most probable choice; ties and overrides noted."""
    assert result.probabilities is not None
    label, tie = most_probable(result.probabilities, result.answer)
    notes = [result.note] if result.note else []
    update: dict[str, Any] = {"label": label, "tie": tie}
    if tie:
        how = "the decoded answer" if result.answer in tie else "order of the choices"
        notes.append(
            f"{' and '.join(tie)} tie at {result.probabilities[label]:.2f}; {how} gives {label}"
        )
    if result.answer is not None and label != result.answer:
        p = result.probabilities
        notes.append(
            f"the decoded answer was {result.answer} (p {p.get(result.answer, 0.0):.2f}), but "
            f"{label} is the most probable (p {p[label]:.2f}); {label} is kept"
        )
        value = replies.get(label)
        if value is None and result.value is not None:
            value = result.value.model_copy(update={field: label})
        update["value"] = value
    if notes:
        update["note"] = "; ".join(notes)
        context.current().emit(Note(name=tag, note=update["note"]))
    return result.model_copy(update=update)


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
    replies: dict[str, Any],
) -> ChoiceProbs:
    """Frequencies of `field` over `policy.samples` answers at the sampling temperature.

    For each answer not in `replies` yet, the reply of its lowest-numbered sample is
    added (so which reply stands for an answer does not depend on timing).
    """
    found: dict[int, tuple[str, Any]] = {}

    async def one(i: int) -> str | None:
        try:
            reply = await complete_structured(
                llm,
                messages,
                output,
                temperature=policy.sample_temperature,
                max_tokens=max_tokens,
                seed=i,
                repeat_penalty=NO_PENALTY,
                tag=f"{tag}:sample{i}",
            )
        except StructuredOutputError as exc:
            context.current().emit(Fault(name=tag, error=str(exc), detail={"sample": i}))
            return None
        answer = str(getattr(reply.value, field))
        found[i] = (answer, reply.value)
        return answer

    try:
        probs = await sampled_choice_probabilities(
            one, choices, policy.samples, in_turn=policy.samples_in_turn(llm)
        )
    except ValueError as exc:
        raise StructuredOutputError(f"{tag}: {exc}", attempts=[]) from exc
    for i in sorted(found):
        replies.setdefault(*found[i])
    return probs
