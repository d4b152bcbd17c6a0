"""FactCheck-GPT's evidence passages, after the release's ``src/retrieve.py``.

The release searches each question, scrapes the first pages, cuts each page into
passages of five sentences every two sentences (sentences over 250 characters dropped
as metadata), ranks them against the question with a cross-encoder, keeps the best
three that do not overlap per page, the best five per question, and hands the verifier
five in all, taken in turn from each question's list. Here the pages are the source's
results (their full text when the source fetches pages, else their snippets), and the
ranking is the cosine similarity of a sentence-embedding model (`veracity.nlp.embeddings`,
``all-MiniLM-L6-v2`` by default): no cross-encoder is available offline.
"""

from __future__ import annotations

import asyncio

import numpy as np
from pydantic import BaseModel, ConfigDict

from veracity.core.types import Document
from veracity.nlp.embeddings import get_embedder
from veracity.nlp.text import sentence_spans


class Passage(BaseModel):
    """A window of sentences of one result, with its rank score for the query."""

    model_config = ConfigDict(extra="forbid")

    text: str
    document: Document
    first: int  # index of its first and last sentence in the result
    last: int
    score: float = 0.0


def windows(doc: Document, size: int, stride: int, max_sentence_chars: int) -> list[Passage]:
    """`doc`'s text cut into passages of `size` sentences, one every `stride` sentences
    (`stride` above `size` is taken as `size`); sentences longer than
    `max_sentence_chars` are left out first."""
    text = doc.text or ""
    sentences = [" ".join(text[s:e].split()) for s, e in sentence_spans(text)] if text else []
    sentences = [s for s in sentences if s and len(s) <= max_sentence_chars]
    step = min(stride, size)
    return [
        Passage(text=" ".join(sentences[i : i + size]), document=doc, first=i, last=i + size - 1)
        for i in range(0, len(sentences), step)
    ]


def _overlaps(p: Passage, kept: list[Passage]) -> bool:
    return any(k.first <= p.first <= k.last or k.first <= p.last <= k.last for k in kept)


async def rank_for_query(
    query: str,
    docs: list[Document],
    *,
    ranker: str,
    size: int,
    stride: int,
    max_sentence_chars: int,
    per_result: int,
    per_query: int,
) -> list[Passage]:
    """The best `per_query` passages of `docs` for `query`: each result's passages
    ranked, its best `per_result` non-overlapping ones kept, then all ranked together."""
    cut = [windows(d, size, stride, max_sentence_chars) for d in docs]
    flat = [p for ps in cut for p in ps]
    if not flat:
        return []
    embedder = get_embedder(ranker)
    vectors = await asyncio.to_thread(embedder.embed, [query, *(p.text for p in flat)])
    scores = np.asarray(vectors[1:] @ vectors[0], dtype=float)
    i = 0
    kept: list[Passage] = []
    for ps in cut:
        scored = [p.model_copy(update={"score": float(scores[i + j])}) for j, p in enumerate(ps)]
        i += len(ps)
        mine: list[Passage] = []
        for p in sorted(scored, key=lambda p: p.score, reverse=True):
            if not _overlaps(p, mine):
                mine.append(p)
            if len(mine) >= per_result:
                break
        kept += mine
    return sorted(kept, key=lambda p: p.score, reverse=True)[:per_query]


def in_turn(per_query: list[list[Passage]], total: int) -> list[Passage]:
    """Up to `total` passages taken in turn from each query's ranked list (the first of
    each, then the second of each, ...), a passage already taken not repeated."""
    out: list[Passage] = []
    seen: set[str] = set()
    depth = max((len(ps) for ps in per_query), default=0)
    for rank in range(depth):
        for ps in per_query:
            if rank < len(ps) and ps[rank].text not in seen and len(out) < total:
                seen.add(ps[rank].text)
                out.append(ps[rank])
    return out
