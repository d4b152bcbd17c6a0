"""FacTool's configuration (Chern, Chern, Chen, Yuan, Feng, Zhou, He, Neubig and Liu,
*FacTool: Factuality Detection in Generative AI — A Tool Augmented Framework for
Multi-Task and Multi-Domain Scenarios*, arXiv:2307.13528). See README.md."""

from __future__ import annotations

from typing import Literal

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


class FacToolConfig(ChoiceConfig, LayoutSetting, GenerationSettings, RetrievalSettings):
    """Settings of the ``factool`` method."""

    request_options = ("queries_per_claim", "top_k", "max_claims")

    queries_per_claim: int = Field(default=2, ge=1, le=5)  # FacTool KB-QA: two queries a claim
    # snippets kept per query: the release asks Serper for 10 and keeps the first half
    top_k: ResultsPerSearch = 5
    max_claims: int = Field(default=10, ge=1, le=50)
    # factool (default): FacTool's one call over the whole input, claims under 15 words
    # with every reference resolved (prompts/claims.j2); shared (ours before issue 40):
    # the shared stage with `extraction` (decomposition only, the source's wording)
    claim_extraction: Literal["factool", "shared"] = "factool"
    max_claim_words: int = Field(default=15, ge=3, le=100)
    extraction: ExtractionConfig = Field(
        default_factory=lambda: ExtractionConfig(
            mode="sentence", decontextualise=False, checkworthiness=False
        )
    )
    # release (default): agreement_verification.yaml, the claim judged for factual errors
    # with the evidence as optional help, non-factual only on several contradicting
    # pieces; evidence_backed (ours before issue 40): true only when the evidence backs it
    criterion: Literal["release", "evidence_backed"] = "release"
    # factual (default, the release's response score): a verification with no usable
    # reply counts as factual; error (ours before issue 40): the check fails
    failed_verification: Literal["factual", "error"] = "factual"
    query_chars: PromptChars = Field(default=200, ge=20)
    max_reasoning_chars: PromptChars = Field(default=1000, ge=100)
    max_input_chars: PromptChars = 4000
    max_tokens: ReplyTokens = 512
