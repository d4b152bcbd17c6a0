"""``teller``: TELLER's cognitive and decision systems, untrained (a ToE Table II baseline).

Cognitive system: the model answers yes or no to each of a fixed set of questions about
the input (`QUESTIONS`); the probability of "yes" (from the answer token's
log-probabilities, else the answer itself) is a logic atom's truth value. Decision
system: a fixed rule in place of TELLER's learned one — each atom counts towards
credibility as itself or negated (a "yes" to "does it contain a factual error?" counts
against), their mean is the veracity score, and the label is the one whose score lies
nearest. No retrieval. See README.md.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.bounds import MaxTokens, PromptChars, Temperature
from veracity.core.context import CheckContext
from veracity.core.events import Stage
from veracity.core.types import CheckInput, Verdict
from veracity.llm.choice import ask_choice
from veracity.methods.base import BaseMethod, ChoiceConfig
from veracity.prompting import input_kind_name, render_input, render_messages

# (atom, question, whether "yes" counts towards credibility); the questions are ours,
# on the dimensions TELLER's expert questions cover (see README.md)
QUESTIONS: tuple[tuple[str, str, bool], ...] = (
    ("known_facts", "Is it consistent with well-established facts that you know?", True),
    (
        "factual_error",
        "Does it contain a factual error: a wrong name, number, date or event?",
        False,
    ),
    ("common_sense", "Is it plausible by common sense?", True),
    ("loaded", "Does it rely on exaggeration or emotionally loaded wording to persuade?", False),
    ("reliable_speaker", "Would a reliable, well-informed source be likely to say it?", True),
    ("missing_context", "Does it leave out context that would change how it is understood?", False),
)


class TellerConfig(ChoiceConfig):
    """Settings of the ``teller`` method."""

    max_input_chars: PromptChars = 4000
    temperature: Temperature = 0.0
    max_tokens: MaxTokens = 32


class YesNo(BaseModel):
    """The answer to one question."""

    model_config = ConfigDict(extra="forbid")

    answer: Literal["yes", "no"] = Field(description="yes or no")


class TellerMethod(BaseMethod):
    """Yes/no questions as truth values, combined by a fixed rule into a label."""

    name = "teller"
    config_class = TellerConfig
    default_labels = "true_false"
    description = "TELLER: yes/no questions as truth values, combined by a fixed rule (baseline)"
    config: TellerConfig

    async def _atom(self, item: CheckInput, atom: str, question: str) -> float:
        """The probability the model answers "yes" to `question` about `item`."""
        cfg = self.config
        messages = render_messages(
            "veracity.methods.teller",
            "question.j2",
            kind=input_kind_name(item),
            input=render_input(item, max_chars=cfg.max_input_chars),
            question=question,
        )
        answer = await ask_choice(
            self.llm, messages, YesNo, "answer", ("yes", "no"), tag=f"{self.name}:{atom}",
            policy=cfg.choice, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
        )  # fmt: skip
        probs = answer.probabilities
        if probs and sum(probs.values()) > 0:
            return probs.get("yes", 0.0) / sum(probs.values())
        return 1.0 if answer.label == "yes" else 0.0

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        space = self.label_space
        yes = await asyncio.gather(*(self._atom(item, a, q) for a, q, _ in QUESTIONS))
        atoms = {a: p for (a, _, _), p in zip(QUESTIONS, yes, strict=True)}
        credible = [p if up else 1.0 - p for (_, _, up), p in zip(QUESTIONS, yes, strict=True)]
        score = sum(credible) / len(credible)
        label = min(space.labels, key=lambda lab: (abs(space.score(lab) - score), lab))
        ctx.emit(Stage(name=self.name, step="decision", atoms=atoms, score=score, label=label))
        said = ", ".join(f"{a} {p:.2f}" for a, p in atoms.items())
        return self.verdict(
            label=label,
            score=score,
            rationale=f"Probability of yes per question: {said}; credibility {score:.2f}.",
            metadata={"atoms": atoms, "credibility": score},
        )
