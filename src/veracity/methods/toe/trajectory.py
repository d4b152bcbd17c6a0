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
    """One node's retrieval episode."""

    steps: list[Step] = field(default_factory=list)
    heuristic: bool = False

    @property
    def total_reward(self) -> float:
        return sum(s.reward for s in self.steps)


def group_advantages(group: list[Trajectory], gamma: float) -> list[list[float]]:
    """GRPO advantages with process supervision: rewards normalised over the group's
    steps, then each step's γ-discounted sum of the normalised rewards from it on."""
    rewards = [s.reward for t in group for s in t.steps]
    if not rewards:
        return [[] for _ in group]
    mean = sum(rewards) / len(rewards)
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / len(rewards))
    out = []
    for traj in group:
        norm = [(s.reward - mean) / (std + 1e-8) for s in traj.steps]
        adv, running = [0.0] * len(norm), 0.0
        for i in range(len(norm) - 1, -1, -1):
            running = norm[i] + gamma * running
            adv[i] = running
        out.append(adv)
    return out


def step_reward(
    cfg: RewardConfig,
    *,
    reliability: tuple[float, float],
    veracity: tuple[float, float],
    new_relevance: list[float],
    new_official: bool,
) -> tuple[float, dict[str, float]]:
    """Eq. 5: r_t = w_r·Δrel + w_v·|Δver| + w_e·min(n_new, 4)·δ_e + b_t − δ_step.

    Args:
        reliability: (r_{t-1}, r_t) of the node.
        veracity: (v_{t-1}, v_t).
        new_relevance: relevance of each evidence item this step added.
        new_official: whether one of them comes from an official or authoritative source.

    Returns:
        The reward and its terms (for the trace). b_t adds b_rel when reliability first
        reaches τ_h and b_auth when an authoritative item was found; δ_e is 1 when a new
        item is at least `cfg.relevant_at` relevant.
    """
    before_r, after_r = reliability
    d_rel = after_r - before_r
    d_ver = abs(veracity[1] - veracity[0])
    delta_e = 1.0 if any(x >= cfg.relevant_at for x in new_relevance) else 0.0
    evidence = min(len(new_relevance), cfg.new_evidence_cap) * delta_e
    bonus = cfg.bonus_reliability if before_r < cfg.high_confidence <= after_r else 0.0
    bonus += cfg.bonus_authoritative if new_official else 0.0
    terms = {
        "reliability": cfg.w_reliability * d_rel,
        "veracity": cfg.w_veracity * d_ver,
        "evidence": cfg.w_evidence * evidence,
        "bonus": bonus,
        "step": -cfg.step_penalty,
    }
    return sum(terms.values()), {k: round(v, 4) for k, v in terms.items()}
