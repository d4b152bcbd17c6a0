"""The pure-Python side of the retrieval policy: warm-up heuristic, trajectories and
GRPO's group-relative advantages (no torch needed to import this module)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from veracity.methods.toe.config import RewardConfig

# Warm-up preferences by claim category (ours; the paper says only "based on claim
# category and recency"). Recent events also try social media early.
HEURISTIC_ORDER: dict[str, tuple[str, ...]] = {
    "political": ("factcheck", "web", "counter", "wiki"),
    "scientific": ("arxiv", "wiki", "web", "counter"),
    "health": ("factcheck", "arxiv", "web", "counter"),
    "celebrity": ("social", "web", "reddit", "counter"),
    "historical": ("wiki", "web", "factcheck", "counter"),
    "other": ("web", "wiki", "counter", "factcheck"),
}


def heuristic_action(category: str, recent: bool, used: dict[str, int], allowed: set[str]) -> str:
    """The warm-up policy: the category's preferred sources in order, each once, then stop."""
    order = list(HEURISTIC_ORDER.get(category, HEURISTIC_ORDER["other"]))
    if recent and "social" not in order[:2]:
        order.insert(1, "social")
    for action in order:
        if action in allowed and used.get(action, 0) == 0:
            return action
    return "stop"


@dataclass
class Step:
    state: list[float]
    mask: list[bool]
    action: int
    logp: float  # log π_old(a|s) when the action was taken
    reward: float = 0.0


@dataclass
class Trajectory:
    """One retrieval episode (rollout) of a node's (sub-)claim."""

    steps: list[Step] = field(default_factory=list)
    heuristic: bool = False  # acted by the warm-up heuristic (off-policy for π_θ)
    claim: str = ""  # the (sub-)claim searched: GRPO groups rollouts of one claim

    @property
    def total_reward(self) -> float:
        return sum(s.reward for s in self.steps)

    def discounted_return(self, gamma: float) -> float:
        """Σ_t γ^t r_t from the episode's first step."""
        return sum(gamma**t * s.reward for t, s in enumerate(self.steps))


def group_advantages(group: list[Trajectory], gamma: float) -> list[list[float]]:
    """GRPO's group-relative advantages: the group is several rollouts of one claim;
    each rollout's γ-discounted return is normalised by the group's mean and standard
    deviation, and every step of the rollout takes that advantage.

    Raises:
        ValueError: the rollouts are not all of one claim.
    """
    if len({t.claim for t in group}) > 1:
        raise ValueError("a GRPO group holds rollouts of one claim")
    returns = [t.discounted_return(gamma) for t in group]
    if not returns:
        return []
    mean = sum(returns) / len(returns)
    std = math.sqrt(sum((r - mean) ** 2 for r in returns) / len(returns))
    return [[(r - mean) / (std + 1e-8)] * len(t.steps) for r, t in zip(returns, group, strict=True)]


def step_reward(
    cfg: RewardConfig,
    *,
    reliability: tuple[float, float],
    veracity: tuple[float, float],
    new_relevance: list[float],
    new_official: bool,
    reached_high: bool = False,
) -> tuple[float, dict[str, float]]:
    """Eq. 5: r_t = w_r·Δrel + w_v·|Δver| + w_e·min(n_new, 4)·δ_e + b_t − δ_step.

    Args:
        reliability: (r_{t-1}, r_t) of the node.
        veracity: (v_{t-1}, v_t).
        new_relevance: relevance of each evidence item this step added.
        new_official: whether one of them comes from an official or authoritative source.
        reached_high: whether reliability already reached τ_h earlier in the episode.

    Returns:
        The reward and its terms (for the trace). b_t adds b_rel when reliability first
        reaches τ_h in the episode (once: never again after a dip and a new rise) and
        b_auth when an authoritative item was found; δ_e is 1 when a new item is at least
        `cfg.relevant_at` relevant.
    """
    before_r, after_r = reliability
    d_rel = after_r - before_r
    d_ver = abs(veracity[1] - veracity[0])
    delta_e = 1.0 if any(x >= cfg.relevant_at for x in new_relevance) else 0.0
    evidence = min(len(new_relevance), cfg.new_evidence_cap) * delta_e
    first_high = not reached_high and before_r < cfg.high_confidence <= after_r
    bonus = cfg.bonus_reliability if first_high else 0.0
    bonus += cfg.bonus_authoritative if new_official else 0.0
    terms = {
        "reliability": cfg.w_reliability * d_rel,
        "veracity": cfg.w_veracity * d_ver,
        "evidence": cfg.w_evidence * evidence,
        "bonus": bonus,
        "step": -cfg.step_penalty,
    }
    return sum(terms.values()), {k: round(v, 4) for k, v in terms.items()}
