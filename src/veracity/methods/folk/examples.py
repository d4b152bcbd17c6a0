"""FOLK's worked examples (`examples.yaml`), read and rendered once per process.

The release prompts its decomposition with 8 worked claims and its prediction with 5
(wang2226/FOLK ``prompt_library.py``: ``logic_decompose``, ``logic_aggregate``); ours are
in our own words and the file says where the claims come from.
"""

from __future__ import annotations

import functools

from pydantic import BaseModel, ConfigDict, Field

from veracity.methods.examples import read_examples


class DecomposeExample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim: str
    predicates: list[tuple[str, str, str]] = Field(min_length=1)  # predicate, sub-claim, question


class PredictExample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim: str
    grounded: list[tuple[str, str, str]] = Field(min_length=1)  # predicate, question, answer
    judged: list[str] = Field(min_length=1)
    holds: bool
    explanation: str


class Examples(BaseModel):
    model_config = ConfigDict(extra="forbid")

    decompose: list[DecomposeExample] = Field(min_length=1)
    predict: list[PredictExample] = Field(min_length=1)


@functools.cache
def folk_examples() -> Examples:
    return read_examples(__package__, Examples)


@functools.cache
def decompose_examples() -> str:
    """The decomposition examples as prompt text: claim, predicates, follow-up questions."""
    return "\n\n".join(
        "\n".join(
            [f"Claim: {e.claim}", "Predicates:"]
            + [f"{p} ::: {s}" for p, s, _ in e.predicates]
            + [f"Follow-up question: {q}" for _, _, q in e.predicates]
        )
        for e in folk_examples().decompose
    )


@functools.cache
def predict_examples() -> str:
    """The prediction examples as prompt text: claim, grounded answers, the judgement of
    each predicate and their conjunction, the verdict and an explanation."""
    return "\n\n".join(
        "\n".join(
            [f"Claim: {e.claim}", "Predicates, questions and grounded answers:"]
            + [f"{p}\nQ: {q}\nA: {a}" for p, q, a in e.grounded]
            + ["Prediction:", *e.judged]
            + [f"The claim is {'supported' if e.holds else 'not supported'}."]
            + [f"Explanation: {e.explanation}"]
        )
        for e in folk_examples().predict
    )
