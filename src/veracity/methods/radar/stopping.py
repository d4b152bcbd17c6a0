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

from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity import context
from veracity.deliberation import (
    DebateState,
    JudgeDecision,
    LLMJudge,
    ProbabilityStop,
    StopCheck,
)
from veracity.deliberation.judges import verdict_model
from veracity.llm.base import LLM, Message, StructuredOutputError
from veracity.llm.probs import ChoiceProbs, choice_probabilities, sampled_choice_probabilities
from veracity.llm.structured import complete_structured
from veracity.methods.radar.config import RadarConfig

STOP, CONTINUE = "STOP", "CONTINUE"


class StopReply(BaseModel):
    """The stop agent's answer."""

    model_config = ConfigDict(extra="forbid")

    decision: Literal["CONTINUE", "STOP"] = Field(
        description="STOP when a well-founded verdict is already possible, else CONTINUE"
    )


class ChoiceEstimator:
    """Probabilities of a constrained answer: from logprobs, or by sampling k answers.

    Args:
        llm: the model.
        cfg: RADAR's config (estimator, k, sampling temperature, top logprobs).
    """

    def __init__(self, llm: LLM, cfg: RadarConfig):
        self.llm = llm
        self.cfg = cfg

    @property
    def use_logprobs(self) -> bool:
        return self.cfg.estimator != "sampling" and self.llm.capabilities.logprobs

    async def sample(
        self,
        messages: list[Message],
        output: type[BaseModel],
        field: str,
        choices: Sequence[str],
        *,
        tag: str,
        max_tokens: int,
    ) -> ChoiceProbs:
        """Frequencies of `field` over k answers sampled at the sampling temperature.

        Raises:
            StructuredOutputError: none of the k samples gave a usable answer.
        """

        async def one(i: int) -> str | None:
            try:
                result = await complete_structured(
                    self.llm,
                    messages,
                    output,
                    temperature=self.cfg.sample_temperature,
                    max_tokens=max_tokens,
                    seed=i,
                    tag=f"{tag}:sample{i}",
                )
            except StructuredOutputError as exc:
                context.current().event("error", tag, error=str(exc), sample=i)
                return None
            return str(getattr(result.value, field))

        try:
            return await sampled_choice_probabilities(one, choices, self.cfg.samples_k)
        except ValueError as exc:
            raise StructuredOutputError(f"{tag}: {exc}", attempts=[]) from exc

    async def ask(
        self,
        messages: list[Message],
        output: type[BaseModel],
        field: str,
        choices: Sequence[str],
        *,
        tag: str,
        max_tokens: int,
    ) -> tuple[str | None, ChoiceProbs]:
        """The greedy answer (None when sampled) and the distribution over `choices`."""
        if self.use_logprobs:
            result = await complete_structured(
                self.llm,
                messages,
                output,
                temperature=0.0,
                max_tokens=max_tokens,
                logprobs=True,
                top_logprobs=self.cfg.top_logprobs,
                tag=tag,
            )
            probs = choice_probabilities(result.response, choices, field=field)
            if probs is not None:
                return str(getattr(result.value, field)), probs
            context.current().event(
                "note", tag, note="no usable logprobs at the answer token; sampling instead"
            )
        probs = await self.sample(messages, output, field, choices, tag=tag, max_tokens=max_tokens)
        return None, probs


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
        self.estimator = ChoiceEstimator(llm, cfg)
        self.stop_prompt = stop_prompt
        self.round_judge = round_judge
        self._provisional: dict[int, tuple[JudgeDecision, str, int]] = {}

    async def signal(self, state: DebateState) -> tuple[float, dict[str, Any]]:
        tag = f"stop:{state.round}"
        answer, probs = await self.estimator.ask(
            self.stop_prompt(state),
            StopReply,
            "decision",
            (CONTINUE, STOP),
            tag=tag,
            max_tokens=self.cfg.max_tokens_stop,
        )
        margin = probs.probs[STOP] - probs.probs[CONTINUE]
        details = {
            "p_stop": probs.probs[STOP],
            "p_continue": probs.probs[CONTINUE],
            "stop_answer": answer,
            "stop_estimator": probs.method,
            "stop_samples": probs.samples,
        }
        context.current().event(
            "stop_signal", "stop_agent", round=state.round, margin=margin, **details
        )
        return margin, details

    async def provisional(self, state: DebateState) -> JudgeDecision:
        decision = await self.round_judge.judge(state)
        probs, method, samples = decision.probabilities, "logprobs", 0
        if probs is None:
            options = self.round_judge.options
            sampled = await self.estimator.sample(
                self.round_judge.build(state),
                verdict_model(options),
                "verdict",
                options,
                tag=f"{self.round_judge.name}:{state.round}",
                max_tokens=self.cfg.max_tokens_judge,
            )
            probs, method, samples = sampled.probs, sampled.method, sampled.samples
        confidence = max(probs.values())
        context.current().event(
            "ruling",
            "round_judge",
            round=state.round,
            decision=decision.label,
            confidence=confidence,
            estimator=method,
            samples=samples,
        )
        decision = decision.model_copy(
            update={"probabilities": probs, "confidence": confidence, "judge": "round_judge"}
        )
        self._provisional[state.round] = (decision, method, samples)
        return decision

    async def after_round(self, state: DebateState) -> StopCheck:
        """The base check, with the round judge's verdict (used or not) in its data."""
        check = await super().after_round(state)
        asked = self._provisional.pop(state.round, None)
        if asked is not None:
            decision, method, samples = asked
            check.data.update(
                label=decision.label,
                probabilities=decision.probabilities,
                judge_estimator=method,
                judge_samples=samples,
            )
        return check
