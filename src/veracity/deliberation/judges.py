"""Judges: read a debate and decide — or, where allowed, say the debate is not done yet.

`LLMJudge` asks for JSON with a reason and a verdict from the label space, optionally
extended by an "insufficient" option (ZoFia's ternary judge). Per-label probabilities are
read from the verdict token's logprobs when the backend returns them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity import context
from veracity.labels import LabelSpace
from veracity.llm.base import LLM, Message
from veracity.llm.probs import choice_probabilities
from veracity.llm.structured import complete_structured

if TYPE_CHECKING:
    from veracity.deliberation.debate import DebateState

INSUFFICIENT = "INSUFFICIENT"


class JudgeDecision(BaseModel):
    """A judge's ruling.

    Attributes:
        label: a label of the space, or None when the judge found the debate insufficient.
        insufficient: the judge asked for more debate.
        reason: the judge's justification.
        probabilities: per-option probabilities (labels, plus INSUFFICIENT when offered).
        confidence: probability of the chosen option, when known.
        judge: which judge ruled.
        round: the round after which it ruled.
    """

    model_config = ConfigDict(extra="forbid")

    label: str | None
    insufficient: bool = False
    reason: str = ""
    probabilities: dict[str, float] | None = None
    confidence: float | None = None
    judge: str = "judge"
    round: int | None = None


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
        top_logprobs: alternatives read at the verdict token (0: do not ask).
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
        top_logprobs: int = 10,
    ):
        self.name = name
        self.llm = llm
        self.labels = labels
        self.build = build
        self.allow_insufficient = allow_insufficient
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.top_logprobs = top_logprobs

    @property
    def options(self) -> tuple[str, ...]:
        extra = (INSUFFICIENT,) if self.allow_insufficient else ()
        return (*self.labels.labels, *extra)

    async def judge(self, state: DebateState) -> JudgeDecision:
        want_probs = self.llm.capabilities.logprobs and self.top_logprobs > 0
        result = await complete_structured(
            self.llm,
            self.build(state),
            verdict_model(self.options),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            logprobs=want_probs,
            top_logprobs=self.top_logprobs if want_probs else None,
            tag=f"{self.name}:{state.round}",
        )
        choice = result.value.verdict
        probs = choice_probabilities(result.response, self.options, field="verdict")
        decision = JudgeDecision(
            label=None if choice == INSUFFICIENT else self.labels.parse(choice),
            insufficient=choice == INSUFFICIENT,
            reason=result.value.reason,
            probabilities=probs.probs if probs else None,
            confidence=probs.probs[choice] if probs else None,
            judge=self.name,
            round=state.round,
        )
        context.current().event(
            "ruling",
            self.name,
            round=state.round,
            decision=choice,
            reason=decision.reason,
            probabilities=decision.probabilities,
        )
        return decision
