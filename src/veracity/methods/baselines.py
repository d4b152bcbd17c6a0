"""The baselines every paper compares against, usable on any label space.

- ``direct``: one prompt, the label only.
- ``cot``: the model reasons step by step, then gives the label.

Both ask for JSON with the label constrained to the label space, and read per-label
probabilities from the label token's logprobs when the backend returns them, so the
verdict's veracity score and confidence are measured rather than asserted.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

from veracity.context import CheckContext
from veracity.methods.base import BaseMethod, ChoiceConfig
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.prompting import input_kind_name, render_input, render_messages
from veracity.types import CheckInput, Verdict


class DirectConfig(ChoiceConfig):
    temperature: float = 0.0
    max_tokens: int = 64
    max_input_chars: int = 6000


class CoTConfig(DirectConfig):
    max_tokens: int = 768
    max_reasoning_words: int = 200


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

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        space = self.label_space
        messages = render_messages(
            "veracity.methods",
            self.template,
            kind=input_kind_name(item),
            labels=space.describe(),
            input=render_input(item, max_chars=cfg.max_input_chars),
            max_words=getattr(cfg, "max_reasoning_words", 0),
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
        return self.verdict(**label_fields(answer, space), rationale=reasoning)


class DirectMethod(_PromptedBaseline):
    """One prompt, one label."""

    name = "direct"
    config_class = DirectConfig
    template = "direct.j2"
    description = "single prompt, label only (baseline)"


class CoTMethod(_PromptedBaseline):
    """Step-by-step reasoning, then a label."""

    name = "cot"
    config_class = CoTConfig
    reasoning = True
    template = "cot.j2"
    description = "chain-of-thought reasoning, then a label (baseline)"
