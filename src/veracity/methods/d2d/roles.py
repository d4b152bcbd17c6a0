"""D2D's debaters: two teams with fixed stances, one speaker per team for each stage.

The affirmative team holds that the input is true, the negative team that it is false;
neither may change sides. Each team has an opening, a rebuttal, a free-debate and a
closing speaker (eight agents). Before the debate an LLM names the input's field
(domain detection) and writes a one-sentence professional profile for each speaker in
that field (the profiles are model-written text, so prompts show them fenced, never in a
system prompt).

Stages (`schedule`): round 1 opening, round 2 rebuttal, then one round per free-debate
exchange, then closing; in every round the affirmative speaker goes first and the
negative speaker answers it. Every speaker sees the whole debate so far.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.untrusted import Safe
from veracity.deliberation import Debater, DebateState, Role, Schedule
from veracity.llm.base import LLM, LLMRequest, Message
from veracity.llm.reply_schema import short_name
from veracity.llm.structured import complete_structured
from veracity.methods.d2d.config import D2DConfig
from veracity.prompt_layout import Layout
from veracity.prompting import render, render_messages, truncate_chars

PROMPTS = "veracity.methods.d2d"
TAGS = ("news", "passage", "profile", "debate", "opponent")  # every tag a check's prompts fence
SIDES = ("affirmative", "negative")
DUTIES = ("opening", "rebuttal", "free", "closing")
STANCE = {"affirmative": "true", "negative": "false"}


def speaker(side: str, duty: str) -> str:
    """The role name of `side`'s speaker for `duty` (``affirmative_opening``, ...)."""
    return f"{side}_{duty}"


def display_names() -> dict[str, str]:
    """How transcripts name each speaker ("Affirmative (opening)")."""
    return {speaker(s, d): f"{s.capitalize()} ({d})" for s in SIDES for d in DUTIES}


def schedule(free_rounds: int) -> Schedule:
    """Opening, rebuttal, `free_rounds` free-debate exchanges, closing."""
    phases = ["opening", "rebuttal", *(["free"] * free_rounds), "closing"]

    def plan(round_no: int, last: int) -> tuple[str, list[list[str]]]:
        phase = phases[round_no - 1]
        return phase, [[speaker("affirmative", phase)], [speaker("negative", phase)]]

    return Schedule(plan, max_rounds=len(phases))


class DomainReply(BaseModel):
    """The field the input belongs to."""

    model_config = ConfigDict(extra="forbid")

    domain: short_name(3, 40) = Field(  # type: ignore[valid-type]
        description="the field, in one to three words"
    )


def material(kind: str, shown: str, passages: list[dict[str, Any]]) -> Safe:
    """The input and the evidence as every speaker and judge reads them."""
    return render(PROMPTS, "_material.j2", kind=kind, input=shown, passages=passages)


async def detect_domain(llm: LLM, kind: str, shown: str, material: Safe, layout: Layout) -> str:
    """The input's field (e.g. "politics"), as the model names it (shared layout: after
    the input and the evidence, which then open the check's first prompt; paper: from
    the input alone)."""
    messages = layout.messages(PROMPTS, "domain.j2", material=material, kind=kind, input=shown)
    result = await complete_structured(
        llm, messages, DomainReply, temperature=0.0, max_tokens=32, tag="d2d:domain"
    )
    return result.value.domain


def duties(config: D2DConfig) -> list[str]:
    """The stages that have speakers (no free-debate speakers without free rounds)."""
    return [d for d in DUTIES if d != "free" or config.free_rounds > 0]


async def write_profiles(llm: LLM, config: D2DConfig, kind: str, domain: str) -> dict[str, str]:
    """A one-sentence profile for every speaker, written at once."""

    async def one(side: str, duty: str) -> str:
        messages = render_messages(
            PROMPTS, "profile.j2", kind=kind, domain=domain, side=side, duty=duty
        )
        response = await llm.complete(
            LLMRequest(
                messages=messages,
                temperature=config.profile_temperature,
                max_tokens=config.max_tokens_profile,
                tag=f"d2d:profile:{speaker(side, duty)}",
            )
        )
        return truncate_chars(" ".join(response.text.split()), 400)

    pairs = [(s, d) for s in SIDES for d in duties(config)]
    texts = await asyncio.gather(*(one(s, d) for s, d in pairs))
    return {speaker(s, d): text for (s, d), text in zip(pairs, texts, strict=True)}


def make_role(side: str, duty: str, kind: str, domain: str) -> Role:
    """A speaker's role: its persona names its side, stage, fixed stance and field."""
    persona = render(
        PROMPTS, "persona.j2", side=side, duty=duty, kind=kind, domain=domain, stance=STANCE[side]
    )
    return Role(
        name=speaker(side, duty),
        title=display_names()[speaker(side, duty)],
        persona=persona,
        metadata={"side": side, "duty": duty},
    )


class TurnPrompts:
    """Builds every debater's messages for one check.

    Args:
        kind: the input's kind as prompts name it.
        shown: the input as prompts show it.
        passages: the evidence rows (`passage_rows`), possibly empty.
        profiles: speaker -> profile ({} without profiles).
        turn_chars: each earlier turn is cut to this many characters.
        material: the input and the evidence (`material`), which every prompt shows.
        layout: the method's prompt layout (paper: input and evidence first, then the
            profile, then the debate so far).
    """

    def __init__(
        self,
        kind: str,
        shown: str,
        passages: list[dict[str, Any]],
        profiles: dict[str, str],
        turn_chars: int,
        material: Safe,
        layout: Layout,
    ):
        self.kind, self.shown, self.passages = kind, shown, passages
        self.profiles, self.turn_chars = profiles, turn_chars
        self.material, self.layout = material, layout

    def transcript(self, state: DebateState) -> str:
        turns = state.transcript.model_copy(deep=True)
        for turn in turns.turns:
            turn.text = truncate_chars(turn.text.strip(), self.turn_chars)
        return turns.render(names=display_names())

    def __call__(self, state: DebateState, role: Role, phase: str, round_no: int) -> list[Message]:
        side = role.metadata["side"]
        other = SIDES[1] if side == SIDES[0] else SIDES[0]
        turns = reversed(state.transcript.turns) if phase == "free" else iter(())
        last = next((t for t in turns if t.speaker.startswith(f"{other}_")), None)
        return self.layout.messages(
            PROMPTS,
            "turn.j2",
            material=self.material,
            persona_text=role.persona,
            kind=self.kind,
            input=self.shown,
            passages=self.passages,
            profile=self.profiles.get(role.name, ""),
            transcript=self.transcript(state),
            side=side,
            stance=STANCE[side],
            phase=phase,
            exchange=round_no - 2,
            opponent=truncate_chars(last.text.strip(), self.turn_chars) if last else "",
        )


def debaters(llm: LLM, config: D2DConfig, prompts: TurnPrompts, kind: str, domain: str):
    """The eight speakers (free text turns; their stance is fixed by their team)."""
    return [
        Debater(
            make_role(side, duty, kind, domain),
            llm,
            prompts,
            temperature=config.temperature,
            max_tokens=config.max_tokens_turn,
        )
        for side in SIDES
        for duty in duties(config)
    ]
