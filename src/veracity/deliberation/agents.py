"""Debating agents: a role (persona) plus how it builds its prompt for each turn.

A `Debater` is LLM-backed: the method supplies a prompt builder that turns the debate
state into chat messages for this role, phase and round (usually by rendering the
method's own `.j2` templates). When the protocol needs a committed position, the
debater answers in JSON with an argument and a stance from a fixed set of options.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core import context
from veracity.core.events import AgentTurn, Fault
from veracity.deliberation.state import DebateState
from veracity.deliberation.transcript import Turn
from veracity.llm.base import LLM, LLMRequest, Message
from veracity.llm.structured import complete_structured


class Role(BaseModel):
    """Who an agent is.

    Attributes:
        name: role key used in transcripts and traces ("politician", "pro", ...).
        title: display name in transcripts shown to other agents.
        persona: the system prompt that anchors the role.
        metadata: method-specific extras (e.g. an inferred expert domain).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str = ""
    persona: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def display(self) -> str:
        return self.title or self.name.replace("_", " ").capitalize()


class Speaker(Protocol):
    """Anything that can take a turn in a debate."""

    role: Role

    async def speak(self, state: DebateState, phase: str, round_no: int) -> Turn: ...


PromptBuilder = Callable[["DebateState", Role, str, int], list[Message]]


def stance_model(
    options: Sequence[str], *, argument_field: str = "argument", max_chars: int = 2000
) -> type[BaseModel]:
    """An output model: a free-text argument (capped, see judges.verdict_model), a stance."""
    from typing import Literal

    return create_model(
        "DebaterReply",
        **{
            argument_field: (
                str,
                Field(max_length=max_chars, description="the argument, citing evidence"),
            ),
            "stance": (Literal[tuple(options)], Field(description="the position taken")),
        },
    )


class Debater:
    """An LLM-backed speaker.

    Args:
        role: the role.
        llm: the model.
        build: prompt builder `(state, role, phase, round) -> messages`.
        stances: when given, the reply must commit to one of these (JSON output).
        temperature: sampling temperature (papers: ZoFia 0, S2MAD 0.2).
        max_tokens: reply length cap.

    The prompt builder makes the whole prompt, the role's persona included (a method's
    `veracity.prompt_layout.Layout` places it).
    """

    def __init__(
        self,
        role: Role,
        llm: LLM,
        build: PromptBuilder,
        *,
        stances: Sequence[str] | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
    ):
        self.role = role
        self.llm = llm
        self.build = build
        self.stances = tuple(stances) if stances else None
        self.temperature = temperature
        self.max_tokens = max_tokens

    async def speak(self, state: DebateState, phase: str, round_no: int) -> Turn:
        messages = self.build(state, self.role, phase, round_no)
        tag = f"{self.role.name}:{phase}:{round_no}"
        if self.stances:
            result = await complete_structured(
                self.llm,
                messages,
                stance_model(self.stances),
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                tag=tag,
            )
            text, stance = result.value.argument, result.value.stance
        else:
            response = await self.llm.complete(
                LLMRequest(
                    messages=messages,
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                    tag=tag,
                )
            )
            text, stance = response.text.strip(), None
        turn = Turn(round=round_no, phase=phase, speaker=self.role.name, text=text, stance=stance)
        if not text.strip():  # kept (the protocol goes on) but flagged for the trace and reports
            turn.data["empty"] = True
            context.current().emit(
                Fault(name=self.role.name, error="empty argument", round=round_no)
            )
        context.current().emit(
            AgentTurn(name=self.role.name, round=round_no, phase=phase, text=text, stance=stance)
        )
        return turn
