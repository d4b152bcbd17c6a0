"""``fire``: FIRE, fact-checking with iterative retrieval and verification (a baseline).

One agent alternates verifying and searching. Each step it reads the input and the
knowledge gathered so far (every earlier search's results) and either decides — a label,
when it is confident — or writes the next search query (`steps.step_model`). Searching
stops when the model decides, when the step budget is spent, or when it repeats itself
(`steps.repeats`); without a decision by then, a last call must give a label from the
knowledge as it stands. See README.md for the map from FIRE's description to this code.
"""

from __future__ import annotations

import asyncio
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core import context
from veracity.core.context import CheckContext
from veracity.core.errors import ModelNotAvailable
from veracity.core.events import AgentStep, Note, ToolCall
from veracity.core.labels import LabelSpace
from veracity.core.types import CheckInput, Document, Verdict
from veracity.llm.choice import ChoiceResult, ask_choice
from veracity.llm.probs import normalised
from veracity.methods.base import OneSourceMethod
from veracity.methods.fire.config import FireConfig
from veracity.methods.fire.steps import (
    SEARCH,
    SameAs,
    embedding_cosine,
    final_model,
    repeats,
    step_model,
    word_overlap,
)
from veracity.methods.kit import gathered_evidence
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.prompt_layout import make_layout
from veracity.prompting import input_kind_name, render, render_input, truncate_chars
from veracity.tools import SOURCE_HINTS, SourceTool

if TYPE_CHECKING:
    from veracity.nlp.embeddings import Embedder

PROMPTS = "veracity.methods.fire"
TAGS = ("statement", "knowledge")  # every tag the prompts of a check fence


class Search(BaseModel):
    """One search FIRE made: its query and what came back."""

    model_config = ConfigDict(extra="forbid")

    step: int
    query: str
    text: str
    documents: list[Document] = Field(default_factory=list)
    error: str | None = None


class FireMethod(OneSourceMethod):
    """Verify or search once more, until confident or out of steps (FIRE)."""

    name = "fire"
    config_class = FireConfig
    default_labels = "true_false"
    description = "FIRE: decide when confident, else search again, up to a step budget (baseline)"
    config: FireConfig

    search_purpose = "FIRE's searches"
    _embedder: Embedder | None = None

    @property
    def repeat_embedder(self) -> Embedder:
        """The sentence embedder of the repeat test: the shared all-MiniLM-L6-v2 (FIRE's
        encoder, run in NumPy), loaded on first use; tests put a small one in its place."""
        if self._embedder is None:
            from veracity.nlp.embeddings import DEFAULT_MODEL, get_embedder

            self._embedder = get_embedder(DEFAULT_MODEL)
        return self._embedder

    @repeat_embedder.setter
    def repeat_embedder(self, embedder: Embedder) -> None:
        self._embedder = embedder

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        ctx.claim = item.content  # recorded sources replay this claim's searches
        return await self._verify(item, ctx)

    async def _verify(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        shown = render_input(item, max_chars=cfg.max_input_chars)
        tool = self._tool(item)
        searches: list[Search] = []
        ended = f"step budget spent ({cfg.max_steps} steps)"
        for step in range(1, cfg.max_steps + 1):
            answer = await self._step(item, shown, searches, step)
            if answer.label != SEARCH:
                return self._verdict(answer, searches, f"decided at step {step}", final=False)
            query = self._query(answer, item, ctx, step)
            why = await self._repeats(query, searches)
            if why is not None:
                ended = f"searching stopped at step {step}: the {why} repeated"
                ctx.emit(Note(name=self.name, text=ended, detail={"query": query}))
                break
            searches.append(await self._search(tool, query, step))
        answer = await ask_label(
            self.llm,
            self._messages("final.j2", item, shown, searches),
            final_model(self.label_space, cfg.max_reasoning_chars),
            self.label_space,
            tag=f"{self.name}:final",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )
        return self._verdict(answer, searches, f"{ended}; a last answer was asked", final=True)

    async def _repeats(self, query: str, searches: list[Search]) -> str | None:
        """`steps.repeats` under the configured test; embeddings run in a worker thread.

        Raises:
            ModelNotAvailable: the embedding model cannot be loaded (the message says how
                to get it, or to choose ``repeat_test: words``).
        """
        cfg = self.config
        queries, results = [s.query for s in searches], [s.text for s in searches]
        if cfg.repeat_test == "words":
            same: SameAs = word_overlap(cfg.repeat_similarity)
            return repeats(query, queries, results, cfg.tolerance, same)
        try:
            same = embedding_cosine(self.repeat_embedder, cfg.repeat_similarity)
            return await asyncio.to_thread(repeats, query, queries, results, cfg.tolerance, same)
        except ModelNotAvailable as exc:
            raise ModelNotAvailable(
                f"FIRE's repeat test (repeat_test: embedding) needs its sentence embedder: "
                f"{exc} (or set repeat_test: words)"
            ) from exc

    def _tool(self, item: CheckInput) -> SourceTool:
        kind = getattr(self.source, "kind", "")
        return SourceTool(
            self.source,
            re.sub(r"\W+", "_", f"search_{getattr(self.source, 'name', 'source')}"),
            SOURCE_HINTS.get(kind, f"{kind or 'a'} source"),
            top_k=self.config.top_k,
            max_chars=self.config.max_result_chars,
            before=item.cutoff,
        )

    def _messages(
        self, template: str, item: CheckInput, shown: str, searches: list[Search]
    ) -> list[Any]:
        kind = input_kind_name(item)
        material = render(PROMPTS, "_statement.j2", kind=kind, input=shown)
        return make_layout(self.config.prompt_layout, TAGS).messages(
            PROMPTS,
            template,
            material=material,
            kind=kind,
            input=shown,
            knowledge=[{"n": i, "text": s.text} for i, s in enumerate(searches, 1)],
            labels=self.label_space.describe(),
            search=SEARCH,
        )

    async def _step(
        self, item: CheckInput, shown: str, searches: list[Search], step: int
    ) -> ChoiceResult:
        """One verify-or-search decision, with the probabilities read at the decision."""
        cfg, space = self.config, self.label_space
        answer = await ask_choice(
            self.llm,
            self._messages("step.j2", item, shown, searches),
            step_model(space, cfg.max_reasoning_chars, cfg.query_chars),
            "decision",
            (SEARCH, *space.labels),
            tag=f"{self.name}:step{step}",
            policy=cfg.choice,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )
        probs = answer.probabilities or {}
        searching = answer.label == SEARCH
        context.current().emit(
            AgentStep(
                name=self.name,
                step=step,
                steps=cfg.max_steps,
                thought=answer.value.reasoning,
                action="search" if searching else "answer",
                input=answer.value.search_query if searching else "",
                answer=None if searching else answer.label,
                detail={"p_search": probs.get(SEARCH), "estimator": answer.estimator},
            )
        )
        return answer

    def _query(self, answer: ChoiceResult, item: CheckInput, ctx: CheckContext, step: int) -> str:
        """The step's search query; the input's own text when the reply left it empty
        (its probabilities chose SEARCH over the label it wrote)."""
        query = " ".join(str(answer.value.search_query).split())
        if query:
            return query
        query = truncate_chars(" ".join(item.content.split()), self.config.query_chars)
        ctx.emit(
            Note(
                name=self.name,
                text="no search query written: searching the input",
                detail={"step": step},
            )
        )
        return query

    async def _search(self, tool: SourceTool, query: str, step: int) -> Search:
        obs = await tool.run(query)
        context.current().emit(
            ToolCall(
                name=self.name,
                tool=tool.name,
                arguments={"query": query},
                error=obs.error,
                step=step,
                documents=[d.id for d in obs.documents],
            )
        )
        return Search(
            step=step, query=query, text=obs.text, documents=obs.documents, error=obs.error
        )

    def _verdict(
        self, answer: ChoiceResult, searches: list[Search], ended: str, *, final: bool
    ) -> Verdict:
        space = self.label_space
        fields = label_fields(answer, space) if final else _decided_fields(answer, space)
        evidence = gathered_evidence((f"search {s.step}: {s.query}", s.documents) for s in searches)
        return self.verdict(
            **fields,
            rationale=whole_sentences(answer.value.reasoning),
            evidence=evidence,
            metadata={
                "ended": ended,
                "searches": [{"step": s.step, "query": s.query, "results": len(s.documents),
                              "error": s.error} for s in searches],
            },
        )  # fmt: skip


def _decided_fields(answer: ChoiceResult, space: LabelSpace) -> dict[str, Any]:
    """Verdict fields of a step's decision: its probabilities include SEARCH, which
    `BaseMethod.verdict` drops (and says so) when it scales them to the labels."""
    probs = answer.probabilities
    label = space.parse(answer.label or "")
    labels_only = normalised(probs, space.labels) if probs else None
    return {
        "label": label,
        "score": space.expected_score(labels_only) if labels_only else space.score(label),
        "confidence": answer.confidence,
        "probabilities": probs,
        "probability_note": answer.note,
    }
