"""ZoFia defaults (paper section 5.1 and Appendix A). The ablations of Tables 2 and 3 are
the variants of ``configs/experiments/zofia_table2.yaml`` and ``zofia_table3.yaml``, each a
few of these settings."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from veracity.core.bounds import Items, MaxTokens, PromptChars, Rounds, Temperature, Weight, Words
from veracity.methods.base import ChoiceConfig
from veracity.methods.config import refuse_own_variant
from veracity.prompt_layout import LayoutSetting

# Outlets excluded from open-web retrieval: ZoFia excludes news sites (to avoid pulling
# copies of the same report) and Wikipedia (fetched separately). The paper gives no list;
# this one covers large English-language outlets and can be replaced in a run config.
NEWS_DOMAINS = (
    "wikipedia.org",
    "cnn.com",
    "foxnews.com",
    "nytimes.com",
    "washingtonpost.com",
    "wsj.com",
    "usatoday.com",
    "nbcnews.com",
    "cbsnews.com",
    "abcnews.go.com",
    "reuters.com",
    "apnews.com",
    "bbc.com",
    "bbc.co.uk",
    "theguardian.com",
    "npr.org",
    "politico.com",
    "thehill.com",
    "bloomberg.com",
    "huffpost.com",
    "nypost.com",
    "dailymail.co.uk",
    "people.com",
    "usmagazine.com",
    "eonline.com",
    "tmz.com",
    "radaronline.com",
    "hollywoodlife.com",
)
# Fact-check sites whose pages would leak the labels of the evaluation sets (section 5.1).
FACTCHECK_DOMAINS = ("gossipcop.com", "politifact.com", "snopes.com")

QueryMode = Literal[
    "entities",  # NER + hierarchical salience + SC-MMR (ZoFia)
    "tfidf",  # Table 3: TF-IDF keywords
    "llm_ner",  # Table 3 (PromptNER-style): the LLM is the NER model; salience + SC-MMR kept
    "llm_keywords",  # Table 3 (Only-LLM NER): the LLM picks the query keywords directly
    "sentence_salience",  # Table 3: the most salient sentence is the query
    "core_claim",  # Table 3: the extracted core claim is the query
]


class ZoFiaConfig(ChoiceConfig, LayoutSetting):
    request_options = (
        "query_mode", "operator", "use_web", "use_wikipedia", "linguist", "expert",
        "claim_verification", "debate", "on_source_error", "temperature",
    )  # fmt: skip

    # --- Stage 1: entity extraction (section 3.1, Algorithm 2)
    ner_backend: Literal["spacy", "hf", "llm"] = "spacy"  # paper: dslim/bert-base-NER
    hf_ner_model: str | None = None  # local path of a token-classification model
    lambda_init: Weight = 0.8  # initial confidence threshold λ_init
    lambda_step: Weight = 0.1  # threshold decrement Δλ
    lambda_floor: Weight = 0.1  # lowest threshold tried
    n_min: Items = 1  # minimum entities to keep n_min (Algorithm 2 asks for a non-empty set)
    # --- Stage 1: salience and keyword selection (sections 3.2–3.3, Algorithm 3)
    embedder: str = "all-MiniLM-L6-v2"  # SBERT encoder (paper: all-MiniLM-L6-v2)
    gamma: Weight = 0.5  # SC-MMR decay factor γ
    alpha: Weight = 0.3  # λ_k schedule slope α
    beta: Weight = 2.5  # λ_k schedule offset β
    lambda_max: Weight = 1.0  # λ_max
    lambda_min: Weight = 0.1  # λ_min
    # Initial MMR*_prev of the γ stop rule. Algorithm 3 writes 1.0, but with SBERT
    # saliences (median ≈ 0.14 on PolitiFact++) that stops after the seed on 49 of 50
    # articles; "seed" compares the second pick with the seed's own score, as section 3.3
    # words the rule. See README.md, Deviations.
    mmr_prev_init: Weight | Literal["seed"] = "seed"
    # Figure 3 (section 5.5): exactly k keywords, the γ stop off (with λ fixed at 0.5 by
    # lambda_min = lambda_max = 0.5). None: SC-MMR's own stop rule.
    fixed_keywords: Items | None = Field(default=None, ge=1)
    query_mode: QueryMode = "entities"
    operator: Literal["AND", "OR"] = "AND"  # conjunctive query (Eq. 6); OR is a Table 3 variant
    # --- Stage 1: retrieval (section 3.4)
    use_web: bool = True
    use_wikipedia: bool = True
    web_source: str = "web"  # name of the open-web source in the method's sources
    wiki_source: str = "wikipedia"  # name of the encyclopedia source
    web_top_k: Items = 10  # at most 10 open-web results
    wiki_sentences: Items = 3  # first 3 sentences of the chosen summary
    wiki_candidates: Items = 10  # senses considered per keyword for disambiguation
    exclude_domains: tuple[str, ...] = NEWS_DOMAINS + FACTCHECK_DOMAINS
    # A source that still fails after its retries: "fail" records the error in the verdict
    # (no label); "continue" goes on without that material and notes it in the trace.
    on_source_error: Literal["fail", "continue"] = "fail"
    # --- Stage 2: analyses (section 4.1)
    linguist: bool = True
    expert: bool = True
    claim_verification: bool = True
    max_sub_claims: Items = 5
    rag_top_k: Items = 5  # chunks per claim before the similarity floor
    theta_sim: Weight = 0.1  # minimum cosine between claim and chunk θ_sim
    chunk_words: Words = 80
    # --- Stage 2: debate (section 4.2, Algorithm 1)
    debate: bool = True
    max_rounds: Rounds = 5  # the judge may ask for more debate up to 5 rounds
    temperature: Temperature = 0.0  # all agents at temperature 0
    max_tokens: MaxTokens = 600
    max_article_chars: PromptChars = 4000  # article text shown to agents (small-context models)
    max_pool_chars: PromptChars = 6000  # evidence pool shown to debaters and the judge

    @model_validator(mode="before")
    @classmethod
    def _no_own_variants(cls, data: Any) -> Any:
        return refuse_own_variant("zofia", data, MOVED_VARIANTS)

    @model_validator(mode="after")
    def _checks(self) -> ZoFiaConfig:
        if not 0 < self.lambda_floor <= self.lambda_init <= 1:
            raise ValueError("need 0 < lambda_floor <= lambda_init <= 1")
        if not (self.linguist or self.expert or self.claim_verification or self.debate):
            raise ValueError("at least one analysis or the debate must be on")
        return self


# the names ZoFia's own variant table had, now experiment variants (name -> file)
MOVED_VARIANTS = {
    **dict.fromkeys(
        ("no_wikipedia", "no_web", "no_retrieval", "no_linguist", "no_expert", "no_analyses",
         "no_claim_verification", "no_debate"),
        "zofia_table2",
    ),
    **dict.fromkeys(
        ("tfidf", "prompt_ner", "llm_keywords", "sentence_salience", "core_claim",
         "or_composition"),
        "zofia_table3",
    ),
}  # fmt: skip
