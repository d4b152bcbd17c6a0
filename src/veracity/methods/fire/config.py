"""FIRE's configuration (Xie et al., FIRE: Fact-checking with Iterative Retrieval and
Verification, Findings of NAACL 2025).

We have no copy of the paper: the defaults follow the settings of the authors' public
code release as we read them (see README.md), with that setting's name in a comment.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from veracity.core.bounds import PromptChars
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import GenerationSettings, ResultsPerSearch, RetrievalSettings
from veracity.prompt_layout import LayoutSetting


class FireConfig(ChoiceConfig, LayoutSetting, GenerationSettings, RetrievalSettings):
    """Settings of the ``fire`` method (see README.md for where each comes from)."""

    max_steps: int = Field(default=5, ge=1, le=20)  # max_steps: verify-or-search rounds
    top_k: ResultsPerSearch = 3  # num_searches: results per search
    # max_tolerance: searching stops when a query repeats one of the last (tolerance - 1)
    # queries, or the last search returned what the (tolerance - 1) before it returned
    tolerance: int = Field(default=2, ge=2, le=10)
    # how two queries (or two searches' results) are judged the same: "embedding", the
    # cosine of their all-MiniLM-L6-v2 sentence embeddings is above repeat_similarity (the
    # release's test); "words", their word sets overlap (Jaccard) at least that much (ours)
    repeat_test: Literal["embedding", "words"] = "embedding"
    repeat_similarity: float = Field(default=0.9, gt=0.0, le=1.0)  # the release's 0.9
    max_input_chars: PromptChars = 4000
    max_reasoning_chars: PromptChars = Field(default=1500, ge=100)  # the reasoning field's cap
    query_chars: PromptChars = Field(default=200, ge=20)  # a search query's cap
