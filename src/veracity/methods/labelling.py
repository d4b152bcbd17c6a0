"""Asking a model for a label: the structured call, the label's token probabilities, and
the verdict fields they give. Shared by the prompt-based methods (direct, cot, rag, react).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from veracity import context
from veracity.labels import LabelSpace
from veracity.llm.base import LLM, LLMResponse, Message
from veracity.llm.probs import ChoiceProbs, choice_probabilities
from veracity.llm.structured import complete_structured


@dataclass
class LabelAnswer:
    """A validated answer whose ``label`` field is a label of `space`."""

    value: Any  # the output model instance
    label: str
    probs: ChoiceProbs | None
    response: LLMResponse
    space: LabelSpace

    def verdict_fields(self) -> dict[str, Any]:
        """label, veracity score (expected under the probabilities when known), confidence."""
        space, probs = self.space, self.probs
        return {
            "label": self.label,
            "score": space.expected_score(probs.probs) if probs else space.score(self.label),
            "confidence": probs.probs[self.label] if probs else None,
            "probabilities": probs.probs if probs else None,
        }


async def ask_label(
    llm: LLM,
    messages: list[Message],
    output: type[BaseModel],
    space: LabelSpace,
    *,
    tag: str,
    temperature: float = 0.0,
    max_tokens: int = 256,
    top_logprobs: int = 10,
) -> LabelAnswer:
    """Ask for `output` (which has a ``label`` field over `space`) and read its probabilities.

    Token log-probabilities are requested when the backend offers them and
    ``top_logprobs > 0``; the per-label distribution found at the label token is recorded
    in the trace as a decision event.
    """
    wants_probs = llm.capabilities.logprobs and top_logprobs > 0
    result = await complete_structured(
        llm,
        messages,
        output,
        temperature=temperature,
        max_tokens=max_tokens,
        logprobs=wants_probs,
        top_logprobs=top_logprobs if wants_probs else None,
        tag=tag,
    )
    label = space.parse(result.value.label)
    probs = choice_probabilities(result.response, space.labels, field="label")
    if probs is not None:
        context.current().event("decision", tag, probabilities=probs.probs, estimator=probs.method)
    return LabelAnswer(result.value, label, probs, result.response, space)
