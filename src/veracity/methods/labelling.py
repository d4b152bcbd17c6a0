"""Asking a model for a label and turning the answer into verdict fields. Shared by the
prompt-based methods (direct, cot, rag, react); the asking is `veracity.llm.choice`'s.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from veracity import context
from veracity.labels import LabelSpace
from veracity.llm.base import LLM, Message
from veracity.llm.choice import ChoicePolicy, ChoiceResult, ask_choice


async def ask_label(
    llm: LLM,
    messages: list[Message],
    output: type[BaseModel],
    space: LabelSpace,
    *,
    tag: str,
    policy: ChoicePolicy | None = None,
    temperature: float = 0.0,
    max_tokens: int = 256,
) -> ChoiceResult:
    """Ask for `output` (which has a ``label`` field over `space`) and read its probabilities.

    The label is canonicalised in `space`; the per-label distribution, its estimator and
    matched mass are recorded in the trace as a decision event.
    """
    answer = await ask_choice(
        llm,
        messages,
        output,
        "label",
        space.labels,
        tag=tag,
        policy=policy,
        temperature=temperature,
        max_tokens=max_tokens,
    )
    answer = answer.model_copy(update={"label": space.parse(answer.label or "")})
    if answer.probabilities is not None:
        context.current().event(
            "decision",
            tag,
            probabilities=answer.probabilities,
            estimator=answer.estimator,
            matched_mass=answer.matched_mass,
            samples=answer.samples,
        )
    return answer


def label_fields(answer: ChoiceResult, space: LabelSpace) -> dict[str, Any]:
    """label, veracity score (expected under the probabilities when known), confidence and
    probabilities, as `Verdict` fields."""
    probs = answer.probabilities
    return {
        "label": answer.label,
        "score": space.expected_score(probs) if probs else space.score(answer.label or ""),
        "confidence": answer.confidence,
        "probabilities": probs,
    }
