"""FIRE's replies and its repetition checks.

Each step the model reasons over the knowledge gathered so far and either answers with a
label, when it is confident, or asks for one more search: `step_model`'s ``decision``
is a label or `SEARCH`, and ``search_query`` holds the query when it is `SEARCH`. The
probabilities read at ``decision`` say how sure the model was to answer at all (the
mass on `SEARCH` is what it kept for searching on). When the step budget is spent, or
searching stops because it repeats itself, `final_model` asks for a label only.

FIRE stops searching early when the model keeps asking the same thing or the searches
keep returning the same results (`repeats`). Two texts are the same, as in FIRE's
release, when the cosine of their sentence embeddings (all-MiniLM-L6-v2) is above 0.9
(`embedding_cosine`); `word_overlap` (word sets, Jaccard) is kept as a named option
(``repeat_test: words``, see README.md).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, create_model

from veracity.core.labels import LabelSpace

if TYPE_CHECKING:
    from veracity.nlp.embeddings import Embedder

# whether a text says the same as every one of some earlier texts
SameAs = Callable[[str, Sequence[str]], bool]

SEARCH = "SEARCH"  # the step's decision to search once more instead of answering

_WORD = re.compile(r"\w+")
_REASONING = "step-by-step reasoning that sums up the key points of the knowledge"
_MODELS: dict[tuple[str, ...], type[BaseModel]] = {}


def step_model(space: LabelSpace, reasoning_chars: int = 1500, query_chars: int = 200):
    """The step reply: reasoning, then a label or SEARCH, then the query for a search."""
    key = ("step", space.name, *space.labels, str(reasoning_chars), str(query_chars))
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "FireStep",
            reasoning=(
                str,
                Field(max_length=reasoning_chars, description=_REASONING),
            ),
            decision=(
                Literal[(SEARCH, *space.labels)],
                Field(description=f"{SEARCH}, or a label when the knowledge settles it"),
            ),
            search_query=(
                str,
                Field(
                    max_length=query_chars,
                    description=f"with {SEARCH}: one web search query for new evidence; else empty",
                ),
            ),
        )
    return _MODELS[key]


def final_model(space: LabelSpace, reasoning_chars: int = 1500) -> type[BaseModel]:
    """The last answer, when no more searches are made: reasoning, then a label."""
    key = ("final", space.name, *space.labels, str(reasoning_chars))
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "FireAnswer",
            reasoning=(
                str,
                Field(max_length=reasoning_chars, description=_REASONING),
            ),
            label=(space.literal(), Field(description="the chosen label")),
        )
    return _MODELS[key]


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def similarity(a: str, b: str) -> float:
    """Overlap of two texts' word sets (Jaccard): 1.0 for the same words in any order."""
    wa, wb = _words(a), _words(b)
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def word_overlap(threshold: float) -> SameAs:
    """Texts are the same when their word sets overlap (Jaccard) at least `threshold`."""

    def same(text: str, others: Sequence[str]) -> bool:
        return all(similarity(text, other) >= threshold for other in others)

    return same


def embedding_cosine(embedder: Embedder, threshold: float) -> SameAs:
    """Texts are the same when the cosine of their sentence embeddings is above
    `threshold` (FIRE's test: all-MiniLM-L6-v2, above 0.9). Rephrasings with other words
    count as the same, which word sets miss. `embedder` returns unit-length rows."""

    def same(text: str, others: Sequence[str]) -> bool:
        if not others:
            return True
        rows = embedder.embed([text, *others])
        return bool(all(float(c) > threshold for c in rows[1:] @ rows[0]))

    return same


def repeats(
    query: str, queries: Sequence[str], results: Sequence[str], tolerance: int, same: SameAs
) -> Literal["query", "results"] | None:
    """Why searching should stop before `query` is sent, or None to go on.

    ``query``: it repeats each of the last ``tolerance - 1`` queries. ``results``: the
    last search returned what each of the ``tolerance - 1`` searches before it returned.
    `same` says whether a text repeats each of some others (`embedding_cosine`,
    `word_overlap`); it is asked only when there are enough earlier texts.
    """
    window = tolerance - 1
    recent = list(queries[-window:])
    if len(recent) == window and same(query, recent):
        return "query"
    if len(results) >= tolerance:
        last, before = results[-1], list(results[-tolerance:-1])
        if same(last, before):
            return "results"
    return None
