"""FactCheck-GPT's configuration (Wang, Reddy, Mujahid, Arora, Rubashevskii, Geng,
Afzal, Pan, Borenstein, Pillai, Augenstein, Gurevych and Nakov, *Factcheck-Bench:
Fine-Grained Evaluation Benchmark for Automatic Fact-checkers*, Findings of EMNLP 2024).
See README.md."""

from __future__ import annotations

from pydantic import Field

from veracity.evidence.claims import ExtractionConfig
from veracity.methods.base import MethodConfig
from veracity.prompt_layout import PromptLayout


class FactCheckGPTConfig(MethodConfig):
    """Settings of the ``factcheck_gpt`` method."""

    request_options = ("queries_per_claim", "top_k", "max_claims")

    source: str | None = None  # the search engine (None: the only one)
    queries_per_claim: int = Field(default=2, ge=1, le=5)
    top_k: int = Field(default=3, ge=1, le=10)  # passages kept per query
    max_claims: int = Field(default=10, ge=1, le=50)
    # the pipeline's first three subtasks: decomposition, decontextualisation, check-worthiness
    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    max_result_chars: int = Field(default=400, ge=50)
    query_chars: int = Field(default=200, ge=20)
    max_input_chars: int = 4000
    temperature: float = 0.0
    max_tokens: int = 512
    # paper (default): the templates' order, system text first, so the same step of
    # the next check reuses its instructions; shared (ours): one system note for the
    # check, then the claim, so a claim's query and stance prompts open alike
    # (veracity.prompt_layout). Measured on the embedded model over 10 one-sentence
    # claims, shared computed more prompt tokens per check (see the README)
    prompt_layout: PromptLayout = "paper"
