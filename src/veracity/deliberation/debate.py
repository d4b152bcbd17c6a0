"""The debate engine shared by ZoFia, RADAR and S2MAD.

A debate is a sequence of rounds. A `Schedule` says, for each round, its phase name and
the speaking order: a list of groups run one after another, the speakers inside a group
running concurrently (they see the transcript as it stood when the group started).
Examples:

- ZoFia: every round is "argument" with order [[pro], [con]] — con answers pro's new
  argument in the same round.
- RADAR: round 1 "opening", middle rounds "rebuttal", last round "closing", with order
  [[politician, scientist]] (a journalist, when present, speaks first: [[journalist],
  [politician, scientist]]).
- S2MAD: round 0 "initial" then rounds 1..M "update", order [[pro, con]].

After every round the stopping policy decides whether to end. The final decision is the
policy's decision when it gives one, else the final judge's, else none (the method then
abstains and says why).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core import context
from veracity.core.events import Stage, StopSignal
from veracity.core.labels import LabelSpace
from veracity.deliberation.agents import Speaker
from veracity.deliberation.judges import Judge
from veracity.deliberation.state import DebateState, JudgeDecision, StopCheck
from veracity.deliberation.stopping import StoppingPolicy
from veracity.deliberation.transcript import Transcript
from veracity.llm.probs import normalised


class RoundPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    round: int
    phase: str
    order: tuple[tuple[str, ...], ...]


class Schedule:
    """Round plans for a debate of up to `max_rounds` rounds.

    Args:
        plan: `plan(round_no, max_rounds) -> (phase, order)`.
        max_rounds: the round cap.
        first_round: number of the first round (0 when round 0 holds initial opinions).
    """

    def __init__(
        self,
        plan: Callable[[int, int], tuple[str, Sequence[Sequence[str]]]],
        max_rounds: int,
        first_round: int = 1,
    ):
        if max_rounds < 1:
            raise ValueError("a debate needs at least one round")
        self.plan = plan
        self.max_rounds = max_rounds
        self.first_round = first_round

    @property
    def last_round(self) -> int:
        return self.first_round + self.max_rounds - 1

    def rounds(self) -> list[RoundPlan]:
        out = []
        for r in range(self.first_round, self.last_round + 1):
            phase, order = self.plan(r, self.last_round)
            out.append(RoundPlan(round=r, phase=phase, order=tuple(tuple(g) for g in order)))
        return out

    @classmethod
    def uniform(
        cls, phase: str, order: Sequence[Sequence[str]], max_rounds: int, first_round: int = 1
    ) -> Schedule:
        """Every round the same phase and order."""
        return cls(lambda r, last: (phase, order), max_rounds, first_round)

    @classmethod
    def opening_rebuttal_closing(
        cls, order: Sequence[Sequence[str]], max_rounds: int = 3
    ) -> Schedule:
        """Round 1 opening, last round closing, rebuttals between (one round: opening only)."""

        def plan(r: int, last: int) -> tuple[str, Sequence[Sequence[str]]]:
            if r == 1:
                return "opening", order
            return ("closing" if r == last else "rebuttal"), order

        return cls(plan, max_rounds)


class DebateResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    transcript: Transcript
    rounds_run: int
    last_round: int
    checks: list[StopCheck] = Field(default_factory=list)
    decision: JudgeDecision | None = None
    stop_reason: str = ""

    @property
    def decided(self) -> bool:
        return self.decision is not None and self.decision.label is not None


class Debate:
    """Runs a debate.

    Args:
        speakers: the agents, by role name.
        schedule: rounds, phases and speaking order.
        policy: stopping policy checked after each round.
        labels: the decision's label space.
        final_judge: rules when the policy stops without a decision (optional).
        materials: what every prompt builder is given (claim, evidence pool, ...).
    """

    def __init__(
        self,
        speakers: Sequence[Speaker],
        schedule: Schedule,
        policy: StoppingPolicy,
        labels: LabelSpace,
        *,
        final_judge: Judge | None = None,
        materials: dict[str, Any] | None = None,
    ):
        self.speakers = {s.role.name: s for s in speakers}
        if len(self.speakers) != len(speakers):
            raise ValueError("speaker role names must be unique")
        self.schedule = schedule
        for plan in schedule.rounds():
            unknown = {n for g in plan.order for n in g} - set(self.speakers)
            if unknown:
                raise ValueError(f"round {plan.round} names unknown speakers {sorted(unknown)}")
        self.policy = policy
        self.labels = labels
        self.final_judge = final_judge
        self.materials = materials or {}

    async def run(self, transcript: Transcript | None = None) -> DebateResult:
        """Run the schedule (after any turns already in `transcript`) until the policy stops."""
        ctx = context.current()
        state = DebateState(
            labels=self.labels,
            transcript=transcript or Transcript(),
            round=self.schedule.first_round,
            phase="",
            last_round=self.schedule.last_round,
            materials=self.materials,
        )
        check: StopCheck | None = None
        rounds_run = 0
        for plan in self.schedule.rounds():
            state.round, state.phase = plan.round, plan.phase
            ctx.emit(
                Stage(
                    name="debate",
                    step="round",
                    round=plan.round,
                    phase=plan.phase,
                    rounds=self.schedule.last_round,
                )
            )
            for group in plan.order:
                turns = await asyncio.gather(
                    *(self.speakers[name].speak(state, plan.phase, plan.round) for name in group)
                )
                for turn in turns:
                    state.transcript.add(turn)
            rounds_run += 1
            check = await self.policy.after_round(state)
            state.checks.append(check)
            signals = dict(check.data)  # the policy's readings: two have fields of their own
            read = {k: signals.pop(k) for k in ("margin", "confidence") if k in signals}
            ctx.emit(
                StopSignal(
                    name="stopping",
                    round=check.round,
                    stop=check.stop,
                    reason=check.reason,
                    **read,
                    detail=signals,
                )
            )
            if check.stop:
                break
        decision = check.decision if check else None
        reason = check.reason if check else "no rounds"
        if decision is None and self.final_judge is not None and not _abstains(check):
            decision = await self.final_judge.judge(state)
            reason = f"{reason}; final judge ruled" if reason else "final judge ruled"
        return DebateResult(
            transcript=state.transcript,
            rounds_run=rounds_run,
            last_round=state.round,
            checks=state.checks,
            decision=decision,
            stop_reason=reason,
        )


def _abstains(check: StopCheck | None) -> bool:
    return bool(check and check.data.get("abstain"))


def verdict_fields(result: DebateResult, labels: LabelSpace) -> dict[str, Any]:
    """Verdict fields (label, score, confidence, probabilities, rationale, abstention)."""
    decision = result.decision
    if decision is None or decision.label is None:
        return {
            "label": None,
            "abstained": True,
            "abstain_reason": result.stop_reason or "the debate reached no decision",
        }
    # probabilities over the judge's options; `BaseMethod.verdict` scales them to the
    # label space (dropping an INSUFFICIENT option) and applies the rule for labels
    probs = decision.probabilities
    label_probs = normalised(probs, labels.labels) if probs else None
    return {
        "label": decision.label,
        "score": labels.expected_score(label_probs)
        if label_probs
        else labels.score(decision.label),
        "confidence": decision.confidence,
        "probabilities": probs or None,
        "probability_note": decision.note,
        "rationale": judge_rationale(decision.reason, decision.label, labels),
    }


def judge_rationale(reason: str | None, label: str, labels: LabelSpace) -> str:
    """The judge's reason as a verdict's rationale, said plainly when it is no reason: a
    small model may write only a label there, even another one than it ruled (a FALSE
    ruling whose reason reads "TRUE"), which shown alone contradicts the verdict."""
    text = (reason or "").strip()
    if not text:
        return f"The judge ruled {label} and gave no reason."
    named = labels.find(text.strip(" .:;!\"'`*"))
    if named is None:
        return text
    if named == label:
        return f"The judge ruled {label} and gave no reason beyond the label."
    return (
        f"The judge ruled {label}; its reason field held only the label {named}, which "
        "contradicts the ruling and explains nothing."
    )
