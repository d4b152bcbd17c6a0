"""HiSS's worked examples (`examples.yaml`), read and rendered once per process.

The release (jadeCurl/HiSS ``HiSS.py``) opens its prompt with 4 worked LIAR claims, each
taken through the whole method: sub-claims, questions marked sure or unsure, the verdict.
Ours are 4 claims from LIAR's training split with our own decomposition and answers, in
the notation our prompts use; the same text is shown to the decomposition, the
questioning and the verdict prompts (the release shows its one prompt at every step).
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict, Field

from veracity.methods.examples import read_examples


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int  # the claim's id in LIAR's train.tsv
    claim: str
    rating: str  # LIAR's label for it
    subclaims: list[str]  # []: the claim is checked whole
    # sub-claim number (1 for a claim checked whole), question, confident, answer
    questions: list[tuple[int, str, bool, str]] = Field(min_length=1)
    conclusion: str


@functools.cache
def hiss_examples() -> tuple[Example, ...]:
    return tuple(read_examples(__package__, list[Example]))


def _rendered(e: Example) -> str:
    lines = [f"Claim: {e.claim}"]
    if e.subclaims:
        lines.append("Sub-claims:")
        lines += [f"{n}. {s}" for n, s in enumerate(e.subclaims, 1)]
    else:
        lines.append("Sub-claims: none; the claim is simple enough to check whole.")
    current = 0
    for n, question, confident, answer in e.questions:
        if n != current and e.subclaims:
            lines.append(f"Checking sub-claim {n}:")
        current = n
        lines.append(f"Q: {question}")
        if confident:
            lines.append(f"Confident: yes\nA: {answer}")
        else:
            lines.append(f"Confident: no, so it is searched\nA (from the results): {answer}")
    lines.append(f"Verdict: {e.conclusion} On LIAR's six-point scale: {e.rating}.")
    return "\n".join(lines)


@functools.cache
def rendered_examples() -> str:
    """The examples as prompt text, one worked claim after another."""
    return "\n\n".join(_rendered(e) for e in hiss_examples())
