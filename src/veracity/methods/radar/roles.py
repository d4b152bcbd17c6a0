"""RADAR's participants: role line-ups, personas, and the prompt builders for each turn.

Line-ups (section 3 and Appendix A.1 of the paper):

- expertise (default): Politician and Scientist;
- position: Advocate (argues the claim is true) and Critic (false or misleading);
- 3 agents: a Journalist joins and speaks first in every round; the others see its reply;
- 4 agents: also a specialist in a domain an LLM infers from the claim.

Every prompt shows the claim, the shared evidence pool, the speaker's own previous turn
and the latest turn of every other participant visible at that point.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.labels import LabelSpace
from veracity.deliberation import DebateState, Role, Transcript
from veracity.llm.base import LLM, Message
from veracity.llm.reply_schema import short_name
from veracity.llm.structured import complete_structured
from veracity.methods.radar.config import RoleSet
from veracity.methods.radar.pool import PassagePool
from veracity.prompt_layout import PromptLayout, make_layout
from veracity.prompting import render, render_messages, truncate_chars

PROMPTS = "veracity.methods.radar"
JOURNALIST = "journalist"
DOMAIN_EXPERT = "domain_expert"


def lineup(roles: RoleSet, agents: int) -> list[str]:
    """Role names of a debate with `agents` participants, in display order."""
    pair = ["politician", "scientist"] if roles == "expertise" else ["advocate", "critic"]
    names = ([JOURNALIST] if agents >= 3 else []) + pair
    if agents >= 4:
        names.append(DOMAIN_EXPERT)
    return names


def speaking_order(names: list[str]) -> list[list[str]]:
    """Groups spoken in turn each round: the journalist alone first, then the rest at once."""
    if JOURNALIST in names:
        return [[JOURNALIST], [n for n in names if n != JOURNALIST]]
    return [list(names)]


def make_role(name: str, domain: str | None = None) -> Role:
    """The role with its persona (system prompt) rendered from ``prompts/personas``."""
    if name == DOMAIN_EXPERT and not domain:
        raise ValueError("the domain expert needs an inferred domain")
    persona = render(PROMPTS, f"personas/{name}.j2", domain=domain or "")
    title = f"{domain} specialist" if name == DOMAIN_EXPERT else name.capitalize()
    metadata = {"domain": domain} if name == DOMAIN_EXPERT else {}
    return Role(name=name, title=title, persona=persona, metadata=metadata)


class DomainReply(BaseModel):
    """The domain inference answer."""

    model_config = ConfigDict(extra="forbid")

    domain: short_name(3, 60) = Field(  # type: ignore[valid-type]
        description="the specialist domain, one word or a very short name"
    )


async def infer_domain(llm: LLM, claim: str, *, max_tokens: int = 48) -> str:
    """The claim's specialist domain (e.g. "Economy"), as the LLM names it."""
    messages = render_messages(PROMPTS, "domain.j2", claim=claim)
    result = await complete_structured(
        llm, messages, DomainReply, temperature=0.0, max_tokens=max_tokens, tag="domain"
    )
    return result.value.domain


def shortened(transcript: Transcript, turn_chars: int) -> Transcript:
    """A copy whose turns are cut to `turn_chars` characters (the prompt budget)."""
    return Transcript(
        turns=[
            t.model_copy(update={"text": truncate_chars(t.text.strip(), turn_chars)})
            for t in transcript.turns
        ]
    )


class RadarPrompts:
    """Prompt builders for debaters, the judge and the stop agent of one check.

    Args:
        claim: the claim as rendered for prompts (text, speaker, date).
        pool: the shared evidence pool.
        roles: the role set (frames the judge's persona).
        titles: display name of each role in the debate.
        labels: the verdict's label space.
        judge_prompt: ``paper`` (Appendix A's judge) or ``omission`` (ours, with an
            omitted-context checklist).
        layout: ``shared`` (claim and evidence open every prompt, so a server reuses
            them; see `veracity.prompt_layout`) or ``paper`` (personas lead).
        reason_chars: the judge's reason limit, named in its prompt (the reply schema
            holds the judge to it).
    """

    def __init__(
        self,
        claim: str,
        pool: PassagePool,
        roles: RoleSet,
        titles: dict[str, str],
        labels: LabelSpace,
        judge_prompt: str = "paper",
        layout: PromptLayout = "shared",
        *,
        reason_chars: int,
    ):
        self.pool = pool
        self.reason_chars = reason_chars
        self.material = render(PROMPTS, "_material.j2", claim=claim, evidence=pool.render())
        self.layout = make_layout(layout, ("argument", "debate"))
        self.judge_prompt = judge_prompt
        self.judge_persona = render(
            PROMPTS, "personas/judge.j2", roles=roles, judge_prompt=judge_prompt
        )
        self.titles = titles
        self.labels = labels

    def _cut(self, text: str) -> str:
        return truncate_chars(text.strip(), self.pool.turn_chars)

    def turn(self, state: DebateState, role: Role, phase: str, round_no: int) -> list[Message]:
        """A debater's prompt for `phase` (opening, rebuttal or closing)."""
        own = state.transcript.last(role.name)
        others = []
        for name, title in self.titles.items():
            last = state.transcript.last(name) if name != role.name else None
            if last is not None and last.text.strip():
                others.append({"name": title, "text": self._cut(last.text)})
        others_block = render(
            PROMPTS,
            "_others.j2",
            own_previous=self._cut(own.text) if own and own.text.strip() else "",
            others=others,
        )
        return self.layout.messages(
            PROMPTS,
            f"{phase}.j2",
            material=self.material,
            persona_text=role.persona,
            role=role.name,
            title=role.display,
            domain=role.metadata.get("domain", ""),
            others_block=others_block,
        )

    def transcript(self, state: DebateState) -> str:
        return shortened(state.transcript, self.pool.turn_chars).render(names=self.titles)

    def judge(self, state: DebateState) -> list[Message]:
        """The judge's prompt over the debate so far (round judge and final judge alike)."""
        return self.layout.messages(
            PROMPTS,
            "judge.j2",
            material=self.material,
            persona=self.judge_persona,
            transcript=self.transcript(state),
            partial=not state.is_last_round,
            labels=self.labels.describe(),
            judge_prompt=self.judge_prompt,
            reason_chars=self.reason_chars,
        )

    def stop(self, state: DebateState) -> list[Message]:
        """The stop agent's prompt: continue to the next round, or stop now?"""
        upcoming = "closing" if state.round + 1 >= state.last_round else "rebuttal"
        return self.layout.messages(
            PROMPTS,
            "stop.j2",
            material=self.material,
            transcript=self.transcript(state),
            upcoming=upcoming,
        )
