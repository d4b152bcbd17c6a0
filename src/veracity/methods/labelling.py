"""Asking a model for a label and turning the answer into verdict fields. Shared by the
prompt-based methods (direct, cot, rag, react); the asking is `veracity.llm.choice`'s.

`settle_probabilities` applies the one rule for shown probabilities to any method's
verdict fields (`BaseMethod.verdict` calls it): probabilities sum to 1 over the label
space, the label is the most probable label, and a tie or an unreadable distribution is
stated in `probability_note`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel

from veracity.core import context
from veracity.core.events import Decision, Note
from veracity.core.labels import LabelSpace
from veracity.llm.base import LLM, Message
from veracity.llm.choice import ChoicePolicy, ChoiceResult, ask_choice
from veracity.llm.probs import most_probable, normalised

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
        context.current().emit(
            Decision(
                name=tag,
                label=answer.label,
                answer=answer.answer,
                probabilities=answer.probabilities,
                estimator=answer.estimator,
                matched_mass=answer.matched_mass,
                samples=answer.samples,
                tie=list(answer.tie),
            )
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
        "probability_note": answer.note,
    }


def settle_probabilities(fields: dict[str, Any], space: LabelSpace) -> dict[str, Any]:
    """`fields` (for a `Verdict`) made to follow the rule for shown probabilities.

    Probabilities are kept for the labels of `space` only and scaled to sum to 1 (mass
    on other options, such as a judge's INSUFFICIENT, is dropped and the note says how
    much); a label that is not the most probable is replaced by the most probable one
    (the original is kept in ``metadata["answer_label"]`` and the trace notes it); a tie
    at the top is stated; `confidence` becomes the probability of the label and `score`
    the expected veracity under the probabilities.
    """
    probs = fields.get("probabilities")
    if not probs:
        return fields
    out = dict(fields)
    notes = [out["probability_note"]] if out.get("probability_note") else []
    kept = normalised(probs, space.labels)
    dropped = {k: v for k, v in probs.items() if k not in space.labels and v > 0}
    if kept is None:
        notes.append(f"no readable probabilities: none fell on a label of {space.name}")
        out.update(probabilities=None, confidence=None, probability_note="; ".join(notes))
        return out
    if dropped:
        shown = ", ".join(f"{k} {v:.2f}" for k, v in dropped.items())
        notes.append(f"scaled to the labels without {shown}")
    label = out.get("label")
    if label is not None:
        decided, tie = most_probable(kept, label)
        if decided != label:
            notes.append(
                f"the answer {label} (p {kept.get(label, 0.0):.2f}) was replaced by the most "
                f"probable label {decided} (p {kept[decided]:.2f})"
            )
            context.current().emit(Note(name="verdict", note=notes[-1]))
            out["metadata"] = {**out.get("metadata", {}), "answer_label": label}
            out["label"] = decided
        if tie and not any("tie" in n for n in notes):
            notes.append(
                f"{' and '.join(tie)} tie at {kept[decided]:.2f}; the answer gives {decided}"
            )
        out["confidence"] = kept[decided]
    out.update(
        probabilities=kept,
        score=space.expected_score(kept),
        probability_note="; ".join(notes) or None,
    )
    return out
