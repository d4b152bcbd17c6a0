"""Context-aware sense disambiguation of a keyword (ZoFia section 3.4, Eq. 7).

A keyword often names several Wikipedia entries. Each candidate sense o_m is tried in the
entity's own local context: the entity's mentions in C(U) are replaced by o_m's
description, giving C(U ← o_m), and the sense whose substituted context stays closest to
the original one wins:

    o* = argmax_m cos(v_C(U), v_C(U ← o_m))

All contexts are embedded in one batch with the shared sentence embedder. Every
occurrence of the entity in the context is replaced (whole words, case-insensitive), so
that a context naming the entity twice is read consistently.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from veracity.nlp.embeddings import Embedder, get_embedder


class SenseCandidate(BaseModel):
    """One candidate sense, as a Wikipedia search returns it.

    Attributes:
        title: the entry's title.
        description: the text substituted for the entity (a short description or the
            summary's opening); must not be blank.
        ref: an identifier for the caller (page id, URL), carried through untouched.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str
    description: str = Field(min_length=1, pattern=r"\S")
    ref: str | None = None


class SenseScore(BaseModel):
    """A candidate's score: cos(v_C(U), v_C(U ← o_m))."""

    model_config = ConfigDict(extra="forbid")

    candidate: SenseCandidate
    score: float
    modified_context: str


class Disambiguation(BaseModel):
    """The chosen sense and the scores of all candidates (in input order)."""

    model_config = ConfigDict(extra="forbid")

    entity: str
    context: str
    best: SenseCandidate
    best_index: int
    scores: list[SenseScore]


def substitute(context: str, entity: str, replacement: str) -> str:
    """`context` with every whole-word, case-insensitive occurrence of `entity` replaced.

    Raises:
        ValueError: blank entity, or the entity does not occur in the context.
    """
    words = entity.split()
    if not words:
        raise ValueError("the entity to replace is blank")
    body = r"\s+".join(re.escape(w) for w in words)
    left = r"(?<!\w)" if entity.strip()[:1].isalnum() else ""
    right = r"(?!\w)" if entity.strip()[-1:].isalnum() else ""
    pattern = re.compile(left + body + right, re.IGNORECASE)
    replaced, count = pattern.subn(lambda _m: replacement, context)
    if count == 0:
        raise ValueError(f"entity {entity!r} does not occur in its context {context[:120]!r}")
    return replaced


def disambiguate(
    entity: str,
    context: str,
    candidates: Sequence[SenseCandidate],
    *,
    embedder: Embedder | None = None,
) -> Disambiguation:
    """Pick the candidate sense that best fits the entity's local context (Eq. 7).

    Args:
        entity: the entity's text as it appears in `context`.
        context: the entity's local context C(U) (e.g. `EntitySalience.context`).
        candidates: the senses to choose from.
        embedder: sentence embedder (default: the shared MiniLM).

    Returns:
        The best candidate (the first one on ties) and every candidate's score.

    Raises:
        ValueError: no candidates, or the entity does not occur in the context.
    """
    if not candidates:
        raise ValueError(f"no candidate senses to choose from for {entity!r}")
    modified = [substitute(context, entity, c.description.strip()) for c in candidates]
    vectors = np.asarray((embedder or get_embedder()).embed([context, *modified]), np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    if np.any(norms == 0):
        raise ValueError("the embedder returned a zero vector; cosine is undefined")
    scores = (vectors[1:] @ vectors[0]) / (norms[1:] * norms[0])
    best = int(np.argmax(scores))
    return Disambiguation(
        entity=entity,
        context=context,
        best=candidates[best],
        best_index=best,
        scores=[
            SenseScore(candidate=c, score=float(s), modified_context=m)
            for c, s, m in zip(candidates, scores, modified, strict=True)
        ],
    )
