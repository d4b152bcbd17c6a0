"""Debate transcripts: who said what, in which round and phase."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Turn(BaseModel):
    """One agent's contribution.

    Attributes:
        round: 0 for initial opinions, then 1, 2, ... (the paper's round numbering varies;
            each method documents its own).
        phase: the protocol step, e.g. "opening", "rebuttal", "closing", "argument",
            "initial", "update".
        speaker: the role name.
        text: the argument as the agent wrote it.
        stance: the label the speaker committed to, when the protocol asks for one.
        data: other parsed fields (cited evidence ids, scores, ...).
    """

    model_config = ConfigDict(extra="forbid")

    round: int
    phase: str
    speaker: str
    text: str
    stance: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)


class Transcript(BaseModel):
    """The ordered turns of a debate."""

    model_config = ConfigDict(extra="forbid")

    turns: list[Turn] = Field(default_factory=list)

    def add(self, turn: Turn) -> None:
        self.turns.append(turn)

    def last(self, speaker: str, before_round: int | None = None) -> Turn | None:
        """The speaker's latest turn (optionally only from rounds before `before_round`)."""
        for turn in reversed(self.turns):
            if turn.speaker == speaker and (before_round is None or turn.round < before_round):
                return turn
        return None

    @property
    def rounds(self) -> list[int]:
        return sorted({t.round for t in self.turns})

    def render(
        self,
        *,
        speakers: Iterable[str] | None = None,
        names: dict[str, str] | None = None,
        up_to_round: int | None = None,
        with_headers: bool = True,
    ) -> str:
        """Plain text for prompts: turns grouped under round/phase headers.

        Args:
            speakers: only these speakers (default: all).
            names: display names per role (default: the role name, capitalised).
            up_to_round: only rounds up to and including this one.
        """
        wanted = set(speakers) if speakers is not None else None
        names = names or {}
        lines: list[str] = []
        header = None
        for turn in self.turns:
            if wanted is not None and turn.speaker not in wanted:
                continue
            if up_to_round is not None and turn.round > up_to_round:
                continue
            if with_headers and (turn.round, turn.phase) != header:
                header = (turn.round, turn.phase)
                lines.append(f"--- Round {turn.round} ({turn.phase}) ---")
            who = names.get(turn.speaker, turn.speaker.replace("_", " ").capitalize())
            stance = f" [{turn.stance}]" if turn.stance else ""
            lines.append(f"{who}{stance}: {turn.text.strip()}")
        return "\n".join(lines)
