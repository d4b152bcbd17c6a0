"""Self-Ask's worked examples (`examples.yaml`), read and rendered once per process."""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict, Field

from veracity.methods.examples import read_examples


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim: str
    chain: list[tuple[str, str]] = Field(min_length=1)  # follow-up question, intermediate answer
    answer: str


@functools.cache
def self_ask_examples() -> tuple[Example, ...]:
    return tuple(read_examples(__package__, list[Example]))


@functools.cache
def rendered_examples() -> str:
    """The examples in Self-Ask's notation: follow-ups, intermediate answers, the answer."""
    return "\n\n".join(
        "\n".join(
            [f"Claim: {e.claim}", "Are follow-up questions needed here: Yes."]
            + [f"Follow up: {q}\nIntermediate answer: {a}" for q, a in e.chain]
            + [f"So the final answer is: {e.answer}."]
        )
        for e in self_ask_examples()
    )
