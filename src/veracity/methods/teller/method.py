"""``teller``: TELLER's cognitive and decision systems, untrained (a ToE Table II baseline).

Cognitive system: the model answers yes or no to each question about the input; the
probability of "yes" (from the answer token's log-probabilities, else the answer itself)
is a logic atom's truth value. By default (``question_set: teller``) the questions are
TELLER's published ones (`TELLER_QUESTIONS`, the release's P1-P8, in our words): one
call first reads the input's key statements, its intent and its speaker's reputation
(TELLER's special questions), which the yes/no questions then read; P7 is asked of each
statement. ``question_set: ours`` asks our six questions (`QUESTIONS`) instead. Decision
system: a fixed rule in place of TELLER's learned one — each atom counts towards
credibility as itself or negated (a "yes" to "is it false?" counts against), their mean
is the veracity score, and the label is the one whose score lies nearest. No retrieval:
the input's own evidence is the background information when it carries some. See
README.md.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from veracity.core.bounds import PromptChars
from veracity.core.context import CheckContext
from veracity.core.events import Stage
from veracity.core.types import CheckInput, Verdict
from veracity.evidence.passages import gather_passages, passage_rows
from veracity.llm.choice import ask_choice
from veracity.llm.structured import complete_structured
from veracity.methods.base import BaseMethod, ChoiceConfig
from veracity.methods.config import GenerationSettings, ReplyTokens
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

# TELLER's published question set (less-and-less-bugs/Trust_TELLER, utils/prompt_loader.py
# Init_Predicate "General", P1-P8), in our words: (atom, question, what it reads besides
# the input, whether "yes" counts towards credibility). The release's binary LIAR runs
# (drive_liar.py) take P1-P6 and P8 once and P7 for up to 3 statements; "evidence" is
# the background information, "intent" and "reputation" are read by the context call
# (TELLER's special questions INTENT and REPUTATION), "statement" is one of STATEMENTS.
TELLER_QUESTIONS: tuple[tuple[str, str, str, bool], ...] = (
    ("p1_true", "Is the {kind} true?", "evidence", True),
    ("p2_background", "Does the {kind} give enough background information?", "", True),
    (
        "p3_objective",
        "Is the background information in the {kind} accurate and objective?",
        "",
        True,
    ),
    (
        "p4_distorted",
        "Has content been deliberately left out of the {kind}, so that its meaning is distorted?",
        "",
        False,
    ),
    (
        "p5_intent",
        "Does the {kind} serve an improper purpose, such as a political or commercial motive?",
        "intent",
        False,
    ),
    (
        "p6_publisher",
        "Has whoever said or published it a record of spreading information for improper purposes?",
        "reputation",
        False,
    ),
    ("p7_statement", "Is the statement true?", "statement", True),
    ("p8_false", "Is the {kind} false?", "evidence", False),
)


class TellerConfig(ChoiceConfig, GenerationSettings):
    """Settings of the ``teller`` method."""

    max_input_chars: PromptChars = 4000
    max_tokens: ReplyTokens = 32
    # teller: TELLER's published questions (P1-P8, TELLER_QUESTIONS) after one call for
    # the statements, intent and reputation they read; ours: our six questions (QUESTIONS),
    # the earlier default
    question_set: Literal["teller", "ours"] = "teller"
    max_statements: int = Field(default=3, ge=1, le=10)  # P7's statements (the release: 3)
    # the background information P1, P7 and P8 read: the input's own evidence when it
    # carries some (auto), else none, as TELLER run without its retrieved evidence
    evidence: Literal["auto", "given", "none"] = "auto"
    max_passage_chars: int = Field(default=1000, ge=100, le=100_000)
    context_tokens: int = Field(default=400, ge=64, le=8192)  # the context call's reply


class YesNo(BaseModel):
    """The answer to one question."""

    model_config = ConfigDict(extra="forbid")

    answer: Literal["yes", "no"] = Field(description="yes or no")


class Context(BaseModel):
    """The context call's reply: TELLER's special questions STATEMENTS, INTENT and
    REPUTATION."""

    model_config = ConfigDict(extra="forbid")

    statements: list[Annotated[str, StringConstraints(max_length=400)]] = Field(max_length=10)
    intent: str = Field(max_length=600)
    reputation: str = Field(max_length=600)


class TellerMethod(BaseMethod):
    """Yes/no questions as truth values, combined by a fixed rule into a label."""

    name = "teller"
    config_class = TellerConfig
    default_labels = "true_false"
    description = "TELLER: yes/no questions as truth values, combined by a fixed rule (baseline)"
    config: TellerConfig

    async def _atom(
        self,
        item: CheckInput,
        atom: str,
        question: str,
        template: str = "question.j2",
        **context: Any,
    ) -> float:
        """The probability the model answers "yes" to `question` about `item`."""
        cfg = self.config
        messages = render_messages(
            "veracity.methods.teller",
            template,
            kind=input_kind_name(item),
            input=render_input(item, max_chars=cfg.max_input_chars),
            question=question,
            **context,
        )  # fmt: skip
        answer = await ask_choice(
            self.llm, messages, YesNo, "answer", ("yes", "no"), tag=f"{self.name}:{atom}",
            policy=cfg.choice, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
        )  # fmt: skip
        probs = answer.probabilities
        if probs and sum(probs.values()) > 0:
            return probs.get("yes", 0.0) / sum(probs.values())
        return 1.0 if answer.label == "yes" else 0.0

    async def _ours(self, item: CheckInput) -> tuple[dict[str, float], list[float], dict]:
        yes = await asyncio.gather(*(self._atom(item, a, q) for a, q, _ in QUESTIONS))
        atoms = {a: p for (a, _, _), p in zip(QUESTIONS, yes, strict=True)}
        credible = [p if up else 1.0 - p for (_, _, up), p in zip(QUESTIONS, yes, strict=True)]
        return atoms, credible, {}

    async def _teller(self, item: CheckInput) -> tuple[dict[str, float], list[float], dict]:
        """TELLER's question set: the context call, then P1-P8 (P7 once per statement)."""
        cfg = self.config
        kind = input_kind_name(item)
        found = await gather_passages(item, cfg.evidence, None)
        passages = passage_rows(found.documents, cfg.max_passage_chars)
        shown = render_input(item, max_chars=cfg.max_input_chars)
        messages = render_messages(
            "veracity.methods.teller", "context.j2", kind=kind, input=shown,
            passages=passages, max_statements=cfg.max_statements,
        )  # fmt: skip
        reply = await complete_structured(
            self.llm, messages, Context, temperature=cfg.temperature,
            max_tokens=cfg.context_tokens, tag=f"{self.name}:context",
        )  # fmt: skip
        context = reply.value
        statements = [" ".join(s.split()) for s in context.statements if s.strip()]
        statements = statements[: cfg.max_statements]
        asks: list[tuple[str, Any, bool]] = []
        for atom, question, reads, up in TELLER_QUESTIONS:
            shown_with = {"passages": [], "intent": "", "reputation": "", "statement": ""}
            if reads == "evidence":
                shown_with["passages"] = passages
            elif reads in ("intent", "reputation"):
                shown_with[reads] = getattr(context, reads).strip()
            text = question.format(kind=kind)
            if reads == "statement":  # P7, once per statement (none: the atom is masked)
                for n, statement in enumerate(statements, 1):
                    one = {**shown_with, "passages": passages, "statement": statement}
                    ask = self._atom(item, f"{atom}{n}", text, "general.j2", **one)
                    asks.append((f"{atom}{n}", ask, up))
                continue
            asks.append((atom, self._atom(item, atom, text, "general.j2", **shown_with), up))
        yes = await asyncio.gather(*(c for _, c, _ in asks))
        atoms = {a: p for (a, _, _), p in zip(asks, yes, strict=True)}
        credible = [p if up else 1.0 - p for (_, _, up), p in zip(asks, yes, strict=True)]
        extra = {"statements": statements, "intent": context.intent.strip(),
                 "reputation": context.reputation.strip()}  # fmt: skip
        if found.origin != "none":
            extra["evidence_setting"] = found.origin
        return atoms, credible, extra

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        space = self.label_space
        if self.config.question_set == "teller":
            atoms, credible, extra = await self._teller(item)
        else:
            atoms, credible, extra = await self._ours(item)
        score = sum(credible) / len(credible)
        label = min(space.labels, key=lambda lab: (abs(space.score(lab) - score), lab))
        ctx.emit(
            Stage(
                name=self.name,
                step="decision",
                label=label,
                detail={"atoms": atoms, "score": score},
            )
        )
        said = ", ".join(f"{a} {p:.2f}" for a, p in atoms.items())
        return self.verdict(
            label=label,
            score=score,
            rationale=f"Probability of yes per question: {said}; credibility {score:.2f}.",
            metadata={"atoms": atoms, "credibility": score,
                      "question_set": self.config.question_set, **extra},
        )  # fmt: skip
