"""HiSS's configuration (Zhang and Gao, Towards LLM-based Fact Verification on News
Claims with a Hierarchical Step-by-Step Prompting Method, AACL 2023).

See README.md for where each default comes from.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from veracity.core.bounds import PromptChars
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import GenerationSettings, ResultsPerSearch, RetrievalSettings
from veracity.prompt_layout import LayoutSetting


class HissConfig(ChoiceConfig, LayoutSetting, GenerationSettings, RetrievalSettings):
    """Settings of the ``hiss`` method."""

    request_options = (
        "max_subclaims", "max_questions", "search", "omission_aware", "examples", "temperature",
    )  # fmt: skip

    # passages shown at every step: the claim's own (given) evidence, or none; auto: the
    # claim's evidence when it carries some
    evidence: Literal["auto", "given", "none"] = "auto"
    search: bool = True  # search the web for a question the model is not confident about
    source: str | None = None  # the source searched (None: every source given, combined)
    # "+RA" (RADAR Table 2): an omission-aware pass (TRACER's intent, assumptions and
    # hidden context) before the verdict
    omission_aware: bool = False
    # few-shot, as the release (HiSS.py shows 4 worked LIAR claims): 4 worked claims from
    # LIAR's training split, ours (examples.yaml), in the system text of the decomposition,
    # questioning and verdict prompts; false: zero-shot (our earlier default)
    examples: bool = True
    max_subclaims: int = Field(default=4, ge=1, le=10)
    max_questions: int = Field(default=3, ge=1, le=10)  # questions per sub-claim
    top_k: ResultsPerSearch = 3  # results per search
    # results whose URL contains one of these are dropped, as HiSS's release drops every
    # result whose link contains "fact" (no fact-checker's verdict leaks in); []: keep all
    drop_result_urls_with: list[str] = Field(default_factory=lambda: ["fact"], max_length=20)
    max_passage_chars: PromptChars = Field(default=1000, ge=100)
    max_input_chars: PromptChars = 4000
    text_chars: PromptChars = Field(default=300, ge=40)  # a sub-claim's, question's or answer's cap
    max_reasoning_chars: PromptChars = Field(default=1500, ge=100)
