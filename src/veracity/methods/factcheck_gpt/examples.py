"""FactCheck-GPT's query examples (`examples.yaml`), read and rendered once per process.

The release's question-generation prompt (yuxiaw/Factcheck-GPT ``src/retrieve.py``
``QGEN_PROMPT``) shows 6 statements, each with the one to four searches that would
verify it; ours are 6 claims from LIAR's training split with questions we wrote.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict, Field

from veracity.methods.examples import read_examples


class Example(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int  # the claim's id in LIAR's train.tsv
    claim: str
    queries: list[str] = Field(min_length=1, max_length=4)


@functools.cache
def query_examples() -> tuple[Example, ...]:
    return tuple(read_examples(__package__, list[Example]))


@functools.cache
def rendered_examples() -> str:
    """The examples as prompt text: each claim, then its numbered searches."""
    return "\n\n".join(
        "\n".join(
            [f"Claim: {e.claim}", "Searches that would verify it:"]
            + [f"{n}. {q}" for n, q in enumerate(e.queries, 1)]
        )
        for e in query_examples()
    )
