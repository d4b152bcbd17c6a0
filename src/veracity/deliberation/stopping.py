"""Stopping policies: after each round, should the debate end, and with what decision?

- `FixedRounds`: run every round (the reference protocols' default).
- `JudgeDecides`: a ternary judge rules after each round; INSUFFICIENT continues; still
  insufficient at the round cap ends the debate without a decision (abstain).
- `Consensus`: the debate ends with the debaters' shared stance when they agree — checked
  at the last round (S2MAD) or after every round (`early=True`).
- `ProbabilityStop`: the hook for probability-based stopping. A subclass supplies a stop
  signal in [-1, 1] and a provisional decision with a confidence; the debate ends when
  signal ≥ τ_s and confidence ≥ τ_v (RADAR's dual threshold builds on this).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Protocol

from veracity.deliberation.judges import Judge
from veracity.deliberation.state import DebateState, JudgeDecision, StopCheck


class StoppingPolicy(Protocol):
    async def after_round(self, state: DebateState) -> StopCheck: ...


class FixedRounds:
    """Never stop early; the debate runs its full schedule."""

    async def after_round(self, state: DebateState) -> StopCheck:
        last = state.is_last_round
        return StopCheck(round=state.round, stop=last, reason="schedule complete" if last else "")


class JudgeDecides:
    """A judge rules after every round; INSUFFICIENT means "go on"."""

    def __init__(self, judge: Judge):
        self.judge = judge

    async def after_round(self, state: DebateState) -> StopCheck:
        decision = await self.judge.judge(state)
        if not decision.insufficient:
            return StopCheck(
                round=state.round, stop=True, decision=decision, reason="judge decided"
            )
        if state.is_last_round:
            return StopCheck(
                round=state.round,
                stop=True,
                reason=f"judge still found the debate insufficient after {state.round} rounds",
                data={"abstain": True},
            )
        return StopCheck(round=state.round, stop=False, reason="judge: insufficient")


class Consensus:
    """Stop with the shared stance when every debater's latest stance agrees.

    Args:
        speakers: whose stances must agree.
        early: check after every round, not only the last.
    """

    def __init__(self, speakers: list[str], *, early: bool = False):
        self.speakers = speakers
        self.early = early

    def agreed(self, state: DebateState) -> str | None:
        stances = []
        for name in self.speakers:
            turn = state.transcript.last(name)
            stances.append(turn.stance if turn else None)
        if stances and None not in stances and len(set(stances)) == 1:
            return stances[0]
        return None

    async def after_round(self, state: DebateState) -> StopCheck:
        if not (state.is_last_round or self.early):
            return StopCheck(round=state.round, stop=False)
        shared = self.agreed(state)
        if shared is not None:
            decision = JudgeDecision(
                label=state.labels.parse(shared),
                reason=f"the debaters agreed on {shared}",
                judge="consensus",
                round=state.round,
            )
            return StopCheck(round=state.round, stop=True, decision=decision, reason="consensus")
        return StopCheck(round=state.round, stop=state.is_last_round, reason="no consensus")


class ProbabilityStop(ABC):
    """Dual-threshold stopping from probabilities.

    Subclasses implement `signal` (a stop margin, e.g. p(STOP) − p(CONTINUE)) and
    `provisional` (a decision with `confidence`). The debate stops after a round when
    signal ≥ `tau_s` and confidence ≥ `tau_v`; the provisional decision is then final.
    Both values are recorded in every check so thresholds can be calibrated offline.

    After the last round the debate ends whatever the signal says; set
    `signal_last_round` to False to skip computing it there (its ``stop_margin`` is then
    recorded as None) and save that call. With ``stop_early=False`` the signals are
    computed and recorded after every round but the debate runs its full schedule (one
    inference pass that calibration can replay offline for any thresholds). With
    ``lazy=True`` (and early stopping on) the signal is read first and the provisional
    decision only when the signal meets τ_s, or after the last round: the same stops,
    without paying for a decision that cannot end the debate.
    """

    signal_last_round: bool = True

    def __init__(self, tau_s: float, tau_v: float, *, stop_early: bool = True, lazy: bool = False):
        self.tau_s = tau_s
        self.tau_v = tau_v
        self.stop_early = stop_early
        self.lazy = lazy

    @abstractmethod
    async def signal(self, state: DebateState) -> tuple[float, dict[str, Any]]:
        """The stop margin and any details worth recording."""

    @abstractmethod
    async def provisional(self, state: DebateState) -> JudgeDecision:
        """A provisional decision on the debate so far, with a confidence."""

    async def after_round(self, state: DebateState) -> StopCheck:
        import asyncio

        decision: JudgeDecision | None
        if state.is_last_round and not self.signal_last_round:
            margin, details = None, {}
            decision = await self.provisional(state)
        elif self.lazy and self.stop_early and not state.is_last_round:
            margin, details = await self.signal(state)
            decision = await self.provisional(state) if margin >= self.tau_s else None
        else:
            (margin, details), decision = await asyncio.gather(
                self.signal(state), self.provisional(state)
            )
        confidence = None
        if decision is not None:
            confidence = decision.confidence if decision.confidence is not None else 0.0
        data = {"stop_margin": margin, "confidence": confidence, **details}
        met = (
            margin is not None
            and confidence is not None
            and margin >= self.tau_s
            and confidence >= self.tau_v
        )
        data["thresholds_met"] = met
        if met and self.stop_early:
            return StopCheck(
                round=state.round, stop=True, decision=decision, reason="thresholds met", data=data
            )
        if state.is_last_round:
            return StopCheck(
                round=state.round, stop=True, decision=decision, reason="last round", data=data
            )
        reason = "thresholds met; early stopping off" if met else "thresholds not met"
        if decision is None:
            reason = "stop signal below τ_s; no provisional decision asked"
        return StopCheck(round=state.round, stop=False, reason=reason, data=data)
