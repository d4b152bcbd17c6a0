"""STEEL's configuration (Li et al., Re-Search for The Truth: Multi-round
Retrieval-augmented Large Language Models are Strong Fake News Detectors, WWW 2024).
See README.md for where each default comes from."""

from __future__ import annotations

from pydantic import Field

from veracity.core.bounds import PromptChars
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import GenerationSettings, ResultChars, RetrievalSettings
from veracity.prompt_layout import LayoutSetting


class SteelConfig(ChoiceConfig, LayoutSetting, GenerationSettings, RetrievalSettings):
    """Settings of the ``steel`` method."""

    request_options = ("max_rounds", "top_k")

    source: str | None = None  # the source searched (None: every source given, combined)
    max_rounds: int = Field(default=3, ge=1, le=10)  # retrieval rounds before a forced verdict
    max_kept: int = Field(default=8, ge=1, le=40)  # established evidence carried over
    max_result_chars: ResultChars = 500
    query_chars: PromptChars = Field(default=200, ge=20)
    max_input_chars: PromptChars = 4000
    max_reasoning_chars: PromptChars = Field(default=1200, ge=100)
