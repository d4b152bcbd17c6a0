"""ZoFia stage 2, debate and judgment (section 4.2, Algorithm 1) on the shared engine.

Each round the pro debater (the news is REAL) rebuts con's last argument and argues;
then con (the news is FAKE) rebuts pro's new argument and argues. After each exchange
the judge rules REAL, FAKE or INSUFFICIENT; INSUFFICIENT continues the debate, up to
`max_rounds`. Still insufficient after the last round: no decision (the method abstains).
"""

from __future__ import annotations

from typing import Any

from veracity.core.labels import LabelSpace
from veracity.deliberation import (
    Debate,
    Debater,
    DebateResult,
    DebateState,
    JudgeDecides,
    LLMJudge,
    Role,
    Schedule,
    Transcript,
)
from veracity.llm.base import LLM, Message
from veracity.methods.zofia.analysis import TAGS
from veracity.methods.zofia.config import ZoFiaConfig
from veracity.prompt_layout import make_layout
from veracity.prompting import render

PROMPTS = "veracity.methods.zofia"
SIDES = {
    "pro": {"side_name": "proponent", "position": "REAL", "opponent_name": "opponent"},
    "con": {"side_name": "opponent", "position": "FAKE", "opponent_name": "proponent"},
}
NAMES = {"pro": "Proponent (REAL)", "con": "Opponent (FAKE)"}


def _materials(config: ZoFiaConfig, news: str, pool: str) -> dict[str, Any]:
    """The debate's prompt material (the news, then the analysts' material, so it opens
    as the analysts' prompts do) and the method's layout."""
    material = render(PROMPTS, "_material.j2", news=news, pool=pool)
    return {"material": material, "layout": make_layout(config.prompt_layout, TAGS)}


def _debater_prompt(state: DebateState, role: Role, phase: str, round_no: int) -> list[Message]:
    transcript = state.transcript.render(names=NAMES, with_headers=True)
    return state.materials["layout"].messages(
        PROMPTS,
        "debater.j2",
        material=state.materials["material"],
        transcript=transcript,
        rebut=bool(state.transcript.turns),
        **SIDES[role.name],
    )


def _judge_prompt(state: DebateState) -> list[Message]:
    return state.materials["layout"].messages(
        PROMPTS,
        "judge.j2",
        material=state.materials["material"],
        transcript=state.transcript.render(names=NAMES),
        rounds=state.round,
        last_round=state.is_last_round,
    )


def build_debate(llm: LLM, labels: LabelSpace, config: ZoFiaConfig, news: str, pool: str) -> Debate:
    """The pro/con debate with a ternary judge after every exchange."""
    debaters = [
        Debater(
            Role(name=name, title=NAMES[name]),
            llm,
            _debater_prompt,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
        )
        for name in ("pro", "con")
    ]
    judge = LLMJudge(
        "judge",
        llm,
        labels,
        _judge_prompt,
        allow_insufficient=True,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        choice=config.choice,
    )
    return Debate(
        debaters,
        Schedule.uniform("argument", [["pro"], ["con"]], max_rounds=config.max_rounds),
        JudgeDecides(judge),
        labels,
        materials={"news": news, "pool": pool, **_materials(config, news, pool)},
    )


async def judge_without_debate(
    llm: LLM, labels: LabelSpace, config: ZoFiaConfig, news: str, pool: str
) -> DebateResult:
    """The "w/o debate" ablation: the judge rules once on the evidence pool."""

    def prompt(state: DebateState) -> list[Message]:
        shown = _materials(config, news, pool)
        return shown["layout"].messages(PROMPTS, "judge_no_debate.j2", material=shown["material"])

    judge = LLMJudge(
        "judge",
        llm,
        labels,
        prompt,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        choice=config.choice,
    )
    state = DebateState(labels=labels, transcript=Transcript(), round=0, phase="none", last_round=0)
    decision = await judge.judge(state)
    return DebateResult(
        transcript=state.transcript,
        rounds_run=0,
        last_round=0,
        decision=decision,
        stop_reason="no debate (ablation): single judgment over the evidence pool",
    )
