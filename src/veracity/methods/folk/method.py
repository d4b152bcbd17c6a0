"""``folk``: FOLK, first-order-logic-guided verification (a baseline).

Three stages. The model writes the claim as a conjunction of first-order-logic
predicates, each with its sub-claim and a question (`prompts/decompose.j2`). Each
question is searched in the knowledge source and answered from the results
(`prompts/answer.j2`): the knowledge-grounded question-answer pairs. The model then
judges each predicate from its answer, combines them as a conjunction and gives the
label with an explanation (`prompts/predict.j2`, the shared `ask_label`). See README.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.context import CheckContext
from veracity.core.events import Stage
from veracity.core.labels import LabelSpace
from veracity.core.types import CheckInput, Verdict
from veracity.llm.structured import complete_structured
from veracity.methods.base import OneSourceMethod
from veracity.methods.folk.config import FolkConfig
from veracity.methods.folk.examples import decompose_examples, predict_examples
from veracity.methods.kit import check_tool, gathered_evidence
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.prompt_layout import claim_material, make_layout
from veracity.prompting import render_messages, truncate_chars
from veracity.tools.searching import traced_search

PROMPTS = "veracity.methods.folk"
TAGS = ("claim", "predicate")  # what the decomposition and prediction prompts fence


class Predicate(BaseModel):
    """One predicate of the claim's logical form, with the question that grounds it."""

    model_config = ConfigDict(extra="forbid")

    predicate: str = Field(min_length=1, max_length=200, description="Relation(entity, entity)")
    subclaim: str = Field(min_length=1, max_length=300, description="the sub-claim in words")
    question: str = Field(min_length=1, max_length=200, description="the grounding question")


def decomposition_model(max_predicates: int) -> type[BaseModel]:
    """The decomposition reply: 1 to `max_predicates` predicates."""
    return create_model(
        "FolkDecomposition",
        __config__=ConfigDict(extra="forbid"),
        predicates=(list[Predicate], Field(min_length=1, max_length=max_predicates)),
    )


def answer_model(chars: int) -> type[BaseModel]:
    return create_model("FolkAnswer", answer=(str, Field(max_length=chars)))


def prediction_model(space: LabelSpace, chars: int) -> type[BaseModel]:
    return create_model(
        "FolkPrediction",
        explanation=(str, Field(max_length=chars, description="per predicate, then combined")),
        label=(space.literal(), Field(description="the chosen label")),
    )


class FolkMethod(OneSourceMethod):
    """Predicates, grounded question-answer pairs, then a reasoned verdict (FOLK)."""

    name = "folk"
    config_class = FolkConfig
    search_purpose = "FOLK's grounding questions"
    default_labels = "supported_refuted"
    input_kinds = ("claim",)
    description = "FOLK: FOL predicates, knowledge-grounded QA pairs, explained verdict (baseline)"
    config: FolkConfig

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        claim = truncate_chars(item.content, cfg.max_input_chars)
        ctx.claim = item.content  # recorded sources replay this claim's searches
        reply = await complete_structured(
            self.llm,
            self._messages(
                "decompose.j2",
                claim,
                examples=decompose_examples() if self.config.examples else "",
            ),
            decomposition_model(cfg.max_predicates),
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=f"{self.name}:decompose",
        )
        predicates: list[Predicate] = list(reply.value.predicates)  # type: ignore[attr-defined]
        ctx.emit(
            Stage(
                name=self.name,
                step="predicates",
                detail={"predicates": [p.predicate for p in predicates]},
            )
        )
        pairs = [await self._ground(item, p, n) for n, p in enumerate(predicates, 1)]
        return await self._predict(claim, pairs)

    def _messages(self, template: str, claim: str, **variables: Any) -> list[Any]:
        """A decomposition or prediction prompt; its material is the claim."""
        layout = make_layout(self.config.prompt_layout, TAGS)
        return layout.messages(PROMPTS, template, material=claim_material(claim), **variables)

    async def _ground(self, item: CheckInput, p: Predicate, n: int) -> dict[str, Any]:
        """The question of predicate `n`, searched and answered from the results."""
        cfg = self.config
        tool = check_tool(self.source, cfg, item)
        obs = await traced_search(tool, p.question, actor=self.name, predicate=n)
        reply = await complete_structured(
            self.llm,
            render_messages(PROMPTS, "answer.j2", question=p.question, results=obs.text),
            answer_model(cfg.max_answer_chars),
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=f"{self.name}:answer{n}",
        )
        answer = " ".join(reply.value.answer.split())  # type: ignore[attr-defined]
        return {**p.model_dump(), "answer": answer, "documents": obs.documents}

    async def _predict(self, claim: str, pairs: list[dict[str, Any]]) -> Verdict:
        cfg, space = self.config, self.label_space
        shown = [
            {"text": f"{p['predicate']} :: {p['subclaim']}\nQ: {p['question']}\nA: {p['answer']}"}
            for p in pairs
        ]
        answer = await ask_label(
            self.llm,
            self._messages(
                "predict.j2",
                claim,
                predicates=shown,
                labels=space.describe(),
                examples=predict_examples() if cfg.examples else "",
            ),
            prediction_model(space, cfg.max_explanation_chars),
            space,
            tag=f"{self.name}:predict",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )
        evidence = gathered_evidence(
            (f"predicate {n}: {p['question']}", p["documents"]) for n, p in enumerate(pairs, 1)
        )
        return self.verdict(
            **label_fields(answer, space),
            rationale=whole_sentences(answer.value.explanation),
            evidence=evidence,
            metadata={"predicates": [_without_documents(p) for p in pairs]},
        )


def _without_documents(pair: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in pair.items() if k != "documents"}
