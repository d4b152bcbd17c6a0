"""``hiss``: HiSS, hierarchical step-by-step prompting (a baseline).

The claim is split into sub-claims (`replies.subclaims_model`); each sub-claim is checked
by questions the model asks and answers one after another (`replies.steps_model`). A
question the model is not confident about is searched (when ``search`` is on) and
answered again from the results, and the questioning goes on from there, as HiSS
interrupts its generation at such a question. With ``omission_aware`` ("+RA"), a pass
over the claim's intent, assumptions and left-out context comes before the verdict,
which reads every question and answer (`prompts/verdict.j2`). See README.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.context import CheckContext
from veracity.core.errors import MethodConfigError
from veracity.core.events import Stage
from veracity.core.types import CheckInput, Document, Evidence, Verdict
from veracity.evidence.passages import gather_passages, passage_rows, search_source
from veracity.llm.structured import complete_structured
from veracity.methods.base import BaseMethod
from veracity.methods.hiss import replies
from veracity.methods.hiss.config import HissConfig
from veracity.methods.hiss.examples import rendered_examples
from veracity.methods.kit import check_tool, gathered_evidence
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.prompt_layout import make_layout
from veracity.prompting import input_kind_name, render, render_input
from veracity.retrieval.base import Source
from veracity.retrieval.defaults import SourceNeed
from veracity.tools.base import Observation, SourceTool, render_documents
from veracity.tools.searching import traced_search

PROMPTS = "veracity.methods.hiss"
# every tag the prompts of a check fence (one data notice for all of them)
TAGS = ("claim", "passage", "subclaim", "qa", "omission", "question", "results")


class Question(BaseModel):
    """One question about a sub-claim and its answer."""

    model_config = ConfigDict(extra="forbid")

    subclaim: int
    question: str
    answer: str
    confident: bool
    searched: bool = False
    documents: list[Document] = Field(default_factory=list)


class HissMethod(BaseMethod):
    """Sub-claims, questioned step by step (searching when unsure), then a verdict."""

    name = "hiss"
    config_class = HissConfig
    default_labels = "true_false"
    description = (
        "HiSS: split into sub-claims, question each step by step, search when unsure (baseline)"
    )
    config: HissConfig

    def setup(self) -> None:
        super().setup()
        self.source: Source | None = None
        if self.config.search:
            try:
                self.source = search_source(self.sources, self.config.source)
            except KeyError:
                self.source = self.pick_source(self.config.source)  # raises, naming the sources
            if self.source is None:
                raise MethodConfigError(
                    "hiss searches when it is unsure and needs a source: give one with "
                    "--source web=duckduckgo or --source web=local:INDEX, or --set search=false"
                )

    @classmethod
    def source_needs(cls, config: Mapping[str, Any]) -> list[SourceNeed]:
        cfg = cls.parse_config(config)
        if not isinstance(cfg, HissConfig) or not cfg.search:
            return []
        return [SourceNeed(cfg.source or "web", purpose="HiSS's searches for unsure answers")]

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        ctx.claim = item.content  # recorded sources replay this claim's searches
        return await self._verify(item, ctx)

    def _messages(
        self, template: str, item: CheckInput, passages: list[dict[str, Any]], **variables: Any
    ) -> list[Any]:
        """A prompt of the check; shared-first (`prompt_layout: shared`): one system note
        for the check, the claim and its passages first, the template's system text last.
        The worked examples (`examples`) are part of that system text: the decomposition,
        questioning and verdict prompts show them, the others ignore them."""
        kind = input_kind_name(item)
        shown = render_input(item, max_chars=self.config.max_input_chars)
        material = render(PROMPTS, "_material.j2", kind=kind, input=shown, passages=passages)
        return make_layout(self.config.prompt_layout, TAGS).messages(
            PROMPTS,
            template,
            material=material,
            kind=kind,
            input=shown,
            passages=passages,
            labels=self.label_space.describe(),
            examples=rendered_examples() if self.config.examples else "",
            **variables,
        )

    async def _ask(self, messages: list[Any], output: type[BaseModel], tag: str) -> Any:
        cfg = self.config
        result = await complete_structured(
            self.llm, messages, output, temperature=cfg.temperature,
            max_tokens=cfg.max_tokens, tag=f"{self.name}:{tag}",
        )  # fmt: skip
        return result.value

    async def _verify(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        found = await gather_passages(item, cfg.evidence, None)
        passages = passage_rows(found.documents, cfg.max_passage_chars)
        reply = await self._ask(
            self._messages("decompose.j2", item, passages, max_subclaims=cfg.max_subclaims),
            replies.subclaims_model(cfg.max_subclaims, cfg.text_chars),
            "decompose",
        )
        subclaims = [" ".join(s.split()) for s in reply.subclaims]
        ctx.emit(Stage(name=self.name, step="decompose", detail={"subclaims": subclaims}))
        tool = None
        if self.source is not None:
            tool = check_tool(self.source, cfg, item)
        questions: list[Question] = []
        for n in range(1, len(subclaims) + 1):
            questions += await self._question(item, passages, subclaims, n, questions, tool)
        omission = None
        if cfg.omission_aware:
            omission = await self._ask(
                self._messages("omission.j2", item, passages, qa=_rows(questions)),
                replies.omission_model(cfg.text_chars * 2),
                "omission",
            )
            ctx.emit(Stage(name=self.name, step="omission", detail=omission.model_dump()))
        answer = await ask_label(
            self.llm,
            self._messages(
                "verdict.j2", item, passages, subclaims=subclaims,
                qa=_rows(questions), omission=omission.model_dump() if omission else None,
            ),
            replies.verdict_model(self.label_space, cfg.max_reasoning_chars),
            self.label_space,
            tag=f"{self.name}:verdict",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )  # fmt: skip
        return self._verdict(answer, found.documents, found.origin, subclaims, questions, omission)

    async def _question(
        self,
        item: CheckInput,
        passages: list[dict[str, Any]],
        subclaims: list[str],
        n: int,
        earlier: list[Question],
        tool: SourceTool | None,
    ) -> list[Question]:
        """Question sub-claim `n` step by step until it is settled or the budget is spent."""
        cfg = self.config
        asked: list[Question] = []
        while len(asked) < cfg.max_questions:
            left = cfg.max_questions - len(asked)
            reply = await self._ask(
                self._messages(
                    "questions.j2", item, passages, subclaims=subclaims, current=n,
                    subclaim=subclaims[n - 1], qa=_rows(earlier + asked), left=left,
                ),
                replies.steps_model(left, cfg.text_chars),
                f"subclaim{n}",
            )  # fmt: skip
            interrupted = False
            for step in reply.steps[:left]:
                q = " ".join(step.question.split())
                if not step.confident and tool is not None:
                    asked.append(await self._searched(item, passages, tool, n, q))
                    interrupted = True  # the questioning goes on from the searched answer
                    break
                asked.append(Question(subclaim=n, question=q, answer=step.answer.strip(),
                                      confident=step.confident))  # fmt: skip
            if not interrupted and reply.done:
                break
        return asked

    async def _searched(
        self,
        item: CheckInput,
        passages: list[dict[str, Any]],
        tool: SourceTool,
        n: int,
        question: str,
    ) -> Question:
        """`question` searched, and answered again from what came back."""
        obs = without_urls(
            await traced_search(tool, question, actor=self.name, subclaim=n),
            self.config.drop_result_urls_with,
            tool.max_chars,
        )
        reply = await self._ask(
            self._messages("answer.j2", item, passages, question=question, results=obs.text),
            replies.answer_model(self.config.text_chars),
            f"answer{n}",
        )
        return Question(
            subclaim=n, question=question, answer=reply.answer.strip(), confident=False,
            searched=True, documents=obs.documents,
        )  # fmt: skip

    def _verdict(
        self,
        answer: Any,
        given: list[Document],
        origin: str,
        subclaims: list[str],
        questions: list[Question],
        omission: BaseModel | None,
    ) -> Verdict:
        evidence = [Evidence(document=d, note=f"{origin}, shown") for d in given]
        evidence += gathered_evidence(
            ((f"searched: {q.question}", q.documents) for q in questions),
            seen=(d.id for d in given),
        )
        metadata: dict[str, Any] = {
            "subclaims": subclaims,
            "questions": [q.model_dump(exclude={"documents"}) for q in questions],
            "searches": sum(q.searched for q in questions),
        }
        if origin != "none":
            metadata["evidence_setting"] = origin
        if omission is not None:
            metadata["omission"] = omission.model_dump()
        return self.verdict(
            **label_fields(answer, self.label_space),
            rationale=whole_sentences(answer.value.reasoning),
            evidence=evidence,
            metadata=metadata,
        )


def without_urls(obs: Observation, words: list[str], max_chars: int) -> Observation:
    """`obs` without the results whose address holds one of `words`: HiSS's release
    (``HiSS.py`` ``get_answer``) skips every search result whose link contains "fact", so
    fact-checking sites cannot hand the model the verdict it is asked for."""
    kept = [d for d in obs.documents if not any(w in (d.url or "") for w in words)]
    if len(kept) == len(obs.documents):
        return obs
    text = render_documents(kept, max_chars) if kept else "(no results left after the filter)"
    return obs.model_copy(update={"documents": kept, "text": text})


def _rows(questions: list[Question]) -> list[dict[str, Any]]:
    """Questions as template rows (their text is model-written: the templates fence it)."""
    return [
        {"n": i, "subclaim": q.subclaim, "question": q.question, "answer": q.answer,
         "how": "searched" if q.searched else ("sure" if q.confident else "unsure")}
        for i, q in enumerate(questions, 1)
    ]  # fmt: skip
