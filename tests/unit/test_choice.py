"""`ask_choice`: one primitive for a discrete answer and its probabilities."""

import asyncio
from typing import Literal

import pytest
from pydantic import BaseModel

from veracity.core import context
from veracity.core.errors import StructuredOutputError
from veracity.core.labels import get_label_space
from veracity.core.types import Claim
from veracity.deliberation import LLMJudge, Transcript
from veracity.deliberation.debate import DebateState
from veracity.llm.base import user
from veracity.llm.choice import ChoicePolicy, ChoiceResult, ask_choice
from veracity.methods.baselines import DirectMethod
from veracity.methods.s2mad import S2MADMethod
from veracity.methods.s2mad.stance import PostPrompts
from veracity.testing import ScriptedLLM, ScriptedReply


class Stop(BaseModel):
    decision: Literal["CONTINUE", "STOP"]


CHOICES = ("CONTINUE", "STOP")
PROMPT = [user("stop now?")]


def _stop(answer: str, alternatives=None) -> ScriptedReply:
    return ScriptedReply(f'{{"decision": "{answer}"}}', alternatives, at=answer)


def _no_logprobs(llm: ScriptedLLM) -> ScriptedLLM:
    llm.capabilities = llm.capabilities.model_copy(update={"logprobs": False})
    return llm


async def test_logprobs_give_probabilities_and_the_matched_mass():
    llm = ScriptedLLM().queue(_stop("STOP", {"STOP": 0.6, "CONTINUE": 0.2, "Maybe": 0.2}))
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="stop")
    assert result.label == "STOP" and result.estimator == "logprobs"
    assert result.probabilities == pytest.approx({"STOP": 0.75, "CONTINUE": 0.25})
    assert result.matched_mass == pytest.approx(0.8)
    assert result.confidence == pytest.approx(0.75) and result.samples == 0
    assert llm.calls[0].logprobs and llm.calls[0].top_logprobs == 10
    assert "value" not in result.model_dump() and result.value.decision == "STOP"


async def test_without_logprobs_and_no_samples_only_the_answer_is_known():
    llm = _no_logprobs(ScriptedLLM().queue(_stop("CONTINUE")))
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="stop")
    expected = ChoiceResult(label="CONTINUE", answer="CONTINUE")
    assert result.model_dump() == expected.model_dump()
    assert result.confidence is None and len(llm.calls) == 1 and not llm.calls[0].logprobs


async def test_without_logprobs_the_greedy_answer_is_kept_and_samples_give_probabilities():
    llm = _no_logprobs(ScriptedLLM())
    llm.on(".*", _stop("STOP"), tag="stop", times=1)
    llm.on(".*", lambda r: _stop("CONTINUE" if r.seed == 0 else "STOP"), tag="stop")
    policy = ChoicePolicy(samples=4, sample_temperature=0.5)
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="stop", policy=policy)
    assert result.label == "STOP" and result.estimator == "sampling" and result.samples == 4
    assert result.probabilities == {"CONTINUE": 0.25, "STOP": 0.75}
    assert result.matched_mass == 1.0
    tags = [c.tag for c in llm.calls]
    assert tags == ["stop", "stop:sample0", "stop:sample1", "stop:sample2", "stop:sample3"]
    assert {c.temperature for c in llm.calls[1:]} == {0.5}


async def test_only_samples_when_the_answer_itself_is_not_needed():
    llm = _no_logprobs(ScriptedLLM(default=_stop("STOP")))
    policy = ChoicePolicy(samples=3)
    result = await ask_choice(
        llm, PROMPT, Stop, "decision", CHOICES, tag="s", policy=policy, need_answer=False
    )
    assert result.answer is None and result.probabilities == {"CONTINUE": 0.0, "STOP": 1.0}
    assert result.label == "STOP" and len(llm.calls) == 3


class CountsInFlight(ScriptedLLM):
    """Records the most requests it had in hand at once (each takes a moment)."""

    in_flight: int = 0
    most: int = 0

    async def complete(self, request):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            return await super().complete(request)
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize(
    ("slot_cache", "order", "most"),
    [
        (True, "auto", 1),  # llama.cpp: one after another, each reusing the slot's prompt
        (False, "auto", 4),  # a shared prefix cache: all at once
        (True, "concurrent", 4),
        (False, "sequential", 1),
    ],
)
async def test_samples_go_one_after_another_where_prompts_live_in_slots(slot_cache, order, most):
    llm = _no_logprobs(CountsInFlight())
    llm.capabilities = llm.capabilities.model_copy(update={"slot_cache": slot_cache})
    llm.on(".*", lambda r: _stop("CONTINUE" if r.seed in (0, 2) else "STOP"), tag="s")
    policy = ChoicePolicy(samples=4, sample_order=order)
    result = await ask_choice(
        llm, PROMPT, Stop, "decision", CHOICES, tag="s", policy=policy, need_answer=False
    )
    assert llm.most == most
    # the same samples (seeds 0..3) and so the same estimate in either order
    assert [c.seed for c in llm.calls] == [0, 1, 2, 3]
    assert result.probabilities == {"CONTINUE": 0.5, "STOP": 0.5}


class DropsLogprobs(ScriptedLLM):
    """Declares logprobs but returns none (some servers ignore the request)."""

    async def complete(self, request):
        response = await super().complete(request)
        return response.model_copy(update={"logprobs": None})


async def test_missing_logprobs_fall_back_to_sampling_with_a_note():
    llm = DropsLogprobs()
    llm.on(".*", _stop("STOP"), tag="s", times=1)
    llm.on(".*", _stop("CONTINUE"), tag="s")
    with context.check_context() as ctx:
        result = await ask_choice(
            llm, PROMPT, Stop, "decision", CHOICES, tag="s", policy=ChoicePolicy(samples=2)
        )
    # the greedy reply said STOP, but every sample said CONTINUE: the label is the
    # most probable answer, and the trace says the decoded one was overruled
    assert result.answer == "STOP" and result.label == "CONTINUE"
    assert result.estimator == "sampling" and result.confidence == 1.0
    assert result.probabilities == {"CONTINUE": 1.0, "STOP": 0.0}
    notes = [e.data["note"] for e in ctx.trace.of_kind("note")]
    assert "sampling instead" in notes[0] and "decoded answer was STOP" in notes[1]
    assert result.value.decision == "CONTINUE"  # the reply of a sample that gave it


async def test_the_logprobs_estimator_never_samples_and_sampling_never_reads_logprobs():
    llm = DropsLogprobs().queue(_stop("STOP"))
    policy = ChoicePolicy(estimator="logprobs", samples=5)
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="s", policy=policy)
    assert result.probabilities is None and len(llm.calls) == 1
    llm = ScriptedLLM(default=_stop("STOP", {"STOP": 0.5, "CONTINUE": 0.5}))
    policy = ChoicePolicy(estimator="sampling", samples=2)
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="s", policy=policy)
    assert result.estimator == "sampling" and not any(c.logprobs for c in llm.calls)


async def test_unusable_samples_are_recorded_and_none_at_all_is_an_error():
    llm = _no_logprobs(ScriptedLLM(default="not json"))
    with context.check_context() as ctx, pytest.raises(StructuredOutputError, match="none of 2"):
        await ask_choice(
            llm, PROMPT, Stop, "decision", CHOICES, tag="s",
            policy=ChoicePolicy(samples=2), need_answer=False,
        )  # fmt: skip
    assert [e.data["sample"] for e in ctx.trace.of_kind("error")] == [0, 1]


# --------------------------------------------------------------------------- callers


async def test_a_baseline_can_sample_where_the_backend_has_no_logprobs():
    llm = _no_logprobs(ScriptedLLM())
    llm.on(".*", '{"label": "false"}', tag="direct", times=1)
    llm.on(".*", lambda r: '{"label": "true"}' if r.seed == 2 else '{"label": "false"}')
    verdict = await DirectMethod(llm=llm, config={"samples_k": 4}).check(Claim(text="x"))
    assert verdict.label == "false"
    assert verdict.probabilities == {"true": 0.25, "false": 0.75}
    decision = verdict.trace.of_kind("decision")[0].data
    assert decision["estimator"] == "sampling" and decision["samples"] == 4
    assert decision["matched_mass"] == 1.0 and verdict.usage.llm_calls == 5


async def test_a_judge_records_estimator_and_mass_and_can_sample():
    space = get_label_space("real_fake")
    state = DebateState(labels=space, transcript=Transcript(), round=1, phase="x", last_round=1)
    prompt = lambda s: [user("rule")]  # noqa: E731
    reply = '{"reason": "r", "verdict": "FAKE"}'
    llm = ScriptedLLM(default=ScriptedReply(reply, {"FAKE": 0.3, "REAL": 0.1}, at="FAKE"))
    decision = await LLMJudge("judge", llm, space, prompt).judge(state)
    assert decision.estimator == "logprobs" and decision.matched_mass == pytest.approx(0.4)
    assert decision.confidence == pytest.approx(0.75)
    llm = _no_logprobs(ScriptedLLM(default=reply))
    judge = LLMJudge("judge", llm, space, prompt, choice=ChoicePolicy(samples=3))
    decision = await judge.judge(state)
    assert decision.label == "FAKE" and decision.estimator == "sampling"
    assert decision.probabilities == {"REAL": 0.0, "FAKE": 1.0} and decision.samples == 3


async def test_s2mad_subjectivity_question_records_its_estimator():
    llm = ScriptedLLM(
        default=ScriptedReply('{"answer": "Yes"}', {"Yes": 0.45, "No": 0.45}, at="Yes")
    )
    method = S2MADMethod(llm=llm)
    with context.check_context() as ctx:
        post = _post()
        family = await method.family(post, PostPrompts.of(method.config.prompt_layout, post.text))
    assert family == "subjective"
    data = ctx.trace.of_kind("decision")[0].data
    assert data["estimator"] == "logprobs" and data["matched_mass"] == pytest.approx(0.9)


def _post():
    from veracity.core.types import Post

    return Post(text="They say the dam broke.")


async def test_a_schema_that_spells_the_choices_counts_only_tokens_it_allows():
    # constrained decoding: "Stop" and "stop" are alternatives the grammar forbids, so
    # they do not count for STOP (case-insensitive matching would give STOP 0.8)
    alts = {"CONTINUE": 0.5, "Stop": 0.2, "stop": 0.2, "STOP": 0.1}
    llm = ScriptedLLM().queue(_stop("CONTINUE", alts))
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="stop")
    assert result.probabilities == pytest.approx({"CONTINUE": 5 / 6, "STOP": 1 / 6})
    assert result.matched_mass == pytest.approx(0.6)


async def test_without_constrained_decoding_or_an_exact_schema_matching_is_loose():
    alts = {"CONTINUE": 0.5, "Stop": 0.2, "stop": 0.2, "STOP": 0.1}
    llm = ScriptedLLM().queue(_stop("CONTINUE", alts))
    llm.capabilities = llm.capabilities.model_copy(update={"json_schema": False})
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="stop")
    assert result.probabilities == pytest.approx({"CONTINUE": 0.5, "STOP": 0.5})

    class Free(BaseModel):
        decision: str  # any string: the schema does not spell the choices

    llm = ScriptedLLM().queue(_stop("CONTINUE", alts))
    result = await ask_choice(llm, PROMPT, Free, "decision", CHOICES, tag="stop")
    assert result.probabilities == pytest.approx({"CONTINUE": 0.5, "STOP": 0.5})


# --------------------------------------------------------------------------- the rule


async def test_the_label_is_the_most_probable_choice_not_the_decoded_one():
    # logprobs reported before a penalty or grammar acted: STOP decoded at p .42
    llm = ScriptedLLM().queue(_stop("STOP", {"STOP": 0.42, "CONTINUE": 0.56}))
    with context.check_context() as ctx:
        result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="stop")
    assert result.answer == "STOP" and result.label == "CONTINUE"
    assert result.confidence == pytest.approx(0.5714, abs=1e-3)
    assert result.confidence == max(result.probabilities.values())
    assert result.value.decision == "CONTINUE"
    assert "decoded answer was STOP" in ctx.trace.of_kind("note")[0].data["note"]


async def test_a_tie_is_stated_and_broken_by_the_decoded_answer():
    llm = ScriptedLLM().queue(_stop("STOP", {"STOP": 0.4, "CONTINUE": 0.4}))
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="stop")
    assert result.label == "STOP" and result.tie == ("CONTINUE", "STOP")
    assert "tie at 0.50" in result.note and "decoded answer gives STOP" in result.note


async def test_choice_calls_ask_for_no_repetition_penalty():
    llm = _no_logprobs(ScriptedLLM(default=_stop("STOP")))
    await ask_choice(
        llm, PROMPT, Stop, "decision", CHOICES, tag="s", policy=ChoicePolicy(samples=2)
    )
    assert [c.repeat_penalty for c in llm.calls] == [1.0, 1.0, 1.0]


async def test_a_reading_with_too_little_matched_mass_is_replaced_by_samples():
    # CONTINUE is not among the alternatives: read as-is, s would saturate at +1
    llm = ScriptedLLM()
    llm.on(".*", _stop("STOP", {"STOP": 0.196, "The": 0.5}), tag="s", times=1)
    llm.on(".*", lambda r: _stop("CONTINUE" if r.seed in (0, 1) else "STOP"))
    policy = ChoicePolicy(samples=4, min_mass=0.5)
    with context.check_context() as ctx:
        result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="s", policy=policy)
    assert result.estimator == "sampling" and result.logprob_mass == pytest.approx(0.196)
    assert result.probabilities == {"CONTINUE": 0.5, "STOP": 0.5}
    assert result.label == "STOP" and result.tie == ("CONTINUE", "STOP")
    note = ctx.trace.of_kind("note")[0].data
    assert "matched only 0.20" in note["note"] and "sampling instead" in note["note"]
    # without samples the low-mass reading is kept, and flagged
    llm = ScriptedLLM().queue(_stop("STOP", {"STOP": 0.196, "The": 0.5}))
    result = await ask_choice(
        llm, PROMPT, Stop, "decision", CHOICES, tag="s", policy=ChoicePolicy(min_mass=0.5)
    )
    assert result.estimator == "logprobs" and "only 0.20" in result.note


async def test_an_unreadable_distribution_is_stated():
    # logprobs were asked for but none came back, and sampling is off
    llm = DropsLogprobs().queue(_stop("STOP"))
    result = await ask_choice(llm, PROMPT, Stop, "decision", CHOICES, tag="s")
    assert result.label == "STOP" and result.probabilities is None
    assert result.confidence is None and "no probabilities" in result.note
