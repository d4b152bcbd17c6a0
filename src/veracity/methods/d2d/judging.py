"""D2D's judgment: one judge per dimension splits points between the teams, the totals
decide, and a summary judge explains the outcome.

Each scoring judge reads the input, the evidence (when there is any) and the whole
debate, and splits `D2DConfig.points` points (7) between the affirmative and the
negative team on its dimension; the reply gives the affirmative team's share, the
negative team gets the rest, so the split always adds up. The judges score
independently and at once.

The affirmative team's share of all points is the verdict's veracity score. In a
two-label space the team with more points wins and a tie decides nothing (D2D's
UNCERTAIN: the method abstains). In a larger space the share picks the label whose
veracity score is nearest (or the label whose band holds it, in a space defined by
score bands); an exact tie between two labels decides nothing.
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core import context
from veracity.core.events import Ruling
from veracity.core.labels import LabelSpace
from veracity.deliberation import DebateState, JudgeDecision
from veracity.llm.base import LLM, LLMRequest
from veracity.llm.structured import complete_structured
from veracity.methods.d2d.config import DIMENSIONS, D2DConfig

PROMPTS = "veracity.methods.d2d"
_SCORE_MODELS: dict[int, type[BaseModel]] = {}


def score_model(points: int) -> type[BaseModel]:
    """A scoring judge's reply: a short reason, then the affirmative team's points."""
    if points not in _SCORE_MODELS:
        _SCORE_MODELS[points] = create_model(
            "D2DScore",
            __config__=ConfigDict(extra="forbid"),
            reason=(str, Field(max_length=600, description="why the points are split so")),
            affirmative=(
                int,
                Field(
                    ge=0,
                    le=points,
                    description=f"the affirmative team's points, 0 to {points}; the negative "
                    "team gets the rest",
                ),
            ),
        )
    return _SCORE_MODELS[points]


class DimensionScore(BaseModel):
    """One judge's split of the points."""

    model_config = ConfigDict(extra="forbid")

    dimension: str
    affirmative: int
    negative: int
    reason: str


def label_for_share(space: LabelSpace, share: float) -> str | None:
    """The label the affirmative share of the points gives (None: a tie decides nothing)."""
    if space.cutoffs is not None:
        return space.from_score(share)
    ranked = sorted((abs(space.scores[label] - share), label) for label in space.labels)
    if len(ranked) > 1 and math.isclose(ranked[0][0], ranked[1][0], abs_tol=1e-9):
        return None
    return ranked[0][1]


class D2DPanel:
    """The scoring judges and the summary judge, as the debate's final judge.

    Args:
        llm: the model.
        config: the method's settings (dimensions, points, tokens, temperatures).
        labels: the verdict's label space.
        materials: what the prompts show: ``kind``, ``input``, ``passages``, a
            ``transcript(state)`` callable giving the debate as text, ``material`` (the
            input and evidence block) and ``layout`` (the method's prompt layout).
    """

    name = "judges"

    def __init__(self, llm: LLM, config: D2DConfig, labels: LabelSpace, materials: dict[str, Any]):
        self.llm, self.config, self.labels, self.materials = llm, config, labels, materials
        self.scores: list[DimensionScore] = []
        self.summary: str = ""

    async def _score(self, state: DebateState, dimension: str) -> DimensionScore:
        cfg, m = self.config, self.materials
        messages = m["layout"].messages(
            PROMPTS, "score.j2", material=m["material"], kind=m["kind"], input=m["input"],
            passages=m["passages"],
            transcript=m["transcript"](state), dimension=DIMENSIONS[dimension],
            points=cfg.points,
        )  # fmt: skip
        reply = await complete_structured(
            self.llm, messages, score_model(cfg.points), temperature=cfg.temperature,
            max_tokens=cfg.max_tokens_judge, tag=f"judge:{dimension}",
        )  # fmt: skip
        aff = reply.value.affirmative
        score = DimensionScore(
            dimension=dimension, affirmative=aff, negative=cfg.points - aff,
            reason=reply.value.reason,
        )  # fmt: skip
        context.current().emit(
            Ruling(
                name=f"judge:{dimension}",
                round=state.round,
                reason=score.reason,
                decision=f"affirmative {score.affirmative}, negative {score.negative}",
            )
        )
        return score

    async def judge(self, state: DebateState) -> JudgeDecision:
        """Score every dimension, total the points, and map them to a label."""
        self.scores = list(
            await asyncio.gather(*(self._score(state, d) for d in self.config.dimensions))
        )
        aff = sum(s.affirmative for s in self.scores)
        total = self.config.points * len(self.scores)
        share = aff / total
        label = label_for_share(self.labels, share)
        verdict = label or "no decision (tie)"
        self.summary = await self._summarise(state, verdict, aff, total) if label else ""
        reason = self.summary or (
            f"the affirmative team scored {aff} and the negative team {total - aff} of {total} "
            "points: " + ("a tie, which decides nothing" if label is None else f"{label}")
        )
        context.current().emit(
            Ruling(
                name=self.name,
                round=state.round,
                decision=label,
                reason=reason,
                detail={"affirmative": aff, "negative": total - aff, "share": round(share, 4)},
            )
        )
        return JudgeDecision(label=label, reason=reason, judge=self.name, round=state.round)

    async def _summarise(self, state: DebateState, verdict: str, aff: int, total: int) -> str:
        if not self.config.summary:
            return ""
        cfg, m = self.config, self.materials
        messages = m["layout"].messages(
            PROMPTS, "summary.j2", material=m["material"], kind=m["kind"], input=m["input"],
            transcript=m["transcript"](state),
            verdict=verdict, affirmative=aff, negative=total - aff, total=total,
        )  # fmt: skip
        response = await self.llm.complete(
            LLMRequest(
                messages=messages, temperature=cfg.summary_temperature,
                max_tokens=cfg.max_tokens_summary, tag="judge:summary",
            )
        )  # fmt: skip
        return response.text.strip()
