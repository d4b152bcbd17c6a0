"""D2D's configuration (Han, Zheng and Tang, Debate-to-Detect: Reformulating
Misinformation Detection as a Real-World Debate with Large Language Models, 2025).

We have no copy of the paper: the defaults follow the authors' public code release as we
read it (see README.md), with its setting's name in a comment where it has one.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from veracity.core.bounds import MaxTokens, PromptChars, Temperature
from veracity.evidence.passages import EvidenceMode
from veracity.methods.base import MethodConfig
from veracity.prompt_layout import LayoutSetting

Dimension = Literal["accuracy", "source_reliability", "reasoning", "clarity", "ethics"]
# what each judge weighs (the release's DIMENSIONS, in our words)
DIMENSIONS: dict[str, str] = {
    "accuracy": "factual accuracy",
    "source_reliability": "the reliability of the sources each side relies on",
    "reasoning": "the soundness and internal consistency of each side's reasoning",
    "clarity": "clarity and neutrality of language",
    "ethics": "ethical responsibility and the potential for harm",
}


class D2DConfig(MethodConfig, LayoutSetting):
    """Settings of the ``d2d`` method (see README.md for where each comes from)."""

    # auto: the claim's own evidence, else a search of the given sources, else none (the
    # model's knowledge, as D2D's first release); given / retrieved insist on one
    evidence: EvidenceMode = "auto"
    source: str | None = None  # which source to search (None: every source given)
    top_k: int = Field(default=5, ge=1, le=50)  # passages retrieved for the debate
    query_chars: PromptChars = Field(default=500, ge=20)  # the query is the input text, cut here
    max_passage_chars: PromptChars = Field(default=600, ge=100)  # each passage is cut here
    max_input_chars: PromptChars = 4000
    free_rounds: int = Field(default=1, ge=0, le=5)  # FREE_ROUNDS: free-debate exchanges
    profiles: bool = True  # domain-specific profile for each debater (domain detection)
    profile_temperature: Temperature = 1.0  # the release samples profiles at temperature 1
    max_tokens_profile: MaxTokens = 80  # one sentence
    temperature: Temperature = 1.0  # T: debaters and judges
    max_tokens_turn: MaxTokens = 1024  # MAX_COMPLETION_TOKENS
    # each earlier turn as later prompts show it
    turn_chars: PromptChars = Field(default=1500, ge=200)
    dimensions: list[Dimension] = Field(  # the scoring judges, one per dimension
        default_factory=lambda: list(DIMENSIONS), min_length=1
    )
    points: int = Field(default=7, ge=2, le=100)  # each judge splits this many points
    max_tokens_judge: MaxTokens = 256
    summary: bool = True  # the summary judge writes the rationale
    summary_temperature: Temperature = 0.2
    max_tokens_summary: MaxTokens = 400

    @model_validator(mode="after")
    def _distinct(self) -> D2DConfig:
        if len(set(self.dimensions)) != len(self.dimensions):
            raise ValueError("dimensions must not repeat")
        return self
