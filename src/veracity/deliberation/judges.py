"""Judges: read a debate and decide — or, where allowed, say the debate is not done yet.

`LLMJudge` asks for JSON with a reason and a verdict from the label space, optionally
extended by an "insufficient" option (ZoFia's ternary judge). Per-label probabilities come
from `veracity.llm.choice.ask_choice`: the verdict token's logprobs when the backend
returns them, else (when the judge's `ChoicePolicy` allows) sampled rulings.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, Field, create_model

from veracity.core import context
from veracity.core.events import Ruling
from veracity.core.labels import LabelSpace
from veracity.deliberation.state import DebateState, JudgeDecision
from veracity.llm.base import LLM, Message
from veracity.llm.choice import ChoicePolicy, ask_choice

INSUFFICIENT = "INSUFFICIENT"


class Judge(Protocol):
    name: str

    async def judge(self, state: DebateState) -> JudgeDecision: ...


JudgePrompt = Callable[["DebateState"], list[Message]]


def verdict_model(options: Sequence[str], max_chars: int = 1000) -> type[BaseModel]:
    """Reason then verdict. The reason is length-capped: constrained decoders enforce the
    cap, so a model cannot loop inside the string until its token budget runs out."""
    return create_model(
        "JudgeReply",
        reason=(
            str,
            Field(max_length=max_chars, description="justification citing debate and evidence"),
        ),
        verdict=(Literal[tuple(options)], Field(description="the ruling")),
    )


class LLMJudge:
    """A judge backed by an LLM.

    Args:
        name: role name in traces ("judge", "round_judge", ...).
        llm: the model.
        labels: the label space of the verdict.
        build: prompt builder `(state) -> messages`.
        allow_insufficient: add the INSUFFICIENT option (ternary judge).
        reason_chars: the most characters of the ruling's reason (`verdict_model`); the
            prompt should name the same limit, so that a model which follows it is
            never cut off.
        choice: how the ruling's probabilities are estimated (default: logprobs at the
            verdict token when the backend has them, no sampling).
    """

    def __init__(
        self,
        name: str,
        llm: LLM,
        labels: LabelSpace,
        build: JudgePrompt,
        *,
        allow_insufficient: bool = False,
        temperature: float = 0.0,
        max_tokens: int = 512,
        choice: ChoicePolicy | None = None,
        reason_chars: int = 1000,
    ):
        if reason_chars < 1:
            raise ValueError(f"reason_chars must be at least 1, not {reason_chars}")
        self.name = name
        self.llm = llm
        self.labels = labels
        self.build = build
        self.allow_insufficient = allow_insufficient
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.choice = choice or ChoicePolicy()
        self.reason_chars = reason_chars

    @property
    def options(self) -> tuple[str, ...]:
        extra = (INSUFFICIENT,) if self.allow_insufficient else ()
        return (*self.labels.labels, *extra)

    async def judge(self, state: DebateState) -> JudgeDecision:
        answer = await ask_choice(
            self.llm,
            self.build(state),
            verdict_model(self.options, self.reason_chars),
            "verdict",
            self.options,
            tag=f"{self.name}:{state.round}",
            policy=self.choice,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        choice = answer.label
        decision = JudgeDecision(
            label=None if choice == INSUFFICIENT else self.labels.parse(choice or ""),
            insufficient=choice == INSUFFICIENT,
            reason=answer.value.reason,
            probabilities=answer.probabilities,
            confidence=answer.confidence,
            judge=self.name,
            round=state.round,
            estimator=answer.estimator,
            matched_mass=answer.matched_mass,
            samples=answer.samples,
            answer=answer.answer,
            note=answer.note,
        )
        context.current().emit(
            Ruling(
                name=self.name,
                round=state.round,
                decision=choice,
                reason=decision.reason,
                probabilities=decision.probabilities,
                confidence=decision.confidence,
                answer=answer.answer,
                estimator=answer.estimator,
                matched_mass=answer.matched_mass,
                detail={"note": answer.note},
            )
        )
        return decision
