"""``programfc``: ProgramFC, program-guided claim verification (a baseline).

The model writes a reasoning program for the claim (`prompts/program.j2`): Question
steps that look something up, Verify steps that check a simple fact, and, implied, a
Predict step that is the conjunction of the Verify steps (each possibly negated). The
program is then run in order: a Question is searched in the knowledge source and
answered from the passages (`prompts/question.j2`), and its answer fills ``{answer_N}``
in later steps; a Verify is searched and judged TRUE / FALSE from the passages
(`prompts/verify.j2`, the shared `ask_choice`); Predict is evaluated in code. The
program's steps are reply fields the decoder constrains, so every program runs. See
README.md for the map from ProgramFC to this code.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.context import CheckContext
from veracity.core.events import Note, Stage
from veracity.core.types import CheckInput, Document, Verdict
from veracity.evidence.claims import conjunction_label
from veracity.llm.choice import ask_choice
from veracity.llm.structured import complete_structured
from veracity.methods.base import OneSourceMethod
from veracity.methods.kit import check_tool, gathered_evidence
from veracity.methods.programfc.config import ProgramFCConfig
from veracity.methods.programfc.examples import rendered_examples
from veracity.prompting import render_messages, truncate_chars
from veracity.tools.searching import traced_search

PROMPTS = "veracity.methods.programfc"
YES, NO = "TRUE", "FALSE"
_SLOT = re.compile(r"\{answer_(\d+)\}")


def program_model(max_steps: int, chars: int) -> type[BaseModel]:
    """The program reply: 1 to `max_steps` Question / Verify steps."""
    step = create_model(
        "ProgramStep",
        __config__=ConfigDict(extra="forbid"),
        kind=(Literal["Question", "Verify"], Field(description="Question or Verify")),
        text=(str, Field(min_length=1, max_length=chars)),
        negated=(bool, Field(description="Verify: the claim needs this to be false")),
    )
    return create_model(
        "Program",
        __config__=ConfigDict(extra="forbid"),
        steps=(list[step], Field(min_length=1, max_length=max_steps)),  # type: ignore[valid-type]
    )


def answer_model(chars: int) -> type[BaseModel]:
    return create_model("ProgramAnswer", answer=(str, Field(max_length=chars)))


VerifyReply = create_model("ProgramVerify", holds=(Literal[YES, NO], Field(description="verdict")))


class Executed(BaseModel):
    """One program step as it ran."""

    model_config = ConfigDict(extra="forbid")

    step: int
    kind: Literal["Question", "Verify"]
    written: str
    ran: str  # with earlier answers filled in
    negated: bool = False
    answer: str | None = None  # Question: the answer; Verify: TRUE / FALSE
    p_true: float | None = None
    documents: list[Document] = Field(default_factory=list)


def fill(text: str, answers: list[str]) -> str:
    """`text` with ``{answer_N}`` replaced by the N-th answer (unknown slots kept)."""

    def sub(m: re.Match[str]) -> str:
        n = int(m.group(1))
        return answers[n - 1] if 1 <= n <= len(answers) else m.group(0)

    return _SLOT.sub(sub, text)


class ProgramFCMethod(OneSourceMethod):
    """Write a reasoning program, run it step by step with retrieval (ProgramFC)."""

    name = "programfc"
    config_class = ProgramFCConfig
    search_purpose = "ProgramFC's retrieval"
    default_labels = "supported_refuted"
    input_kinds = ("claim",)
    description = "ProgramFC: a Question/Verify program, run with retrieval (baseline)"
    config: ProgramFCConfig

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        claim = truncate_chars(item.content, cfg.max_input_chars)
        ctx.claim = item.content  # recorded sources replay this claim's searches
        reply = await complete_structured(
            self.llm,
            render_messages(
                PROMPTS, "program.j2", claim=claim, examples=rendered_examples(cfg.examples)
            ),
            program_model(cfg.max_program_steps, cfg.max_step_chars),
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=f"{self.name}:program",
        )
        steps = list(reply.value.steps)  # type: ignore[attr-defined]
        if not any(s.kind == "Verify" for s in steps):  # Predict needs a fact: the claim
            ctx.emit(Note(name=self.name, text="the program verifies nothing: the claim is"))
            steps.append(steps[0].model_copy(update={"kind": "Verify", "text": claim,
                                                     "negated": False}))  # fmt: skip
        ctx.emit(
            Stage(
                name=self.name,
                step="program",
                detail={"program": [f"{s.kind}({s.text})" for s in steps]},
            )
        )
        executed = await self._execute(item, steps, ctx)
        return self._verdict(executed)

    async def _execute(self, item: CheckInput, steps: list[Any], ctx: CheckContext):
        cfg = self.config
        tool = check_tool(self.source, cfg, item)
        answers: list[str] = []
        done: list[Executed] = []
        for n, s in enumerate(steps, 1):
            ran = " ".join(fill(s.text, answers).split())
            obs = await traced_search(tool, ran, actor=self.name, step=n, step_kind=s.kind)
            row = Executed(step=n, kind=s.kind, written=s.text, ran=ran, documents=obs.documents)
            if s.kind == "Question":
                row.answer = await self._question(ran, obs.text, n)
                answers.append(row.answer)
            else:
                row.negated = s.negated
                row.answer, row.p_true = await self._verify(ran, obs.text, n)
            ctx.emit(
                Stage(
                    name=self.name,
                    step=f"step {n} ran",
                    detail={"step_kind": s.kind, "answer": row.answer},
                )
            )
            done.append(row)
        return done

    async def _question(self, question: str, results: str, n: int) -> str:
        cfg = self.config
        reply = await complete_structured(
            self.llm,
            render_messages(PROMPTS, "question.j2", question=question, results=results),
            answer_model(cfg.max_answer_chars),
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=f"{self.name}:step{n}:question",
        )
        return " ".join(reply.value.answer.split()) or "unknown"  # type: ignore[attr-defined]

    async def _verify(self, statement: str, results: str, n: int) -> tuple[str, float | None]:
        cfg = self.config
        messages = render_messages(
            PROMPTS, "verify.j2", statement=statement, results=results, yes=YES, no=NO
        )
        judged = await ask_choice(
            self.llm,
            messages,
            VerifyReply,
            "holds",
            (YES, NO),
            tag=f"{self.name}:step{n}:verify",
            policy=cfg.choice,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )
        return str(judged.label), (judged.probabilities or {}).get(YES)

    def _verdict(self, executed: list[Executed]) -> Verdict:
        facts = [e for e in executed if e.kind == "Verify"]
        holds = [(e.answer == YES) != e.negated for e in facts]
        label = conjunction_label(self.label_space, [all(holds)])
        lines = [f"{'not ' if e.negated else ''}Verify({e.ran}) = {e.answer}" for e in facts] + [
            f"Predict = {'TRUE' if all(holds) else 'FALSE'}"
        ]
        evidence = gathered_evidence((f"step {e.step}: {e.ran}", e.documents) for e in executed)
        return self.verdict(
            label=label,
            rationale="; ".join(lines),
            evidence=evidence,
            metadata={"program": [e.model_dump(exclude={"documents"}) for e in executed]},
        )
