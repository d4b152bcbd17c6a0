"""FactCheck-GPT's configuration (Wang, Reddy, Mujahid, Arora, Rubashevskii, Geng,
Afzal, Pan, Borenstein, Pillai, Augenstein, Gurevych and Nakov, *Factcheck-Bench:
Fine-Grained Evaluation Benchmark for Automatic Fact-checkers*, Findings of EMNLP 2024).
See README.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from veracity.core.bounds import PromptChars, Temperature
from veracity.evidence.claims import ExtractionConfig
from veracity.methods.base import MethodConfig
from veracity.methods.config import (
    GenerationSettings,
    ReplyTokens,
    ResultsPerSearch,
    RetrievalSettings,
)
from veracity.prompt_layout import LayoutSetting, PromptLayout


class FactCheckGPTConfig(MethodConfig, LayoutSetting, GenerationSettings, RetrievalSettings):
    """Settings of the ``factcheck_gpt`` method."""

    request_options = ("queries_per_claim", "query_rounds", "top_k", "max_claims")

    # query generation as the release's (src/retrieve.py): `query_rounds` samples at
    # `query_temperature` from a prompt with 6 worked examples (`query_examples`, ours:
    # examples.yaml), each writing as many questions as the claim needs, at most
    # `queries_per_claim` (the release's examples show 1-4); the union is searched,
    # repeats dropped. Before issue 40: one call at `temperature`, no examples, 2 queries
    # (query_rounds=1, query_temperature=0, query_examples=false, queries_per_claim=2)
    queries_per_claim: int = Field(default=4, ge=1, le=10)
    query_rounds: int = Field(default=2, ge=1, le=5)
    query_temperature: Temperature = 0.7
    query_examples: bool = True
    # results read per query (the release: the first 5 pages of each Google search)
    top_k: ResultsPerSearch = 5
    max_claims: int = Field(default=10, ge=1, le=50)
    # the pipeline's first three subtasks, each its own step: decomposition,
    # decontextualisation, check-worthiness
    extraction: ExtractionConfig = Field(default_factory=lambda: ExtractionConfig(mode="sentence"))
    # release (default): one verification call per claim over its evidence (reasoning,
    # error, correction, factuality), stances only when that reply is unusable, one
    # supporting passage then making the claim true; weighted_stances (ours before issue
    # 40): 4-way stances summed (support 1, partial 0.5, refute -1, > 0)
    verdict_rule: Literal["release", "weighted_stances"] = "release"
    # passages (default, the release's src/retrieve.py): each result cut into windows of
    # `passage_sentences` sentences every `passage_stride`, ranked against the query with
    # the `ranker` embedding model, `passages_per_result` non-overlapping ones kept per
    # result, `passages_per_query` per query, `passages_per_claim` taken in turn across
    # the queries; snippets (ours before issue 40): each result's text cut to
    # `max_result_chars`, every one kept
    evidence: Literal["passages", "snippets"] = "passages"
    passage_sentences: int = Field(default=5, ge=1, le=20)
    passage_stride: int = Field(default=2, ge=1, le=20)
    max_sentence_chars: int = Field(default=250, ge=20, le=5000)  # longer ones are dropped
    passages_per_result: int = Field(default=3, ge=1, le=10)
    passages_per_query: int = Field(default=5, ge=1, le=20)
    passages_per_claim: int = Field(default=5, ge=1, le=20)
    ranker: str = "all-MiniLM-L6-v2"  # embedding model (the release: a cross-encoder)
    max_page_chars: int = Field(default=20_000, ge=500, le=500_000)  # text read per result
    max_reasoning_chars: int = Field(default=1000, ge=100, le=10_000)
    query_chars: PromptChars = Field(default=200, ge=20)
    max_input_chars: PromptChars = 4000
    max_tokens: ReplyTokens = 512
    # paper (default): the templates' order, system text first, so the same step of
    # the next check reuses its instructions; shared (ours): one system note for the
    # check, then the claim, so a claim's query and stance prompts open alike
    # (veracity.prompt_layout). Measured on the embedded model over 10 one-sentence
    # claims, shared computed more prompt tokens per check (see the README)
    prompt_layout: PromptLayout = "paper"
