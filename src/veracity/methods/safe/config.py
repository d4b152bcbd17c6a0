"""SAFE's configuration (Wei et al., *Long-form factuality in large language models*,
NeurIPS 2024). Defaults follow the paper and its public release as we read them; see
README.md for where each comes from."""

from __future__ import annotations

from pydantic import Field

from veracity.core.bounds import PromptChars
from veracity.evidence.claims import ExtractionConfig
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import (
    GenerationSettings,
    ReplyTokens,
    ResultsPerSearch,
    RetrievalSettings,
)
from veracity.prompt_layout import LayoutSetting


class SafeConfig(ChoiceConfig, LayoutSetting, GenerationSettings, RetrievalSettings):
    """Settings of the ``safe`` method."""

    request_options = ("max_searches", "top_k", "max_facts")

    max_searches: int = Field(default=5, ge=1, le=10)  # SAFE: searches per fact (max_steps)
    top_k: ResultsPerSearch = 3  # SAFE: results per search (num_searches)
    max_facts: int = Field(default=10, ge=1, le=50)  # facts checked per input, in text order
    # the shared claim-extraction stage: SAFE splits into atomic facts and revises each to
    # be self-contained, sentence by sentence as the paper; it has no check-worthiness step
    # (its relevance step needs a prompt)
    extraction: ExtractionConfig = Field(
        default_factory=lambda: ExtractionConfig(mode="sentence", checkworthiness=False)
    )
    query_chars: PromptChars = Field(default=200, ge=20)  # a search query's cap
    max_reasoning_chars: PromptChars = Field(default=1200, ge=100)
    max_input_chars: PromptChars = 4000
    max_tokens: ReplyTokens = 512
