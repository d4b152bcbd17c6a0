"""FactAgent's configuration (Li, Zhang and Malthouse, Large Language Model Agent for
Fake News Detection, 2024). See README.md for where each default comes from."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from veracity.core.bounds import PromptChars
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import GenerationSettings, ReplyTokens, RetrievalSettings
from veracity.prompt_layout import LayoutSetting

Tool = Literal["phrase", "language", "commonsense", "standing", "search", "url"]
TOOLS: tuple[Tool, ...] = ("phrase", "language", "commonsense", "standing", "search", "url")


class FactAgentConfig(ChoiceConfig, LayoutSetting, GenerationSettings, RetrievalSettings):
    """Settings of the ``factagent`` method."""

    request_options = ("max_tokens",)

    # the expert workflow: each tool in this order (url: only for inputs with a URL)
    tools: list[Tool] = Field(default_factory=lambda: list(TOOLS), min_length=1)
    source: str | None = None  # the search tool's source (None: every source, combined)
    # the search query: the title, else the text
    query_chars: PromptChars = Field(default=200, ge=20)
    max_input_chars: PromptChars = 4000
    # each tool's and the verdict's reasoning
    max_reasoning_chars: PromptChars = Field(default=1200, ge=100)
    # every call's output cap (ZoFia Figure 4's budgets)
    max_tokens: ReplyTokens = 600
