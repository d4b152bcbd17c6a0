"""RADAR's dual-threshold early stopping (section 3.3, Appendix A.2).

After each round two signals are read:

- the stop agent answers CONTINUE or STOP; the stop margin is
  s = p(STOP) − p(CONTINUE), from the probabilities of the answer's first token;
- the round judge (the judge's prompt over the debate so far) gives a provisional
  verdict; its confidence is c = the largest label probability.

The debate ends after a round when s ≥ τ_s and c ≥ τ_v (the provisional verdict is then
final), and after the last round in any case. By default the round judge is asked only
when s ≥ τ_s (`lazy_judge`). Probabilities come from token logprobs
when the backend returns them; otherwise k answers are sampled and their frequencies
used. Every check records which estimator produced its numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.core import context
from veracity.core.errors import StructuredOutputError
from veracity.core.events import StopSignal
from veracity.deliberation import (
    DebateState,
    JudgeDecision,
    LLMJudge,
    ProbabilityStop,
    StopCheck,
)
from veracity.llm.base import LLM, Message
from veracity.llm.choice import ask_choice
from veracity.methods.radar.config import RadarConfig

STOP, CONTINUE = "STOP", "CONTINUE"


class StopReply(BaseModel):
    """The stop agent's answer."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["CONTINUE", "STOP"] = Field(
        description="STOP when a well-founded verdict is already possible, else CONTINUE"
    )


class RadarStop(ProbabilityStop):
    """Stop agent + round judge with thresholds τ_s and τ_v (see the module docstring).

    Args:
        llm: the model.
        cfg: RADAR's config (thresholds, estimator, early stopping on or off).
        stop_prompt: builds the stop agent's messages from the debate state.
        round_judge: the judge run over the debate so far after every round.
    """

    signal_last_round = False  # the debate ends after the last round anyway

    def __init__(
        self,
        llm: LLM,
        cfg: RadarConfig,
        stop_prompt: Callable[[DebateState], list[Message]],
        round_judge: LLMJudge,
    ):
        super().__init__(cfg.tau_s, cfg.tau_v, stop_early=cfg.early_stop, lazy=cfg.lazy_judge)
        self.cfg = cfg
        self.llm = llm
        self.choice = cfg.choice
        self.stop_prompt = stop_prompt
        self.round_judge = round_judge
        self._provisional: dict[int, JudgeDecision] = {}

    async def signal(self, state: DebateState) -> tuple[float, dict[str, Any]]:
        tag = f"stop:{state.round}"
        answer = await ask_choice(
            self.llm,
            self.stop_prompt(state),
            StopReply,
            "decision",
            (CONTINUE, STOP),
            tag=tag,
            policy=self.choice,
            max_tokens=self.cfg.max_tokens_stop,
            need_answer=False,
        )
        probs = answer.probabilities
        if probs is None:  # estimator "logprobs" and no usable logprobs at the answer
            raise StructuredOutputError(f"{tag}: no probabilities for the stop answer", [])
        margin = probs[STOP] - probs[CONTINUE]
        details = {
            "p_stop": probs[STOP],
            "p_continue": probs[CONTINUE],
            "stop_answer": answer.answer,
            "stop_estimator": answer.estimator,
            "stop_samples": answer.samples,
            "stop_matched_mass": answer.matched_mass,
            # set when a logprob reading matched too little mass and was replaced by samples
            "stop_logprob_mass": answer.logprob_mass,
        }
        context.current().emit(
            StopSignal(name="stop_agent", round=state.round, margin=margin, detail=details)
        )
        return margin, details

    async def provisional(self, state: DebateState) -> JudgeDecision:
        """The round judge's ruling; its probabilities are sampled when logprobs give none
        (the round judge samples per the config's `choice`)."""
        decision = await self.round_judge.judge(state)
        if decision.probabilities is None or decision.confidence is None:
            raise StructuredOutputError(
                f"round_judge:{state.round}: no probabilities for the ruling", []
            )
        # c = max_y p(y) is the probability of the ruling's own label: the judge's label
        # is the most probable one (veracity.llm.choice), so a stop adopts the label
        # its confidence belongs to
        decision = decision.model_copy(update={"judge": "round_judge"})
        self._provisional[state.round] = decision
        return decision

    async def after_round(self, state: DebateState) -> StopCheck:
        """The base check, with the round judge's verdict (used or not) in its data."""
        check = await super().after_round(state)
        decision = self._provisional.pop(state.round, None)
        if decision is not None:
            check.data.update(
                label=decision.label,
                judge_answer=decision.answer,
                probabilities=decision.probabilities,
                judge_estimator=decision.estimator,
                judge_samples=decision.samples,
                judge_matched_mass=decision.matched_mass,
                judge_note=decision.note,
            )
        return check
