"""Keyword selection: SC-MMR (ZoFia Eq. 4–5, Algorithm 3) and TF-IDF keywords (Table 3).

SC-MMR picks query keywords from salient entities, trading salience against redundancy
with a weight that shifts towards diversity as the set grows:

    λ_k = max(λ_min, λ_max − exp(α·k − β))                         k = |selected|
    MMR(U_i) = λ_k · S_hier(U_i) − (1 − λ_k) · max_{U_j selected} cos(U_i, U_j)

Algorithm 3, step by step (this module follows it exactly):

1. Embed every candidate once and precompute the pairwise cosine matrix.
2. The most salient candidate is the seed; it is selected unconditionally.
3. MMR*_prev starts at 1.0.
4. While candidates remain: compute λ_k for the current k, score every remaining
   candidate, take the best (the first one on ties). If MMR_best ≤ γ · MMR*_prev, stop;
   otherwise select it and set MMR*_prev = MMR_best.

With the paper's γ = 0.5 and MMR*_prev = 1.0 the second keyword needs MMR > 0.5, which
asks for a salience above ~0.56 even with no redundancy (λ_1 ≈ 0.889). Hierarchical
salience with MiniLM is usually lower (on 50 PolitiFact++ articles with spaCy NER: median
0.14, 90th percentile 0.31), and 49 of those 50 articles got a single keyword. That is
the algorithm as published; `mmr_prev_init` is configurable for experiments.

The TF-IDF extractor serves the "TF-IDF" query variant of Table 3: it replaces the
entity extractor, and its terms can go through salience and SC-MMR like entities.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from veracity.core.bounds import Items, Weight
from veracity.nlp.embeddings import Embedder, get_embedder
from veracity.nlp.entities import get_sentences


class SCMMRConfig(BaseModel):
    """SC-MMR parameters (paper defaults, section 3.3, 5.1 and 5.5)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lambda_min: float = Field(default=0.1, ge=0.0, le=1.0)  # lower bound λ_min
    lambda_max: float = Field(default=1.0, ge=0.0, le=1.0)  # λ_max
    alpha: Weight = 0.3  # annealing rate α
    beta: Weight = 2.5  # annealing offset β
    gamma: Weight = Field(default=0.5, ge=0.0)  # SC-MMR decay factor γ (termination)
    # Initial MMR*_prev. Algorithm 3 sets 1.0; "seed" uses the seed's own MMR score
    # (λ_0 · S_hier(seed), its diversity term being empty), which is how section 3.3
    # states the rule: each pick is compared with the previous pick's score.
    mmr_prev_init: Weight | Literal["seed"] = 1.0
    # Exactly this many keywords (fewer if there are fewer candidates), the γ stop rule
    # off: the fixed-k sensitivity study of section 5.5 (Figure 3). None: the γ rule.
    fixed_k: Items | None = Field(default=None, ge=1)


def lambda_k(k: int, config: SCMMRConfig | None = None) -> float:
    """The weight schedule λ_k = max(λ_min, λ_max − exp(α·k − β)) (Eq. 5)."""
    if k < 0:
        raise ValueError("k must be non-negative")
    c = config or SCMMRConfig()
    return max(c.lambda_min, c.lambda_max - math.exp(c.alpha * k - c.beta))


class SelectedKeyword(BaseModel):
    """A keyword chosen by SC-MMR.

    Attributes:
        text: the keyword.
        index: its position in the candidate list.
        salience: its salience score S_hier.
        mmr: its MMR score when chosen (None for the seed, chosen by salience alone).
        lambda_k: the weight used when it was chosen (None for the seed).
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    index: int
    salience: float
    mmr: float | None
    lambda_k: float | None


class SCMMRResult(BaseModel):
    """The selected keywords and why the loop stopped (for traces).

    Attributes:
        selected: keywords in selection order.
        stop_reason: "exhausted" (no candidates left), "decay" (γ rule) or "fixed_k".
        rejected: the best remaining candidate when the γ rule stopped the loop.
        rejected_mmr: its MMR score.
        stop_bound: γ · MMR*_prev it failed to beat.
    """

    model_config = ConfigDict(extra="forbid")

    selected: list[SelectedKeyword]
    stop_reason: str
    rejected: str | None = None
    rejected_mmr: float | None = None
    stop_bound: float | None = None

    @property
    def keywords(self) -> list[str]:
        return [k.text for k in self.selected]


def _keyword(
    candidates: Sequence[str], sal: np.ndarray, i: int, mmr: float | None, lam: float | None
) -> SelectedKeyword:
    return SelectedKeyword(
        text=candidates[i], index=i, salience=float(sal[i]), mmr=mmr, lambda_k=lam
    )


def sc_mmr(
    candidates: Sequence[str],
    salience: Sequence[float],
    similarity: np.ndarray,
    config: SCMMRConfig | None = None,
) -> SCMMRResult:
    """Run Algorithm 3 on a precomputed similarity matrix.

    Args:
        candidates: candidate keywords U.
        salience: S_hier of each candidate (same order).
        similarity: (n, n) matrix, ``similarity[i, j]`` = cos(U_i, U_j).
        config: SC-MMR parameters.

    Raises:
        ValueError: sizes that disagree or a non-finite score.
    """
    c = config or SCMMRConfig()
    n = len(candidates)
    sal = np.asarray(salience, dtype=np.float64)
    sim = np.asarray(similarity, dtype=np.float64)
    if sal.shape != (n,) or sim.shape != (n, n):
        raise ValueError(f"{n} candidates need {n} saliences and an {n}x{n} matrix")
    if not (np.all(np.isfinite(sal)) and np.all(np.isfinite(sim))):
        raise ValueError("salience and similarity must be finite")
    if n == 0:
        return SCMMRResult(selected=[], stop_reason="exhausted")
    seed = int(np.argmax(sal))
    selected = [_keyword(candidates, sal, seed, None, None)]
    remaining = [i for i in range(n) if i != seed]
    if c.mmr_prev_init == "seed":
        mmr_prev = lambda_k(0, c) * float(sal[seed])
        selected[0] = _keyword(candidates, sal, seed, mmr_prev, lambda_k(0, c))
    else:
        mmr_prev = float(c.mmr_prev_init)
    while remaining and (c.fixed_k is None or len(selected) < c.fixed_k):
        lam = lambda_k(len(selected), c)
        chosen = [s.index for s in selected]
        best, best_mmr = -1, -math.inf
        for i in remaining:
            mmr = lam * sal[i] - (1.0 - lam) * float(sim[i, chosen].max())
            if mmr > best_mmr:
                best, best_mmr = i, mmr
        if c.fixed_k is None and best_mmr <= c.gamma * mmr_prev:
            return SCMMRResult(
                selected=selected,
                stop_reason="decay",
                rejected=candidates[best],
                rejected_mmr=float(best_mmr),
                stop_bound=float(c.gamma * mmr_prev),
            )
        mmr_prev = best_mmr
        selected.append(_keyword(candidates, sal, best, float(best_mmr), lam))
        remaining.remove(best)
    if c.fixed_k is not None and remaining:
        return SCMMRResult(selected=selected, stop_reason="fixed_k")
    return SCMMRResult(selected=selected, stop_reason="exhausted")


def select_keywords(
    salience: Mapping[str, float],
    *,
    embedder: Embedder | None = None,
    config: SCMMRConfig | None = None,
) -> SCMMRResult:
    """SC-MMR over a {keyword: salience} mapping, embedding the keywords in one batch.

    Args:
        salience: keyword → S_hier (insertion order breaks ties).
        embedder: embedder for the keywords (default: the shared MiniLM).
        config: SC-MMR parameters.
    """
    names = list(salience)
    if not names:
        return SCMMRResult(selected=[], stop_reason="exhausted")
    vectors = np.asarray((embedder or get_embedder()).embed(names), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("the embedder returned a zero vector; cosine is undefined")
    vectors = vectors / norms
    return sc_mmr(names, [salience[k] for k in names], vectors @ vectors.T, config)


# --------------------------------------------------------------------------- TF-IDF

_WORD = re.compile(r"[^\W\d_][\w'’-]*[^\W_]|[^\W\d_]", re.UNICODE)


class ScoredTerm(BaseModel):
    """A TF-IDF term: term frequency in the text times inverse document frequency."""

    model_config = ConfigDict(extra="forbid")

    term: str
    score: float
    tf: int
    df: int


def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def _terms(text: str, stop: frozenset[str], max_ngram: int) -> list[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    out = []
    for n in range(1, max_ngram + 1):
        for i in range(len(words) - n + 1):
            gram = words[i : i + n]
            if gram[0] in stop or gram[-1] in stop or any(len(w) < 2 for w in gram):
                continue
            out.append(" ".join(gram))
    return out


def tfidf_keywords(
    text: str,
    *,
    top_n: int = 10,
    background: Sequence[str] | None = None,
    max_ngram: int = 1,
) -> list[ScoredTerm]:
    """The `top_n` terms of `text` by TF-IDF.

    tf is the term's count in `text`; idf = ln((1 + N) / (1 + df)) + 1 (smoothed, as in
    scikit-learn), where the N documents are `background` when given, or else the
    sentences of `text` itself. With sentences as documents a term spread over many
    sentences scores lower than a concentrated one; a background corpus of other
    articles gives the classic "what is special about this text" reading. English stop
    words (spaCy's list) and one-letter words are dropped; n-grams may not start or end
    with a stop word. Ties are broken by first occurrence.

    Raises:
        ValueError: blank text, top_n < 1 or max_ngram < 1.
    """
    if not text.strip():
        raise ValueError("TF-IDF needs a non-empty text")
    if top_n < 1 or max_ngram < 1:
        raise ValueError("top_n and max_ngram must be at least 1")
    stop = _stop_words()
    documents = list(background) if background is not None else get_sentences(text)
    if not documents:
        raise ValueError("TF-IDF needs at least one background document")
    df: Counter[str] = Counter()
    for doc in documents:
        df.update(set(_terms(doc, stop, max_ngram)))
    tf = Counter(_terms(text, stop, max_ngram))
    first = {t: i for i, t in reversed(list(enumerate(_terms(text, stop, max_ngram))))}
    n_docs = len(documents)
    scored = [
        ScoredTerm(
            term=t,
            score=count * (math.log((1 + n_docs) / (1 + df[t])) + 1.0),
            tf=count,
            df=df[t],
        )
        for t, count in tf.items()
    ]
    scored.sort(key=lambda s: (-s.score, first[s.term]))
    return scored[:top_n]
