"""The deliberation engine: roles, debaters, transcripts, judges and stopping policies."""

from veracity.deliberation.agents import Debater, Role, Speaker, stance_model
from veracity.deliberation.debate import Debate, DebateResult, RoundPlan, Schedule, verdict_fields
from veracity.deliberation.judges import INSUFFICIENT, Judge, LLMJudge
from veracity.deliberation.state import DebateState, JudgeDecision, StopCheck
from veracity.deliberation.stopping import (
    Consensus,
    FixedRounds,
    JudgeDecides,
    ProbabilityStop,
    StoppingPolicy,
)
from veracity.deliberation.transcript import Transcript, Turn

__all__ = [
    "INSUFFICIENT",
    "Consensus",
    "Debate",
    "DebateResult",
    "DebateState",
    "Debater",
    "FixedRounds",
    "Judge",
    "JudgeDecides",
    "JudgeDecision",
    "LLMJudge",
    "ProbabilityStop",
    "Role",
    "RoundPlan",
    "Schedule",
    "Speaker",
    "StopCheck",
    "StoppingPolicy",
    "Transcript",
    "Turn",
    "stance_model",
    "verdict_fields",
]
