"""``react``: the ReAct baseline — search as needed, then answer.

The model runs a thought → search → observation loop (`deliberation.react`) over the
method's sources, one tool per source, until it chooses to finish or the step budget is
spent; then a final, label-constrained question over the whole trajectory gives the
verdict. With ``prompt_layout: shared`` (the default) that question is one more turn of
the loop's chat, so it repeats the last step's prompt and a server that ran the loop
computes only the question; ``paper`` asks it in a prompt of its own that quotes the
trajectory (cut to `max_trajectory_chars`). Everything the searches returned becomes the
verdict's evidence; the trajectory is in the trace. Usable on any label space.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, create_model

from veracity.core.bounds import PromptChars
from veracity.core.context import CheckContext
from veracity.core.labels import LabelSpace
from veracity.core.types import CheckInput, Evidence, Verdict
from veracity.deliberation.react import conversation, loop_opening, react_loop
from veracity.methods.base import BaseMethod, ChoiceConfig, MethodConfigError
from veracity.methods.config import GenerationSettings, ReplyTokens
from veracity.methods.labelling import ask_label, label_fields
from veracity.prompt_layout import LayoutSetting
from veracity.prompting import (
    input_kind_name,
    render,
    render_input,
    render_messages,
)
from veracity.retrieval.defaults import SourceNeed
from veracity.tools import SOURCE_HINTS, SourceTool


class ReActConfig(ChoiceConfig, LayoutSetting, GenerationSettings):
    request_options = ("max_steps", "top_k", "temperature")

    max_steps: int = Field(default=5, ge=1, le=20)  # thought/action rounds before answering
    top_k: int = Field(default=3, ge=1, le=20)  # results per search
    max_result_chars: PromptChars = 500  # each result's text in an observation
    max_trajectory_chars: PromptChars = 6000  # trajectory quoted to the final answer (paper layout)
    max_input_chars: PromptChars = 4000
    max_tokens: ReplyTokens = 400
    tools: list[str] | None = None  # which sources become tools (None: all)


def answer_model(space: LabelSpace) -> type[BaseModel]:
    """The final answer's reply model: the decisive evidence, then a label of `space`."""
    return create_model(
        "ReActAnswer",
        summary=(str, Field(max_length=1200, description="the decisive evidence")),
        label=(space.literal(), Field(description="the chosen label")),
    )


class ReActMethod(BaseMethod):
    """Reason-and-act over search tools, then a labelled answer."""

    name = "react"
    config_class = ReActConfig
    description = "ReAct: think, search the sources as needed, then answer (baseline)"
    config: ReActConfig

    def setup(self) -> None:
        super().setup()
        chosen = self.config.tools or list(self.sources)
        missing = [n for n in chosen if n not in self.sources]
        if missing or not chosen:
            have = ", ".join(self.sources) or "none"
            raise MethodConfigError(
                f"react needs sources to search (asked for {', '.join(missing) or 'any'}; "
                f"given: {have}): "
                "give them with --source NAME=TYPE[:INDEX], e.g. --source web=duckduckgo or "
                "--source web=local:INDEX (see `veracity sources`)"
            )
        self.tool_sources = {n: self.sources[n] for n in chosen}

    @classmethod
    def source_needs(cls, config: Mapping[str, Any]) -> list[SourceNeed]:
        cfg = cls.parse_config(config)
        if not isinstance(cfg, ReActConfig):
            return []
        if cfg.tools:  # named tools: each must be given (a search source by default)
            return [SourceNeed(name, purpose=f"the {name} tool") for name in cfg.tools]
        return [
            SourceNeed("web", purpose="web search"),
            SourceNeed("wikipedia", "encyclopedia", off={}, purpose="Wikipedia search"),
        ]

    def _tools(self, item: CheckInput) -> list[SourceTool]:
        tools = []
        for name, source in self.tool_sources.items():
            kind = getattr(source, "kind", "")
            hint = SOURCE_HINTS.get(kind, f"{kind or 'a'} source")
            tools.append(
                SourceTool(
                    source,
                    re.sub(r"\W+", "_", f"search_{name}"),
                    hint,
                    top_k=self.config.top_k,
                    max_chars=self.config.max_result_chars,
                    before=item.cutoff,
                )
            )
        return tools

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg, space = self.config, self.label_space
        tools = self._tools(item)
        shown = render_input(item, max_chars=cfg.max_input_chars)
        kind = input_kind_name(item)
        opening = loop_opening(
            "veracity.methods",
            "react.j2",
            tools=[{"name": t.name, "description": t.description} for t in tools],
            max_steps=cfg.max_steps,
            kind=kind,
            input=shown,
        )
        trajectory = await react_loop(
            self.llm,
            opening,
            tools,
            max_steps=cfg.max_steps,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=self.name,
        )
        output = answer_model(space)
        if cfg.prompt_layout == "shared":
            close = render("veracity.methods", "react_close.j2", kind=kind, labels=space.describe())
            messages = conversation(opening, trajectory, closing=str(close))
        else:
            messages = render_messages(
                "veracity.methods",
                "react_answer.j2",
                kind=kind,
                input=shown,
                trajectory=trajectory.render(cfg.max_trajectory_chars),
                labels=space.describe(),
            )
        answer = await ask_label(
            self.llm,
            messages,
            output,
            space,
            tag=f"{self.name}:answer",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )
        return self.verdict(
            **label_fields(answer, space),
            rationale=answer.value.summary,
            evidence=[Evidence(document=d) for d in trajectory.documents],
            metadata={
                "steps": len(trajectory.steps),
                "finished": trajectory.finished,
                "searches": [(s.action, s.input) for s in trajectory.steps if s.observation],
            },
        )
