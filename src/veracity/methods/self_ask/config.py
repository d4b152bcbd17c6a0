"""Self-Ask's configuration (Press, Zhang, Min, Schmidt, Smith and Lewis, *Measuring and
Narrowing the Compositionality Gap in Language Models*, Findings of EMNLP 2023). See
README.md."""

from __future__ import annotations

from pydantic import Field

from veracity.core.bounds import PromptChars
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import (
    GenerationSettings,
    ReplyTokens,
    ResultsPerSearch,
    RetrievalSettings,
)


class SelfAskConfig(ChoiceConfig, GenerationSettings, RetrievalSettings):
    """Settings of the ``self_ask`` method."""

    request_options = ("max_follow_ups", "top_k", "examples")

    max_follow_ups: int = Field(default=4, ge=1, le=10)  # follow-up questions before answering
    # few-shot, as Self-Ask: 4 worked examples (examples.yaml, ours); false: zero-shot
    examples: bool = True
    top_k: ResultsPerSearch = 3  # results read for an intermediate answer
    max_answer_chars: PromptChars = Field(default=200, ge=20)
    max_trajectory_chars: PromptChars = Field(default=4000, ge=500)
    max_input_chars: PromptChars = 2000
    max_tokens: ReplyTokens = 400
