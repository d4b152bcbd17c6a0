"""The baselines every paper compares against, usable on any label space.

- ``direct``: one prompt, the label only.
- ``cot``: the model reasons step by step, then gives the label. Given evidence, it
  reasons over it (`veracity.evidence.passages`): the passages handed over with a claim
  (RADAR's full-evidence CoT), else one search of the sources it was given (ZoFia's CoT
  over retrieved material); with neither it reasons from what the model knows
  (zero-shot), as ``evidence: none`` always does.

Both ask for JSON with the label constrained to the label space, and read per-label
probabilities from the label token's logprobs when the backend returns them, so the
verdict's veracity score and confidence are measured rather than asserted.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

from veracity.core.bounds import PromptChars, Words
from veracity.core.context import CheckContext
from veracity.core.types import CheckInput, Evidence, Verdict
from veracity.evidence.passages import (
    EvidenceMode,
    Passages,
    passage_rows,
)
from veracity.methods.base import BaseMethod, ChoiceConfig
from veracity.methods.config import GenerationSettings, ReplyTokens
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.methods.passages import PassageReading
from veracity.prompting import input_kind_name, render_input, render_messages


class DirectConfig(ChoiceConfig, GenerationSettings):
    request_options = ("temperature",)

    max_tokens: ReplyTokens = 64
    max_input_chars: PromptChars = 6000


class CoTConfig(DirectConfig):
    max_tokens: ReplyTokens = 768
    max_reasoning_words: Words = 200
    # auto: the claim's own evidence, else a search of the given sources, else none
    # (zero-shot); given / retrieved insist on one; none: always zero-shot
    evidence: EvidenceMode = "auto"
    source: str | None = None  # which source to search (None: every source given)
    top_k: int = Field(default=5, ge=1, le=50)  # retrieved passages shown
    query_chars: PromptChars = Field(default=500, ge=20)  # the query is the input text, cut here
    max_passage_chars: PromptChars = Field(default=1000, ge=100)  # each passage is cut here


_ANSWER_MODELS: dict[tuple[str, tuple[str, ...], bool], type[BaseModel]] = {}


def _answer_model(space: Any, reasoning: bool) -> type[BaseModel]:
    """The reply schema for `space`, built once per label space (not once per check)."""
    key = (space.name, tuple(space.labels), reasoning)
    if key in _ANSWER_MODELS:
        return _ANSWER_MODELS[key]
    fields: dict[str, Any] = {}
    if reasoning:
        # capped so constrained decoding cannot loop inside the string (see structured.py)
        fields["reasoning"] = (str, Field(max_length=2000, description="step-by-step reasoning"))
    fields["label"] = (space.literal(), Field(description="the chosen label"))
    model = _ANSWER_MODELS[key] = create_model("Answer", **fields)
    return model


class _PromptedBaseline(BaseMethod):
    reasoning: bool = False
    template: str = ""
    config: DirectConfig

    async def passages(self, item: CheckInput, ctx: CheckContext) -> Passages:
        """The evidence the prompt shows (none for the zero-shot baselines)."""
        return Passages()

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        space = self.label_space
        found = await self.passages(item, ctx)
        messages = render_messages(
            "veracity.methods",
            self.template,
            kind=input_kind_name(item),
            labels=space.describe(),
            input=render_input(item, max_chars=cfg.max_input_chars),
            max_words=getattr(cfg, "max_reasoning_words", 0),
            passages=passage_rows(found.documents, getattr(cfg, "max_passage_chars", 1000)),
        )
        answer = await ask_label(
            self.llm,
            messages,
            _answer_model(space, self.reasoning),
            space,
            tag=self.name,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )
        reasoning = whole_sentences(getattr(answer.value, "reasoning", ""))
        evidence = [Evidence(document=d, note=f"{found.origin}, shown") for d in found.documents]
        metadata = {"evidence_setting": found.origin} if found.origin != "none" else {}
        return self.verdict(
            **label_fields(answer, space), rationale=reasoning, evidence=evidence, metadata=metadata
        )


class DirectMethod(_PromptedBaseline):
    """One prompt, one label."""

    name = "direct"
    config_class = DirectConfig
    template = "direct.j2"
    description = "single prompt, label only (baseline)"


class CoTMethod(PassageReading, _PromptedBaseline):
    """Step-by-step reasoning (over the evidence, when given it), then a label."""

    name = "cot"
    config_class = CoTConfig
    reasoning = True
    template = "cot.j2"
    description = "chain-of-thought reasoning, over evidence when given it, then a label (baseline)"
    config: CoTConfig
    passage_purpose = "passages to reason over"
