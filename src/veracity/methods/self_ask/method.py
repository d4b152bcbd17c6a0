"""``self_ask``: Self-Ask with a search engine (a baseline).

The model asks itself whether follow-up questions are needed; each follow-up it writes
goes to the search engine and comes back as an intermediate answer; when it has enough
it stops, and a last, label-constrained question gives the final answer over the chain
of follow-ups. The chain runs on the shared ReAct loop (`deliberation.react`) with one
tool, ``follow_up``, whose observation is the intermediate answer (search, then a short
answer read from the results). See README.md for the map from Self-Ask to this code.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, create_model

from veracity.core.context import CheckContext
from veracity.core.types import CheckInput, Evidence, Verdict
from veracity.deliberation.react import loop_opening, react_loop
from veracity.llm.base import LLM
from veracity.llm.structured import complete_structured
from veracity.methods.base import OneSourceMethod
from veracity.methods.kit import check_tool
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.methods.self_ask.config import SelfAskConfig
from veracity.methods.self_ask.examples import rendered_examples
from veracity.prompting import render_messages, truncate_chars
from veracity.tools.base import Observation, SearchInput, SourceTool

PROMPTS = "veracity.methods.self_ask"
TOOL = "follow_up"


def intermediate_model(chars: int) -> type[BaseModel]:
    return create_model("SelfAskAnswer", answer=(str, Field(max_length=chars)))


def final_model(space: Any) -> type[BaseModel]:
    return create_model(
        "SelfAskFinal",
        reasoning=(str, Field(max_length=1000, description="why, from the answers")),
        label=(space.literal(), Field(description="the chosen label")),
    )


class FollowUp:
    """The ``follow_up`` tool: search a follow-up question, answer it from the results."""

    name = TOOL
    description = "ask one follow-up question; a search engine answers it"
    input_model = SearchInput

    def __init__(self, llm: LLM, search: SourceTool, config: SelfAskConfig):
        self.llm, self.search, self.config = llm, search, config
        self.asked = 0

    async def call(self, arguments: BaseModel) -> Observation:
        question = " ".join(str(getattr(arguments, "query", "")).split())
        self.asked += 1
        found = await self.search.run(question)
        if found.error:
            return Observation(text=f"Intermediate answer: (search failed: {found.error})",
                               error=found.error)  # fmt: skip
        reply = await complete_structured(
            self.llm,
            render_messages(PROMPTS, "intermediate.j2", question=question, results=found.text),
            intermediate_model(self.config.max_answer_chars),
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
            tag=f"self_ask:intermediate{self.asked}",
        )
        answer = " ".join(reply.value.answer.split())  # type: ignore[attr-defined]
        return Observation(text=f"Intermediate answer: {answer}", documents=found.documents)


class SelfAskMethod(OneSourceMethod):
    """Follow-up questions answered by search, then the final answer (Self-Ask)."""

    name = "self_ask"
    config_class = SelfAskConfig
    default_labels = "supported_refuted"
    input_kinds = ("claim",)
    description = "Self-Ask: follow-up questions answered by search, then the answer (baseline)"
    config: SelfAskConfig

    search_purpose = "Self-Ask's follow-up questions"

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg, space = self.config, self.label_space
        claim = truncate_chars(item.content, cfg.max_input_chars)
        search = check_tool(self.source, cfg, item)
        tool = FollowUp(self.llm, search, cfg)
        ctx.claim = item.content  # recorded sources replay this claim's searches
        opening = loop_opening(
            PROMPTS, "ask.j2", claim=claim, max_follow_ups=cfg.max_follow_ups, tool=TOOL,
            examples=rendered_examples() if cfg.examples else "",
        )  # fmt: skip
        trajectory = await react_loop(
            self.llm, opening, [tool], max_steps=cfg.max_follow_ups,
            temperature=cfg.temperature, max_tokens=cfg.max_tokens, tag=self.name,
        )  # fmt: skip
        answer = await ask_label(
            self.llm,
            render_messages(
                PROMPTS, "final.j2", claim=claim, labels=space.describe(),
                trajectory=trajectory.render(cfg.max_trajectory_chars),
            ),
            final_model(space),
            space,
            tag=f"{self.name}:final",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )  # fmt: skip
        follow_ups = [
            {"question": s.input, "answer": s.observation.text if s.observation else None}
            for s in trajectory.steps
            if s.action == TOOL
        ]
        return self.verdict(
            **label_fields(answer, space),
            rationale=whole_sentences(answer.value.reasoning),
            evidence=[Evidence(document=d, note="follow-up") for d in trajectory.documents],
            metadata={"follow_ups": follow_ups, "finished": trajectory.finished},
        )
