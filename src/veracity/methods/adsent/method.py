"""``adsent``: AdSent, judge a sentiment-neutral rewrite of the input (a ToE Table II baseline).

Two calls: the model rewrites the input without its sentiment — loaded words, emotional
framing and emphasis removed, every factual detail kept — and then judges the neutral
version step by step. The original wording never reaches the judgment. No retrieval.
See README.md.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.bounds import PromptChars
from veracity.core.context import CheckContext
from veracity.core.events import Stage
from veracity.core.labels import LabelSpace
from veracity.core.types import CheckInput, Verdict
from veracity.llm.structured import complete_structured
from veracity.methods.base import BaseMethod, ChoiceConfig
from veracity.methods.config import GenerationSettings, ReplyTokens
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.prompting import input_kind_name, render_input, render_messages

PROMPTS = "veracity.methods.adsent"


class AdSentConfig(ChoiceConfig, GenerationSettings):
    """Settings of the ``adsent`` method."""

    max_neutral_chars: PromptChars = Field(default=1500, ge=50)  # the rewrite's cap
    max_reasoning_chars: PromptChars = Field(default=1200, ge=100)
    max_input_chars: PromptChars = 4000
    max_tokens: ReplyTokens = 700


_MODELS: dict[tuple[Any, ...], type[BaseModel]] = {}


def neutral_model(chars: int) -> type[BaseModel]:
    """The input rewritten without sentiment, every fact kept."""
    if chars not in _MODELS:
        _MODELS[chars] = create_model(
            "AdSentNeutral",
            __config__=ConfigDict(extra="forbid"),
            neutral=(str, Field(min_length=1, max_length=chars, description="same facts, neutral")),
        )
    return _MODELS[chars]


def answer_model(space: LabelSpace, chars: int) -> type[BaseModel]:
    """Step-by-step reasoning over the neutral text, then a label."""
    key = (space.name, *space.labels, chars)
    if key not in _MODELS:
        _MODELS[key] = create_model(
            "AdSentAnswer",
            __config__=ConfigDict(extra="forbid"),
            reasoning=(str, Field(max_length=chars, description="step-by-step reasoning")),
            label=(space.literal(), Field(description="the chosen label")),
        )
    return _MODELS[key]


class AdSentMethod(BaseMethod):
    """Neutralise the input's sentiment, then judge the neutral version."""

    name = "adsent"
    config_class = AdSentConfig
    default_labels = "true_false"
    description = "AdSent: rewrite the input in neutral tone, then judge the rewrite (baseline)"
    config: AdSentConfig

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg, space = self.config, self.label_space
        kind = input_kind_name(item)
        rewrite = await complete_structured(
            self.llm,
            render_messages(PROMPTS, "neutralise.j2", kind=kind,
                            input=render_input(item, max_chars=cfg.max_input_chars)),
            neutral_model(cfg.max_neutral_chars),
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=f"{self.name}:neutralise",
        )  # fmt: skip
        neutral = rewrite.value.neutral.strip()
        ctx.emit(Stage(name=self.name, step="neutralised", detail={"text": neutral}))
        answer = await ask_label(
            self.llm,
            render_messages(PROMPTS, "judge.j2", kind=kind, neutral=neutral,
                            labels=space.describe()),
            answer_model(space, cfg.max_reasoning_chars),
            space,
            tag=f"{self.name}:judge",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )  # fmt: skip
        return self.verdict(
            **label_fields(answer, space),
            rationale=whole_sentences(answer.value.reasoning),
            metadata={"neutral": neutral},
        )
