"""S2MAD's debate on the shared engine (section 3.4, Algorithm 1).

Round 0 ("initial") holds the initial opinions h^0 (Eq. 3); rounds 1..M ("update") have
each debater revise its view after reading the other's previous reply (Eq. 4). In the
shared layout an update shows both previous replies in one order (P, then N) and names
the speaker last, so both debaters' prompts of a round share everything before that line. Both
debaters speak concurrently in every round, so in round j each sees only round j-1 of
the other. After round M the debate ends with the shared answer when the debaters
agree, otherwise a judge rules on both final replies (Eq. 5). The "w/o Debate" ablation
is the same engine with one speaker and round 0 only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from veracity.deliberation import (
    Consensus,
    Debate,
    Debater,
    DebateState,
    LLMJudge,
    Role,
    Schedule,
)
from veracity.llm.base import LLM, Message
from veracity.methods.s2mad.config import DEBATE_ANSWERS, S2MADConfig
from veracity.methods.s2mad.stance import PostPrompts, ScoredReply

AGENT_P = Role(name="agent_p", title="Agent P")  # D_p, starts from the supporting set P
AGENT_N = Role(name="agent_n", title="Agent N")  # D_n, starts from the opposing set N
SINGLE = Role(name="single_agent", title="Agent")  # "w/o Debate"
OPPONENT = {AGENT_P.name: AGENT_N.name, AGENT_N.name: AGENT_P.name}
TITLES = {AGENT_P.name: AGENT_P.title, AGENT_N.name: AGENT_N.title}


def comment_group(kind: str, replies: Sequence[ScoredReply]) -> dict[str, Any]:
    """A block of replies for the initial-opinion prompts.

    Args:
        kind: "support", "oppose" or "mixed" (a random, unsorted sample).
        replies: the replies, in the order to show them.
    """
    return {"kind": kind, "comments": [s.reply.text for s in replies]}


def debater_prompt(state: DebateState, role: Role, phase: str, round_no: int) -> list[Message]:
    """Messages for a debater's turn: the initial opinion (round 0) or an update."""
    ctx = state.materials
    if phase == "initial":
        return render_initial(ctx, ctx["groups"][role.name])
    own = state.transcript.last(role.name, before_round=round_no)
    other = state.transcript.last(OPPONENT[role.name], before_round=round_no)
    if own is None or other is None:
        raise RuntimeError(f"{role.name} has no earlier turns to update from in round {round_no}")
    # the paper's update shows the debater's own view first; the shared layout's both views
    # in one order (P, then N), the speaker named last (`update.j2` shows what its layout uses)
    p, n = (own, other) if role.name == AGENT_P.name else (other, own)
    return ctx["prompts"].messages(
        "update.j2",
        own=own.text, own_answer=own.stance, other=other.text, other_answer=other.stance,
        p_text=p.text, p_answer=p.stance, n_text=n.text, n_answer=n.stance,
        speaker=role.title, opponent=TITLES[OPPONENT[role.name]],
    )  # fmt: skip


def render_initial(ctx: dict[str, Any], groups: list[dict[str, Any]]) -> list[Message]:
    return ctx["prompts"].messages(
        f"initial_{ctx['family']}.j2",
        groups=groups,
        max_chars=ctx["max_chars"],
    )


def judge_prompt(state: DebateState) -> list[Message]:
    """The judge reads both debaters' final replies (h^M_p, h^M_n)."""
    p = state.transcript.last(AGENT_P.name)
    n = state.transcript.last(AGENT_N.name)
    if p is None or n is None:
        raise RuntimeError("the judge needs a reply from both debaters")
    return state.materials["prompts"].messages(
        "judge.j2",
        p_text=p.text,
        p_answer=p.stance,
        n_text=n.text,
        n_answer=n.stance,
    )


def _plan(round_no: int, last: int) -> tuple[str, list[list[str]]]:
    return ("initial" if round_no == 0 else "update"), [[AGENT_P.name, AGENT_N.name]]


def build_debate(
    llm: LLM,
    cfg: S2MADConfig,
    *,
    claim: str,
    family: str,
    p_groups: list[dict[str, Any]],
    n_groups: list[dict[str, Any]],
    prompts: PostPrompts,
) -> Debate:
    """Two debaters, M update rounds, consensus at the last round, else the judge; every
    prompt made by the check's `prompts`."""

    def debater(role: Role) -> Debater:
        return Debater(
            role,
            llm,
            debater_prompt,
            stances=DEBATE_ANSWERS.labels,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )

    names = [AGENT_P.name, AGENT_N.name]
    return Debate(
        [debater(AGENT_P), debater(AGENT_N)],
        Schedule(_plan, max_rounds=cfg.rounds + 1, first_round=0),
        Consensus(names),
        DEBATE_ANSWERS,
        final_judge=LLMJudge(
            "judge",
            llm,
            DEBATE_ANSWERS,
            judge_prompt,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            choice=cfg.choice,
        ),
        materials={
            "claim": claim,
            "family": family,
            "max_chars": cfg.max_reply_chars,
            "groups": {AGENT_P.name: p_groups, AGENT_N.name: n_groups},
            "prompts": prompts,
        },
    )


def build_single(
    llm: LLM,
    cfg: S2MADConfig,
    *,
    claim: str,
    family: str,
    groups: list[dict[str, Any]],
    prompts: PostPrompts,
) -> Debate:
    """ "w/o Debate": one agent gives its opinion from the same prompt family; it stands."""
    agent = Debater(
        SINGLE,
        llm,
        lambda state, role, phase, r: render_initial(state.materials, groups),
        stances=DEBATE_ANSWERS.labels,
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
    )
    return Debate(
        [agent],
        Schedule.uniform("initial", [[SINGLE.name]], max_rounds=1, first_round=0),
        Consensus([SINGLE.name]),
        DEBATE_ANSWERS,
        materials={
            "claim": claim,
            "family": family,
            "max_chars": cfg.max_reply_chars,
            "prompts": prompts,
        },
    )
