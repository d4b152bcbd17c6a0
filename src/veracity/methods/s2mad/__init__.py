"""S2MAD: stance-separated multi-agent debate for rumor detection (see README.md)."""

from veracity.methods.s2mad.config import ANSWER_TO_RUMOR, DEBATE_ANSWERS, S2MADConfig
from veracity.methods.s2mad.method import S2MADMethod
from veracity.methods.s2mad.stance import (
    ScoredReply,
    StanceOutcome,
    StanceScorer,
    StanceScoringError,
    random_split,
    select_top_k,
)

__all__ = [
    "ANSWER_TO_RUMOR",
    "DEBATE_ANSWERS",
    "S2MADConfig",
    "S2MADMethod",
    "ScoredReply",
    "StanceOutcome",
    "StanceScorer",
    "StanceScoringError",
    "random_split",
    "select_top_k",
]
