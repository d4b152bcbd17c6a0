"""The evaluation network (Fig. 3, Eq. 6) and the tree aggregation network (Fig. 4,
Eq. 7–8), in PyTorch on the CPU.

Both predict logits; `sigmoid` turns them into veracity and reliability in [0, 1], and
the losses are binary cross-entropies on soft targets (computed on logits for numerical
stability, which is the same loss).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from dataclasses import dataclass

from veracity.methods.checkpoints import require_torch
from veracity.methods.toe.config import EvalNetConfig
from veracity.methods.toe.features import CLAIM_DIM, EVIDENCE_DIM, NODE_DIM

torch = require_torch("ToE's evaluation and aggregation networks")
nn = torch.nn
F = torch.nn.functional
Tensor = torch.Tensor


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one intra-op thread inside the block (restored after).

    These networks are tiny: on a busy 2-core machine a training step took 0.35 s with
    two threads and 0.07 s with one (benchmarks in the README).
    """
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _mlp(inp: int, hidden: int, out: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(inp, hidden), nn.ReLU(), nn.Linear(hidden, out), nn.ReLU())


def _head(dim: int) -> nn.Sequential:
    return nn.Sequential(nn.Linear(dim, dim // 2), nn.ReLU(), nn.Linear(dim // 2, 1))


class EvaluationNet(nn.Module):
    """Claim encoder, shared evidence encoder, quality gate, stance-aware group attention
    over the supporting / neutral / refuting tracks, mean pooling, fusion, two heads.

    Each track's safe mask (hard) lets only occupied evidence slots of that stance take
    part in the track's self-attention; its soft mask (the quality gate's weight) scales
    the attention outputs, which are zero outside the track, before they are mean-pooled
    over the padded slots (so the pooled vector still reflects how much evidence the
    track holds, which a mean over the track's own items would lose).
    """

    def __init__(self, dim: int = 64, heads: int = 4):
        super().__init__()
        self.claim_encoder = _mlp(CLAIM_DIM, dim, dim)
        self.evidence_encoder = _mlp(EVIDENCE_DIM, dim, dim)
        self.quality_gate = nn.Sequential(
            nn.Linear(EVIDENCE_DIM, 16), nn.ReLU(), nn.Linear(16, 1), nn.Sigmoid()
        )
        self.tracks = nn.ModuleList(
            [nn.MultiheadAttention(dim, heads, batch_first=True) for _ in range(3)]
        )
        self.fusion = _mlp(4 * dim, 2 * dim, dim)
        self.veracity_head = _head(dim)
        self.reliability_head = _head(dim)

    def forward(self, claim: Tensor, evidence: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Logits of veracity and reliability, each of shape (batch,).

        Args:
            claim: (batch, 12) claim features.
            evidence: (batch, rows, 8) evidence matrix; columns 0–2 are the stance one-hot
                (supports, neutral, refutes).
            mask: (batch, rows) bool, True where a slot holds evidence.
        """
        c = self.claim_encoder(claim)
        h = self.evidence_encoder(evidence)
        quality = self.quality_gate(evidence).squeeze(-1)
        pooled = []
        for k, attention in enumerate(self.tracks):
            safe = mask & (evidence[..., k] > 0.5)
            has_any = safe.any(-1, keepdim=True)
            # a track with no evidence masks nothing (its output is zeroed below), which
            # keeps the softmax defined
            out, _ = attention(h, h, h, key_padding_mask=~safe & has_any, need_weights=False)
            soft = quality * safe.float()
            total = (out * soft.unsqueeze(-1)).sum(1)
            pooled.append(total / evidence.shape[1])  # mean over the padded slots
        z = self.fusion(torch.cat([c, *pooled], dim=-1))
        return self.veracity_head(z).squeeze(-1), self.reliability_head(z).squeeze(-1)


class AggregationNet(nn.Module):
    """Node encoder, self-attention over the children, cross-attention from the parent,
    fusion, two heads."""

    def __init__(self, dim: int = 64, heads: int = 4):
        super().__init__()
        self.encoder = _mlp(NODE_DIM, dim, dim)
        self.children_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.parent_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.fusion = _mlp(2 * dim, dim, dim)
        self.veracity_head = _head(dim)
        self.reliability_head = _head(dim)

    def forward(self, parent: Tensor, children: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """Logits of the parent's aggregated veracity and reliability, each (batch,).

        Args:
            parent: (batch, 16) the node's own features.
            children: (batch, k, 16) its processed children's features.
            mask: (batch, k) bool, True for real children (at least one per row).
        """
        p = self.encoder(parent)
        c = self.encoder(children)
        attended, _ = self.children_attention(c, c, c, key_padding_mask=~mask, need_weights=False)
        c = c + attended
        ctx, _ = self.parent_attention(
            p.unsqueeze(1), c, c, key_padding_mask=~mask, need_weights=False
        )
        z = self.fusion(torch.cat([p, ctx.squeeze(1)], dim=-1))
        return self.veracity_head(z).squeeze(-1), self.reliability_head(z).squeeze(-1)


# --------------------------------------------------------------------------- training


@dataclass
class EvalSample:
    """One node's inputs and the LLM judge's soft targets."""

    claim: list[float]
    evidence: list[list[float]]
    mask: list[bool]
    veracity: float
    reliability: float


def pair_bce(logits: tuple[Tensor, Tensor], targets: tuple[Tensor, Tensor]) -> Tensor:
    """BCE(v̂, ṽ) + BCE(r̂, r̃) per row (Eq. 6), from logits."""
    v, r = logits
    tv, tr = targets
    return F.binary_cross_entropy_with_logits(
        v, tv, reduction="none"
    ) + F.binary_cross_entropy_with_logits(r, tr, reduction="none")


def train_evaluation(
    net: EvaluationNet,
    samples: list[EvalSample],
    cfg: EvalNetConfig,
    optimizer: torch.optim.Optimizer | None = None,
    seed: int = 0,
) -> tuple[torch.optim.Optimizer, list[float]]:
    """Fit `net` to the judge's targets with Eq. 6 (Adam, gradient norm clipped).

    Returns the optimiser (to checkpoint) and the mean loss of each epoch.
    """
    if not samples:
        raise ValueError("no training samples for the evaluation network")
    optimizer = optimizer or torch.optim.Adam(net.parameters(), lr=cfg.lr)
    claim = torch.tensor([s.claim for s in samples], dtype=torch.float32)
    evidence = torch.tensor([s.evidence for s in samples], dtype=torch.float32)
    mask = torch.tensor([s.mask for s in samples], dtype=torch.bool)
    tv = torch.tensor([s.veracity for s in samples], dtype=torch.float32)
    tr = torch.tensor([s.reliability for s in samples], dtype=torch.float32)
    order = list(range(len(samples)))
    rng = random.Random(seed)
    losses: list[float] = []
    net.train()
    with one_thread():
        for _ in range(cfg.epochs):
            rng.shuffle(order)
            total = 0.0
            for start in range(0, len(order), cfg.batch_size):
                idx = torch.tensor(order[start : start + cfg.batch_size])
                out = net(claim[idx], evidence[idx], mask[idx])
                loss = pair_bce(out, (tv[idx], tr[idx])).mean()
                optimizer.zero_grad()
                loss.backward()
                nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
                optimizer.step()
                total += float(loss.detach()) * len(idx)
            losses.append(total / len(samples))
    net.eval()
    return optimizer, losses
