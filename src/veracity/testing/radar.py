"""A scripted model that plays every RADAR part, for tests and benchmarks.

`radar_script` answers each request by its trace tag: debaters write a fixed-length
argument, the stop agent and the judges answer from a per-claim plan that says, for each
round, the round judge's label and confidence and the stop agent's p(STOP). With
logprobs the answers carry those probabilities at the answer token; without them the
k sampled answers are split in the planned proportions, so both estimators recover the
plan.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from veracity.llm.base import Capabilities, LLMRequest
from veracity.testing.scripted import Reply, ScriptedLLM, ScriptedReply

LABELS = ("TRUE", "HALF-TRUE", "FALSE")


@dataclass(frozen=True)
class ScriptedRound:
    """What the stop agent and round judge say after one round.

    Attributes:
        label: the round judge's verdict.
        confidence: probability of that verdict (the rest is split over the others).
        p_stop: the stop agent's probability of STOP.
    """

    label: str
    confidence: float
    p_stop: float


def _round_of(tag: str) -> int:
    return next(int(p) for p in tag.split(":")[1:] if p.isdigit())


def _sample_index(tag: str) -> int | None:
    last = tag.rsplit(":", 1)[-1]
    return int(last[6:]) if last.startswith("sample") else None


def _first_token(label: str) -> str:
    return label.split("-")[0]


def radar_script(
    plans: Mapping[str, Sequence[ScriptedRound]],
    *,
    logprobs: bool = True,
    argument_words: int = 60,
    samples_k: int = 5,
    domain: str = "Economy",
    overrides: Sequence[tuple[Callable[[LLMRequest], bool], Reply, int | None]] = (),
) -> ScriptedLLM:
    """A `ScriptedLLM` following `plans`.

    Args:
        plans: claim marker (a substring of the claim text) -> plan of each round; the
            last entry also serves any later round.
        logprobs: whether the model declares token logprobs.
        argument_words: length of every debater turn.
        samples_k: the k the sampling estimator uses (to split samples as planned).
        domain: the answer to the domain-inference prompt.
        overrides: (predicate, reply, times) rules tried before the plan's (to script
            faults or odd token alternatives).
    """
    caps = Capabilities(
        json_schema=True,
        logprobs=logprobs,
        max_top_logprobs=20 if logprobs else 0,
        seed=True,
        context_window=8192,
    )
    llm = ScriptedLLM(capabilities=caps)

    def plan_for(request: LLMRequest) -> ScriptedRound:
        prompt = "\n".join(m.content for m in request.messages)
        for marker, rounds in plans.items():
            if marker in prompt:
                n = _round_of(request.tag)
                return rounds[min(n, len(rounds)) - 1]
        raise AssertionError(f"no plan for request {request.tag!r}")

    def stop(request: LLMRequest) -> ScriptedReply:
        p = plan_for(request).p_stop
        i = _sample_index(request.tag)
        if i is not None:
            decision = "STOP" if i < round(p * samples_k) else "CONTINUE"
            return ScriptedReply(f'{{"decision": "{decision}"}}')
        decision = "STOP" if p >= 0.5 else "CONTINUE"
        alternatives = {"STOP": p, "CONTINUE": 1.0 - p}
        return ScriptedReply(f'{{"decision": "{decision}"}}', alternatives, at=decision)

    def judge(request: LLMRequest) -> ScriptedReply:
        plan = plan_for(request)
        label = plan.label
        i = _sample_index(request.tag)
        if i is not None and i >= round(plan.confidence * samples_k):
            label = next(x for x in LABELS if x != plan.label)
        rest = (1.0 - plan.confidence) / (len(LABELS) - 1)
        alternatives = {_first_token(x): rest for x in LABELS}
        alternatives[_first_token(plan.label)] = plan.confidence
        text = f'{{"reason": "weighed the debate and [E1]", "verdict": "{label}"}}'
        return ScriptedReply(text, alternatives if i is None else None, at=label)

    def argue(request: LLMRequest) -> str:
        role = request.tag.split(":")[0]
        return " ".join([f"{role}:"] + ["point"] * (argument_words - 1))

    for predicate, reply, times in overrides:
        llm.on(predicate, reply, times=times)
    llm.on(lambda r: r.tag.startswith("domain"), f'{{"domain": "{domain}"}}')
    llm.on(lambda r: r.tag.startswith("stop:"), stop)
    llm.on(lambda r: r.tag.startswith(("round_judge:", "judge:")), judge)
    llm.on(lambda r: True, argue)
    return llm
