"""What a debate's participants see and hand back: the state, a ruling, a stopping check.

These live apart from the agents, judges and policies that use them so that those
modules and the debate engine import them one way (no circle through `debate`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.labels import LabelSpace
from veracity.deliberation.transcript import Transcript


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
        estimator: how the probabilities were estimated (``logprobs`` or ``sampling``).
        matched_mass: the probability mass that matched an option (see `ChoiceResult`).
        samples: rulings sampled for the probabilities.
        answer: the option the judge's reply decoded; `label` is the most probable
            option (see `veracity.llm.choice`), which can differ.
        note: what a reader must know about the probabilities (tie, overruled answer,
            none readable).
    """

    model_config = ConfigDict(extra="forbid")

    label: str | None
    insufficient: bool = False
    reason: str = ""
    probabilities: dict[str, float] | None = None
    confidence: float | None = None
    judge: str = "judge"
    round: int | None = None
    estimator: str | None = None
    matched_mass: float | None = None
    samples: int = 0
    answer: str | None = None
    note: str | None = None


class StopCheck(BaseModel):
    """The outcome of a stopping check after one round.

    Attributes:
        stop: end the debate now.
        decision: the decision to use when stopping (None: ask the final judge, or
            abstain when there is none).
        reason: why it stopped or went on (for traces).
        data: signals measured (probabilities, margins) — kept for calibration.
    """

    model_config = ConfigDict(extra="forbid")

    round: int
    stop: bool
    decision: JudgeDecision | None = None
    reason: str = ""
    data: dict[str, Any] = Field(default_factory=dict)


@dataclass
class DebateState:
    """What agents, judges and policies see."""

    labels: LabelSpace
    transcript: Transcript
    round: int
    phase: str
    last_round: int
    materials: dict[str, Any] = field(default_factory=dict)  # claim, evidence pool, ...
    checks: list[StopCheck] = field(default_factory=list)

    @property
    def is_last_round(self) -> bool:
        return self.round >= self.last_round
