"""The retrieval agent's policy π_θ, its heuristic warm-up, and online GRPO (Section III-B).

`PolicyNet` maps the 29-dim state to logits over the eight actions (MLP 128-128-64);
actions without a source are masked (logit −1e9, probability 0, the rest renormalised).
`RetrievalPolicy` holds the learning state: the network, a frozen reference copy for the
KL term, the optimiser, and the counts of claims seen and updates made. For the first
N_warm claims the warm-up heuristic acts; its episodes are off-policy for π_θ and never
enter the clipped ratio. Afterwards π_θ acts and learns with GRPO: a group is G rollouts
of one (sub-)claim, each rollout's discounted return is normalised within the group, and
the loss is the clipped surrogate minus the entropy bonus plus β·KL(π_θ ‖ π_ref), each
averaged over a rollout's steps and then over the group's rollouts.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from veracity.methods.checkpoints import require_torch
from veracity.methods.toe.config import ACTIONS, GRPOConfig
from veracity.methods.toe.features import N_ACTIONS, STATE_DIM
from veracity.methods.toe.networks import one_thread
from veracity.methods.toe.trajectory import Trajectory, group_advantages

torch = require_torch("ToE's retrieval policy")
nn = torch.nn
Tensor = torch.Tensor

MASKED = -1e9  # logit of a masked action: probability exactly 0 after the softmax


@dataclass
class _Batch:
    """One GRPO group's steps as tensors (`ref`: log π_ref of the actions taken)."""

    state: Tensor
    mask: Tensor
    action: Tensor
    old: Tensor
    adv: Tensor
    weight: Tensor
    ref: Tensor | None = None


class PolicyNet(nn.Module):
    """Feed-forward policy: state → hidden (128, 128, 64) → action logits."""

    def __init__(self, hidden: Sequence[int] = (128, 128, 64)):
        super().__init__()
        layers: list[nn.Module] = []
        width = STATE_DIM
        for h in hidden:
            layers += [nn.Linear(width, h), nn.Tanh()]
            width = h
        layers.append(nn.Linear(width, N_ACTIONS))
        self.body = nn.Sequential(*layers)

    def forward(self, state: Tensor, mask: Tensor) -> Tensor:
        """Masked log-probabilities over the actions, shape (batch, 8)."""
        logits = self.body(state).masked_fill(~mask, MASKED)
        return torch.log_softmax(logits, dim=-1)


class RetrievalPolicy:
    """π_θ with its reference copy, optimiser and counters."""

    def __init__(self, cfg: GRPOConfig, seed: int = 0):
        self.cfg = cfg
        torch.manual_seed(seed)
        self.net = PolicyNet(cfg.hidden)
        self.reference = copy.deepcopy(self.net).requires_grad_(False)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=cfg.lr)
        self.generator = torch.Generator().manual_seed(seed)
        self.claims_seen = 0
        self.updates = 0
        self.history: list[dict[str, float]] = []  # metrics of each update

    @property
    def warming_up(self) -> bool:
        return self.claims_seen < self.cfg.warmup_claims

    def act(
        self, state: list[float], mask: list[bool], *, greedy: bool = False
    ) -> tuple[int, float, list[float]]:
        """Choose an action: (index, log-probability, probabilities of all actions)."""
        with torch.no_grad(), one_thread():
            logp = self.net(torch.tensor([state]), torch.tensor([mask]))[0]
        probs = logp.exp()
        if greedy:
            idx = int(torch.argmax(probs))
        else:
            idx = int(torch.multinomial(probs, 1, generator=self.generator))
        return idx, float(logp[idx]), [round(float(p), 4) for p in probs]

    def learn(self, group: list[Trajectory]) -> dict[str, float] | None:
        """One GRPO update on rollouts of one claim; None when fewer than two on-policy
        rollouts with steps remain (heuristic rollouts are left out of the ratio)."""
        kept = [t for t in group if t.steps and not t.heuristic]
        if len(kept) < 2:
            return None
        return self.update(kept)

    def update(self, group: list[Trajectory]) -> dict[str, float]:
        """One GRPO update on `group` (several epochs); returns its metrics.

        Raises:
            ValueError: a heuristic rollout (off-policy) or rollouts of different claims.
        """
        if any(t.heuristic for t in group):
            raise ValueError("heuristic rollouts are off-policy: keep them out of GRPO")
        cfg = self.cfg
        advs = group_advantages(group, cfg.gamma)
        steps = [s for t in group for s in t.steps]
        batch = _Batch(
            state=torch.tensor([s.state for s in steps]),
            mask=torch.tensor([s.mask for s in steps]),
            action=torch.tensor([s.action for s in steps]).unsqueeze(-1),
            old=torch.tensor([s.logp for s in steps]),
            adv=torch.tensor([a for row in advs for a in row]),
            # GRPO's 1/G · Σ_i 1/|o_i| Σ_t: each rollout weighs the same, whatever its length
            weight=torch.tensor([1 / (len(group) * len(t.steps)) for t in group for _ in t.steps]),
        )
        with torch.no_grad():
            batch.ref = self.reference(batch.state, batch.mask).gather(-1, batch.action).squeeze(-1)
        metrics: dict[str, float] = {}
        with one_thread():
            for _ in range(cfg.epochs):
                metrics = self._epoch(batch)
        metrics.update(
            rollouts=len(group),
            mean_return=sum(t.total_reward for t in group) / len(group),
        )
        self.updates += 1
        self.history.append(metrics)
        return metrics

    def _epoch(self, b: _Batch) -> dict[str, float]:
        cfg = self.cfg
        assert b.ref is not None
        logp_all = self.net(b.state, b.mask)
        logp = logp_all.gather(-1, b.action).squeeze(-1)
        ratio = torch.exp(logp - b.old)
        surrogate = torch.min(ratio * b.adv, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * b.adv)
        entropy = -(logp_all.exp() * logp_all).sum(-1)
        kl = torch.exp(b.ref - logp) - (b.ref - logp) - 1  # unbiased KL(π_θ‖π_ref) estimate
        per_step = surrogate + cfg.entropy * entropy - cfg.kl * kl
        loss = -(b.weight * per_step).sum()
        self.optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(self.net.parameters(), cfg.max_grad_norm)
        self.optimizer.step()
        return {
            "loss": float(loss.detach()),
            "entropy": float((b.weight * entropy).sum().detach()),
            "kl": float((b.weight * kl).sum().detach()),
        }

    def action_probs(self, state: list[float], mask: list[bool]) -> dict[str, float]:
        with torch.no_grad(), one_thread():
            p = self.net(torch.tensor([state]), torch.tensor([mask]))[0].exp()
        return {a: float(p[i]) for i, a in enumerate(ACTIONS)}

    # ------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        return {
            "net": self.net.state_dict(),
            "reference": self.reference.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "generator": self.generator.get_state(),
            "claims_seen": self.claims_seen,
            "updates": self.updates,
            "history": self.history,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.net.load_state_dict(state["net"])
        self.reference.load_state_dict(state["reference"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        # older checkpoints also hold a buffer of trajectories from different claims:
        # not a GRPO group, so it is not restored
        self.claims_seen = int(state["claims_seen"])
        self.updates = int(state["updates"])
        self.history = list(state["history"])
