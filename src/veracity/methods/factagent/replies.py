"""FactAgent's reply models: one tool's finding, and the verdict over all findings."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.labels import LabelSpace

_MODELS: dict[tuple[Any, ...], type[BaseModel]] = {}


def finding_model(chars: int) -> type[BaseModel]:
    """A tool's finding: its reasoning, then whether it found a sign of fake news."""
    key = ("finding", chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "FactAgentFinding",
            __config__=ConfigDict(extra="forbid"),
            reasoning=(str, Field(max_length=chars, description="what the check found")),
            suspicious=(bool, Field(description="true when the check found a sign of fake news")),
        )
    return _MODELS[key]


def verdict_model(space: LabelSpace, chars: int) -> type[BaseModel]:
    """The verdict: the findings weighed against the checklist, then a label."""
    key = ("verdict", space.name, *space.labels, chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "FactAgentVerdict",
            __config__=ConfigDict(extra="forbid"),
            reasoning=(str, Field(max_length=chars, description="the findings weighed")),
            label=(space.literal(), Field(description="the chosen label")),
        )
    return _MODELS[key]
