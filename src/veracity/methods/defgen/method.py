"""``defgen``: DefGen, definition-then-deduction prompting (a ToE Table II baseline).

One call: the model first writes what each label means for a statement of this kind (its
own definitions), then applies those definitions to the input step by step, then gives
the label. No retrieval. See README.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.bounds import PromptChars
from veracity.core.context import CheckContext
from veracity.core.labels import LabelSpace
from veracity.core.types import CheckInput, Verdict
from veracity.methods.base import BaseMethod, ChoiceConfig
from veracity.methods.config import GenerationSettings, ReplyTokens
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.prompting import input_kind_name, render_input, render_messages


class DefGenConfig(ChoiceConfig, GenerationSettings):
    """Settings of the ``defgen`` method."""

    max_definition_chars: PromptChars = Field(default=800, ge=100)
    max_reasoning_chars: PromptChars = Field(default=1200, ge=100)
    max_input_chars: PromptChars = 4000
    max_tokens: ReplyTokens = 700


_MODELS: dict[tuple[Any, ...], type[BaseModel]] = {}


def reply_model(space: LabelSpace, definition_chars: int, reasoning_chars: int):
    """Definitions of the labels, the deduction that applies them, then a label."""
    key = (space.name, *space.labels, definition_chars, reasoning_chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "DefGenAnswer",
            __config__=ConfigDict(extra="forbid"),
            definitions=(
                str,
                Field(max_length=definition_chars, description="what each label means"),
            ),
            deduction=(
                str,
                Field(max_length=reasoning_chars, description="the definitions applied"),
            ),
            label=(space.literal(), Field(description="the chosen label")),
        )
    return _MODELS[key]


class DefGenMethod(BaseMethod):
    """Define what each label means, deduce which one the input meets."""

    name = "defgen"
    config_class = DefGenConfig
    default_labels = "true_false"
    description = "DefGen: define each label, then deduce which the input meets (baseline)"
    config: DefGenConfig

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg, space = self.config, self.label_space
        messages = render_messages(
            "veracity.methods.defgen",
            "defgen.j2",
            kind=input_kind_name(item),
            input=render_input(item, max_chars=cfg.max_input_chars),
            labels=space.describe(),
        )
        answer = await ask_label(
            self.llm,
            messages,
            reply_model(space, cfg.max_definition_chars, cfg.max_reasoning_chars),
            space,
            tag=self.name,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )
        return self.verdict(
            **label_fields(answer, space),
            rationale=whole_sentences(answer.value.deduction),
            metadata={"definitions": answer.value.definitions},
        )
