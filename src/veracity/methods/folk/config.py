"""FOLK's configuration (Wang and Shu, *Explainable Claim Verification via
Knowledge-Grounded Reasoning with Large Language Models*, Findings of EMNLP 2023). See
README.md for where each default comes from."""

from __future__ import annotations

from pydantic import Field

from veracity.core.bounds import PromptChars
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import (
    GenerationSettings,
    ResultChars,
    ResultsPerSearch,
    RetrievalSettings,
)
from veracity.prompt_layout import LayoutSetting


class FolkConfig(ChoiceConfig, LayoutSetting, GenerationSettings, RetrievalSettings):
    """Settings of the ``folk`` method."""

    request_options = ("max_predicates", "top_k", "examples")

    max_predicates: int = Field(default=5, ge=1, le=10)  # sub-claims (predicates) per claim
    # few-shot, as the release (examples.yaml, ours): 8 worked decompositions, 5 predictions
    examples: bool = True
    top_k: ResultsPerSearch = 3  # results read to answer each question
    max_result_chars: ResultChars = 500
    max_answer_chars: PromptChars = Field(default=300, ge=20)
    max_explanation_chars: PromptChars = Field(default=1200, ge=100)
    max_input_chars: PromptChars = 2000
