"""Asking a model for a label and turning the answer into verdict fields. Shared by the
prompt-based methods (direct, cot, rag, react); the asking is `veracity.llm.choice`'s.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from veracity import context
from veracity.labels import LabelSpace
from veracity.llm.base import LLM, Message
from veracity.llm.choice import ChoicePolicy, ChoiceResult, ask_choice

_SENTENCE_END = re.compile(r"[.!?…](?:[\"')\]]*)(?=\s|$)")
_ENDED = re.compile(r"[.!?…][\"')\]]*$")


def whole_sentences(text: str) -> str:
    """`text` ending at a sentence end: reasoning cut off by its length cap (the schema's
    ``max_length`` or the token budget) loses its unfinished last sentence, and the cut is
    marked ``[…]``. Text that ends properly, or has no sentence end at all (a phrase), is
    returned as it is."""
    text = text.strip()
    if not text or _ENDED.search(text):
        return text
    ends = list(_SENTENCE_END.finditer(text))
    if not ends:
        return text
    return text[: ends[-1].end()] + " […]"


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
