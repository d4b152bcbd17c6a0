"""FacTool's configuration (Chern, Chern, Chen, Yuan, Feng, Zhou, He, Neubig and Liu,
*FacTool: Factuality Detection in Generative AI — A Tool Augmented Framework for
Multi-Task and Multi-Domain Scenarios*, arXiv:2307.13528). See README.md."""

from __future__ import annotations

from pydantic import Field

from veracity.evidence.claims import ExtractionConfig
from veracity.methods.base import ChoiceConfig
from veracity.prompt_layout import PromptLayout


class FacToolConfig(ChoiceConfig):
    """Settings of the ``factool`` method."""

    request_options = ("queries_per_claim", "top_k", "max_claims")

    source: str | None = None  # the search engine (None: the only one)
    queries_per_claim: int = Field(default=2, ge=1, le=5)  # FacTool KB-QA: two queries a claim
    top_k: int = Field(default=3, ge=1, le=10)  # results kept per query
    max_claims: int = Field(default=10, ge=1, le=50)
    # FacTool extracts self-contained claims in one step: decomposition only
    extraction: ExtractionConfig = Field(
        default_factory=lambda: ExtractionConfig(decontextualise=False, checkworthiness=False)
    )
    max_result_chars: int = Field(default=400, ge=50)
    query_chars: int = Field(default=200, ge=20)
    max_reasoning_chars: int = Field(default=1000, ge=100)
    max_input_chars: int = 4000
    temperature: float = 0.0
    max_tokens: int = 512
    # shared (ours): one system note for the check, then the claim, so a claim's query
    # and verification prompts open alike and a server reuses the prefix
    # (veracity.prompt_layout); paper: the templates' order (system text first)
    prompt_layout: PromptLayout = "shared"
