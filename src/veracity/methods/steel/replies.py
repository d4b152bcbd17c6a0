"""STEEL's replies: each round keeps the useful passages and either decides or asks for a
re-search (`RESEARCH`) with a new query; after the last round a label is required."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.labels import LabelSpace

RESEARCH = "RESEARCH"  # the round's decision to search again instead of answering

_MODELS: dict[tuple[Any, ...], type[BaseModel]] = {}


def round_model(space: LabelSpace, passages: int, chars: int, query_chars: int):
    """A round's reply: the useful passages' numbers, the reasoning, a label or RESEARCH,
    and the next query when it is RESEARCH."""
    key = ("round", space.name, *space.labels, passages, chars, query_chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "SteelRound",
            __config__=ConfigDict(extra="forbid"),
            useful=(
                list[int],
                Field(max_length=max(passages, 1), description="numbers of the useful passages"),
            ),
            reasoning=(str, Field(max_length=chars, description="what the evidence shows")),
            decision=(
                Literal[(RESEARCH, *space.labels)],
                Field(description=f"a label when the evidence suffices, else {RESEARCH}"),
            ),
            query=(
                str,
                Field(max_length=query_chars, description=f"with {RESEARCH}: the next query"),
            ),
        )
    return _MODELS[key]


def final_model(space: LabelSpace, chars: int) -> type[BaseModel]:
    """The forced verdict after the last round: reasoning, then a label."""
    key = ("final", space.name, *space.labels, chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "SteelVerdict",
            __config__=ConfigDict(extra="forbid"),
            reasoning=(str, Field(max_length=chars, description="what the evidence shows")),
            label=(space.literal(), Field(description="the chosen label")),
        )
    return _MODELS[key]
