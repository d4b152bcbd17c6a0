"""FactAgent's configuration (Li, Zhang and Malthouse, Large Language Model Agent for
Fake News Detection, 2024). See README.md for where each default comes from."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from veracity.core.bounds import PromptChars, Temperature
from veracity.methods.base import ChoiceConfig
from veracity.prompt_layout import LayoutSetting

Tool = Literal["phrase", "language", "commonsense", "standing", "search", "url"]
TOOLS: tuple[Tool, ...] = ("phrase", "language", "commonsense", "standing", "search", "url")


class FactAgentConfig(ChoiceConfig, LayoutSetting):
    """Settings of the ``factagent`` method."""

    request_options = ("max_tokens",)

    # the expert workflow: each tool in this order (url: only for inputs with a URL)
    tools: list[Tool] = Field(default_factory=lambda: list(TOOLS), min_length=1)
    source: str | None = None  # the search tool's source (None: every source, combined)
    top_k: int = Field(default=5, ge=1, le=20)  # search results read by the search tool
    max_result_chars: PromptChars = Field(default=400, ge=50)
    # the search query: the title, else the text
    query_chars: PromptChars = Field(default=200, ge=20)
    max_input_chars: PromptChars = 4000
    # each tool's and the verdict's reasoning
    max_reasoning_chars: PromptChars = Field(default=1200, ge=100)
    temperature: Temperature = 0.0
    # every call's output cap (ZoFia Figure 4's budgets)
    max_tokens: int = Field(default=600, ge=16, le=8192)
