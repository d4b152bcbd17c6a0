"""``rag``: the single-agent retrieval-augmented baseline.

One search of the configured source for the input's text, then one prompt that shows
the top-k passages and asks for the label and the numbers of the passages it relied on.
The cited passages become the verdict's evidence; the label's token probabilities give
the veracity score and confidence, as in the ``direct`` baseline.

Every query goes through `veracity.retrieval.guards.guard_query`, so during an
evaluation the example's date cutoff and the dataset's excluded domains apply.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, Field, create_model

from veracity.core.bounds import PromptChars, Words
from veracity.core.context import CheckContext
from veracity.core.events import Stage
from veracity.core.labels import LabelSpace
from veracity.core.types import CheckInput, Document, Evidence, Verdict
from veracity.methods.base import ChoiceConfig, OneSourceMethod
from veracity.methods.config import GenerationSettings, ReplyTokens
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.prompting import input_kind_name, render_input, render_messages, truncate_chars
from veracity.retrieval.base import Query
from veracity.retrieval.guards import guard_query


class RagConfig(ChoiceConfig, GenerationSettings):
    request_options = ("top_k", "reasoning", "temperature")

    source: str | None = None  # which of the method's sources to search (None: the only one)
    top_k: int = Field(default=5, ge=1, le=50)  # passages shown to the model
    query_chars: PromptChars = Field(default=500, ge=20)  # the query is the input text, cut here
    max_passage_chars: PromptChars = Field(default=1000, ge=100)  # each passage is cut here
    max_input_chars: PromptChars = 4000
    reasoning: bool = False  # ask for a short justification before the label
    max_reasoning_words: Words = 80
    max_tokens: ReplyTokens = 256


def _answer_model(space: LabelSpace, n_passages: int, reasoning: bool) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    if reasoning:
        fields["reasoning"] = (str, Field(max_length=1000, description="a short justification"))
    number = Annotated[int, Field(ge=1, le=max(n_passages, 1))]
    fields["cited"] = (
        list[number],  # type: ignore[valid-type]
        Field(max_length=n_passages, description="numbers of the passages relied on"),
    )
    fields["label"] = (space.literal(), Field(description="the chosen label"))
    return create_model("RagAnswer", **fields)


class RagMethod(OneSourceMethod):
    """Retrieve top-k passages, then one labelled answer citing them."""

    name = "rag"
    config_class = RagConfig
    description = "single-agent RAG: top-k passages from a source, label with citations"
    config: RagConfig

    search_purpose = "passages to cite"

    async def retrieve(self, item: CheckInput) -> list[Document]:
        text = truncate_chars(item.content, self.config.query_chars)
        query = guard_query(Query(text=text, top_k=self.config.top_k))
        return await self.source.search(query)

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg, space = self.config, self.label_space
        docs = await self.retrieve(item)
        ctx.emit(Stage(name=self.name, step="retrieved", documents=[d.id for d in docs]))
        messages = render_messages(
            "veracity.methods",
            "rag.j2",
            kind=input_kind_name(item),
            labels=space.describe(),
            input=render_input(item, max_chars=cfg.max_input_chars),
            passages=[
                {"n": i, "title": d.title, "text": truncate_chars(d.text, cfg.max_passage_chars)}
                for i, d in enumerate(docs, 1)
            ],
            reasoning=cfg.reasoning,
            max_words=cfg.max_reasoning_words,
        )
        answer = await ask_label(
            self.llm,
            messages,
            _answer_model(space, len(docs), cfg.reasoning),
            space,
            tag=self.name,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )
        cited = list(dict.fromkeys(answer.value.cited))  # in order, without repeats
        evidence = [Evidence(document=docs[i - 1], note="cited") for i in cited]
        if not cited:  # still show what the answer was given
            evidence = [Evidence(document=d, note="retrieved, not cited") for d in docs]
        return self.verdict(
            **label_fields(answer, space),
            rationale=whole_sentences(getattr(answer.value, "reasoning", "")),
            evidence=evidence,
            metadata={"retrieved": [d.id for d in docs], "cited": cited},
        )
