"""ProgramFC's in-context example programs, one set per dataset (`examples/*.yaml`).

ProgramFC prompts its program writer with worked programs (20 for HoVer, 14 for
FEVEROUS in the release's ``models/prompts.py``); ours are written in our own words and
each file says where its claims come from. A set is read and rendered once per process.
"""

from __future__ import annotations

import functools
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.methods.examples import read_examples

ExampleSet = Literal["hover", "scifact", "none"]


class ExampleStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["Question", "Verify"]
    text: str = Field(min_length=1)
    negated: bool = False


class ExampleProgram(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim: str
    steps: list[ExampleStep] = Field(min_length=1)
    id: int | str | None = None  # the claim's id in the dataset's training split


class ExampleFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dataset: str
    origin: str
    programs: list[ExampleProgram] = Field(min_length=1)


@functools.cache
def example_programs(name: ExampleSet) -> tuple[ExampleProgram, ...]:
    """The example programs of set `name` (none for ``"none"``)."""
    if name == "none":
        return ()
    return tuple(read_examples(__package__, ExampleFile, "examples", f"{name}.yaml").programs)


def program_text(steps: list[ExampleStep]) -> str:
    """A program in ProgramFC's notation: ``answer_i = Question(…)``, ``fact_i =
    Verify(…)``, ``label = Predict(fact_1 and not fact_2)``."""
    lines, facts, answers = [], [], 0
    for s in steps:
        if s.kind == "Question":
            answers += 1
            lines.append(f'answer_{answers} = Question("{s.text}")')
        else:
            facts.append(("not " if s.negated else "") + f"fact_{len(facts) + 1}")
            lines.append(f'fact_{len(facts)} = Verify("{s.text}")')
    return "\n".join([*lines, f"label = Predict({' and '.join(facts)})"])


@functools.cache
def rendered_examples(name: ExampleSet) -> str:
    """Set `name` as prompt text: each claim, then its program ("" for ``"none"``)."""
    return "\n\n".join(f"Claim: {p.claim}\n{program_text(p.steps)}" for p in example_programs(name))
