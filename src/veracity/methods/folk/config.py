"""FOLK's configuration (Wang and Shu, *Explainable Claim Verification via
Knowledge-Grounded Reasoning with Large Language Models*, Findings of EMNLP 2023). See
README.md for where each default comes from."""

from __future__ import annotations

from pydantic import Field

from veracity.core.bounds import MaxTokens, PromptChars, Temperature
from veracity.methods.base import ChoiceConfig
from veracity.prompt_layout import LayoutSetting


class FolkConfig(ChoiceConfig, LayoutSetting):
    """Settings of the ``folk`` method."""

    request_options = ("max_predicates", "top_k", "examples")

    source: str | None = None  # the knowledge source the questions go to (None: the only one)
    max_predicates: int = Field(default=5, ge=1, le=10)  # sub-claims (predicates) per claim
    # few-shot, as the release (examples.yaml, ours): 8 worked decompositions, 5 predictions
    examples: bool = True
    top_k: int = Field(default=3, ge=1, le=10)  # results read to answer each question
    max_result_chars: PromptChars = Field(default=500, ge=50)
    max_answer_chars: PromptChars = Field(default=300, ge=20)
    max_explanation_chars: PromptChars = Field(default=1200, ge=100)
    max_input_chars: PromptChars = 2000
    temperature: Temperature = 0.0
    max_tokens: MaxTokens = 600
