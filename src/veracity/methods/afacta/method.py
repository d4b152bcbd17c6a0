"""``afacta``: AFaCTA's three reasoning paths and majority vote (a ToE Table II baseline).

Three independent calls judge the input by different routes (`PATHS`): a direct answer;
the verifiable facts extracted first and then judged; and the best case for and the
best case against argued first and then weighed. Each path gives a label; the verdict is
the majority, the vote shares its probabilities, and a three-way split goes to the
argued path. Whether the paths agree (AFaCTA's consistency) is in the metadata. No
retrieval. See README.md.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core.bounds import PromptChars
from veracity.core.context import CheckContext
from veracity.core.events import Stage
from veracity.core.labels import LabelSpace
from veracity.core.types import CheckInput, Verdict
from veracity.llm.choice import ChoiceResult
from veracity.methods.base import BaseMethod, ChoiceConfig
from veracity.methods.config import GenerationSettings
from veracity.methods.labelling import ask_label, whole_sentences
from veracity.prompt_layout import LayoutSetting, make_layout
from veracity.prompting import input_kind_name, render, render_input

PROMPTS = "veracity.methods.afacta"
PATHS = ("direct", "facts", "debate")  # the last one breaks a three-way split

_MODELS: dict[tuple[Any, ...], type[BaseModel]] = {}


class AfactaConfig(ChoiceConfig, LayoutSetting, GenerationSettings):
    """Settings of the ``afacta`` method."""

    max_reasoning_chars: PromptChars = Field(default=1000, ge=100)
    max_input_chars: PromptChars = 4000


def path_model(path: str, space: LabelSpace, chars: int) -> type[BaseModel]:
    """A path's reply: its own working (none for the direct path), then a label."""
    key = (path, space.name, *space.labels, chars)
    if key not in _MODELS:
        fields: dict[str, Any] = {}
        if path == "facts":
            fields["facts"] = (str, Field(max_length=chars, description="the verifiable facts"))
            fields["reasoning"] = (str, Field(max_length=chars, description="the facts judged"))
        elif path == "debate":
            fields["case_for"] = (str, Field(max_length=chars, description="the case it is true"))
            fields["case_against"] = (
                str,
                Field(max_length=chars, description="the case it is not"),
            )
            fields["reasoning"] = (str, Field(max_length=chars, description="the cases weighed"))
        fields["label"] = (space.literal(), Field(description="the chosen label"))
        _MODELS[key] = create_model(
            f"Afacta{path.capitalize()}", __config__=ConfigDict(extra="forbid"), **fields
        )
    return _MODELS[key]


class AfactaMethod(BaseMethod):
    """Three reasoning paths vote on the label."""

    name = "afacta"
    config_class = AfactaConfig
    default_labels = "true_false"
    description = "AFaCTA: direct, fact-extraction and argued paths vote on the label (baseline)"
    config: AfactaConfig

    async def _path(self, item: CheckInput, path: str) -> ChoiceResult:
        cfg, space = self.config, self.label_space
        variables = {"kind": input_kind_name(item), "labels": space.describe(),
                     "input": render_input(item, max_chars=cfg.max_input_chars)}  # fmt: skip
        material = render(PROMPTS, "_input.j2", **variables)  # what the three paths share
        messages = make_layout(cfg.prompt_layout).messages(
            PROMPTS, f"{path}.j2", material=material, **variables
        )
        return await ask_label(
            self.llm,
            messages,
            path_model(path, space, cfg.max_reasoning_chars),
            space,
            tag=f"{self.name}:{path}",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        space = self.label_space
        answers = await asyncio.gather(*(self._path(item, p) for p in PATHS))
        votes = {p: space.parse(a.label or "") for p, a in zip(PATHS, answers, strict=True)}
        counts = Counter(votes.values())
        top = max(counts.values())
        leaders = [label for label, n in counts.items() if n == top]
        label = leaders[0] if len(leaders) == 1 else votes[PATHS[-1]]
        ctx.emit(Stage(name=self.name, step="vote", label=label, detail={"votes": votes}))
        shares = {lab: counts.get(lab, 0) / len(PATHS) for lab in space.labels}
        argued = answers[PATHS.index("debate")]
        return self.verdict(
            label=label,
            score=space.expected_score(shares),
            probabilities=shares,
            probability_note="the paths' vote shares",
            rationale=whole_sentences(argued.value.reasoning),
            metadata={"votes": votes, "consistent": len(counts) == 1},
        )
