"""Hierarchical salience of entities (ZoFia Eq. 3) and sentence salience (Table 3 variant).

Hierarchical salience of an entity U found in sentence s_j of a text T:

    C(U)       = s_{j-1} ⊕ s_j ⊕ s_{j+1}          (sentences joined with a space; at the
                                                    first/last sentence the missing
                                                    neighbour is simply absent)
    S_local    = cos(v_U, v_C(U))                 how well the entity fits its context
    S_global   = cos(v_C(U), v_T)                 how central that context is to the text
    S_hier     = S_local · S_global

Vectors come from one sentence embedder (all-MiniLM-L6-v2 by default, through
`get_embedder()`), and every string is embedded in a single batched call. The product
is taken as written, without clipping: with MiniLM both cosines are almost always
positive, and the paper defines no special case.

An entity mentioned in several sentences has one context per distinct sentence; its
salience is the **maximum** of S_hier over those contexts (the context where it is most
central decides), and the winning context is kept: disambiguation later reuses it.
``aggregate="mean"`` averages instead.

Note that MiniLM reads at most 256 word pieces: for a long article v_T describes its
beginning, as it does in the paper's setup.

Sentences come from `veracity.nlp.entities.sentence_spans` (the shared splitter); a
mention's sentence is recomputed from its character offset, so the salience does not
depend on how the NER backend split the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from veracity.nlp.embeddings import Embedder, get_embedder
from veracity.nlp.entities import Entity, sentence_index, sentence_spans


class EntitySalience(BaseModel):
    """Hierarchical salience of one entity.

    Attributes:
        text: the entity's surface text (what was embedded as v_U).
        salience: S_hier after aggregation over the entity's sentences.
        local: S_local of the winning context (for "mean": mean S_local).
        global_: S_global of the winning context (for "mean": mean S_global).
        sentence: index of the winning context's centre sentence.
        context: the winning local context C(U).
        entity: the entity that was scored.
    """

    model_config = ConfigDict(extra="forbid")

    text: str
    salience: float
    local: float
    global_: float
    sentence: int
    context: str
    entity: Entity


class SentenceSalience(BaseModel):
    """Salience of one sentence: cos(v_sentence, v_T)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    text: str
    salience: float


def local_context(sentences: Sequence[str], j: int) -> str:
    """s_{j-1} ⊕ s_j ⊕ s_{j+1}, joined with single spaces."""
    if not 0 <= j < len(sentences):
        raise IndexError(f"sentence {j} is out of range (0..{len(sentences) - 1})")
    return " ".join(s.strip() for s in sentences[max(0, j - 1) : j + 2])


def _rows(vectors: np.ndarray) -> np.ndarray:
    """Unit-length rows, so that dot products are cosines whatever the embedder did."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("the embedder returned a zero vector; cosine is undefined")
    return vectors / norms


def _entity_sentences(entity: Entity, bounds: list[tuple[int, int]], size: int) -> list[int]:
    found = set()
    for m in entity.mentions:
        if not 0 <= m.start < m.end <= size:
            raise ValueError(f"mention {m.text!r} at {m.start}:{m.end} is outside the text")
        found.add(sentence_index(bounds, m.start))
    return sorted(found)


def hierarchical_salience(
    text: str,
    entities: Sequence[Entity],
    *,
    embedder: Embedder | None = None,
    aggregate: Literal["max", "mean"] = "max",
) -> list[EntitySalience]:
    """S_hier for each entity (Eq. 3), in input order.

    Args:
        text: the full text T the entities were found in.
        entities: entities with their mentions' character offsets in `text`.
        embedder: sentence embedder (default: the shared MiniLM).
        aggregate: how to combine an entity's sentences ("max" or "mean").

    Raises:
        ValueError: blank text, an offset outside the text, or an unknown aggregate.
    """
    if aggregate not in ("max", "mean"):
        raise ValueError(f"aggregate must be 'max' or 'mean', not {aggregate!r}")
    if not text.strip():
        raise ValueError("salience needs a non-empty text")
    if not entities:
        return []
    bounds = sentence_spans(text)
    sentences = [text[a:b] for a, b in bounds]
    per_entity = [_entity_sentences(e, bounds, len(text)) for e in entities]
    contexts = sorted({j for js in per_entity for j in js})
    context_text = {j: local_context(sentences, j) for j in contexts}
    names = list(dict.fromkeys(e.text for e in entities))
    batch = names + [context_text[j] for j in contexts] + [text]
    vectors = _rows(embedder_or_default(embedder).embed(batch))
    v_name = dict(zip(names, vectors[: len(names)], strict=True))
    v_ctx = dict(zip(contexts, vectors[len(names) : -1], strict=True))
    v_text = vectors[-1]
    out = []
    for entity, js in zip(entities, per_entity, strict=True):
        local = np.array([float(v_name[entity.text] @ v_ctx[j]) for j in js])
        glob = np.array([float(v_ctx[j] @ v_text) for j in js])
        hier = local * glob
        if aggregate == "max":
            k = int(np.argmax(hier))  # first of equal maxima
            values = (float(hier[k]), float(local[k]), float(glob[k]))
        else:
            k = 0
            values = (float(hier.mean()), float(local.mean()), float(glob.mean()))
        out.append(
            EntitySalience(
                text=entity.text,
                salience=values[0],
                local=values[1],
                global_=values[2],
                sentence=js[k],
                context=context_text[js[k]],
                entity=entity,
            )
        )
    return out


def sentence_salience(text: str, *, embedder: Embedder | None = None) -> list[SentenceSalience]:
    """Each sentence's cosine similarity to the whole text, in text order.

    This is the bi-encoder salience of Bullough et al. (2024) applied to sentences; the
    "Sentence Salience" query variant of ZoFia's Table 3 queries with the top sentence.

    Raises:
        ValueError: blank text.
    """
    if not text.strip():
        raise ValueError("salience needs a non-empty text")
    bounds = sentence_spans(text)
    sentences = [text[a:b] for a, b in bounds]
    vectors = _rows(embedder_or_default(embedder).embed([*sentences, text]))
    scores = vectors[:-1] @ vectors[-1]
    return [
        SentenceSalience(index=i, text=s, salience=float(v))
        for i, (s, v) in enumerate(zip(sentences, scores, strict=True))
    ]


def most_salient_sentence(text: str, *, embedder: Embedder | None = None) -> SentenceSalience:
    """The sentence closest to the whole text (the first one on ties)."""
    scored = sentence_salience(text, embedder=embedder)
    return max(scored, key=lambda s: s.salience)


def embedder_or_default(embedder: Embedder | None) -> Embedder:
    """`embedder`, or the process-wide shared default embedder."""
    return embedder if embedder is not None else get_embedder()
