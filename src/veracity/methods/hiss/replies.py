"""HiSS's reply models: sub-claims, question steps, a searched answer, the omission pass
and the verdict. Each is built once per size (and label space) and validated before use.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.labels import LabelSpace

_STRICT = ConfigDict(extra="forbid")
_MODELS: dict[tuple[Any, ...], type[BaseModel]] = {}


def _text(chars: int, description: str, *, empty: bool = False) -> Any:
    return (str, Field(min_length=0 if empty else 1, max_length=chars, description=description))


def subclaims_model(count: int, chars: int) -> type[BaseModel]:
    """The decomposition: 1..`count` sub-claims, each one explicit point of the claim."""
    key = ("subclaims", count, chars)
    if key not in _MODELS:
        item = Annotated[str, Field(min_length=1, max_length=chars)]
        _MODELS[key] = create_model(
            "HissSubclaims",
            __config__=_STRICT,
            subclaims=(
                list[item],  # type: ignore[valid-type]
                Field(min_length=1, max_length=count, description="the claim's points"),
            ),
        )
    return _MODELS[key]


def steps_model(count: int, chars: int) -> type[BaseModel]:
    """Questions about one sub-claim, in order, each with the model's own answer and
    whether it is confident of that answer; ``done`` when they settle the sub-claim."""
    key = ("steps", count, chars)
    if key not in _MODELS:
        step = create_model(
            "HissQuestion",
            __config__=_STRICT,
            question=_text(chars, "one question that checks part of the sub-claim"),
            confident=(bool, Field(description="whether you are sure of your answer")),
            answer=_text(chars, "your answer to the question", empty=True),
        )
        _MODELS[key] = create_model(
            "HissSteps",
            __config__=_STRICT,
            steps=(list[step], Field(min_length=1, max_length=count)),  # type: ignore[valid-type]
            done=(bool, Field(description="true when the questions so far settle the sub-claim")),
        )
    return _MODELS[key]


def answer_model(chars: int) -> type[BaseModel]:
    """A question answered from search results."""
    key = ("answer", chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "HissAnswer",
            __config__=_STRICT,
            answer=_text(chars, "the answer the results support, or that they do not say"),
        )
    return _MODELS[key]


def omission_model(chars: int) -> type[BaseModel]:
    """The "+RA" pass: what the claim is meant to convey, what it takes for granted, and
    the context the evidence holds that the claim leaves out."""
    key = ("omission", chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "HissOmission",
            __config__=_STRICT,
            intent=_text(chars, "what the claim is meant to make the reader believe"),
            assumptions=_text(chars, "what the claim takes for granted"),
            hidden_context=_text(
                chars, "context in the evidence that the claim leaves out", empty=True
            ),
        )
    return _MODELS[key]


def verdict_model(space: LabelSpace, chars: int) -> type[BaseModel]:
    """The verdict: reasoning over the answered questions, then a label."""
    key = ("verdict", space.name, *space.labels, chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "HissVerdict",
            __config__=_STRICT,
            reasoning=_text(chars, "how the answers bear on the claim", empty=True),
            label=(space.literal(), Field(description="the chosen label")),
        )
    return _MODELS[key]
