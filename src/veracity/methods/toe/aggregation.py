"""Neural bottom-up aggregation over an argument tree, and its training (Eq. 7–8).

`neural_pass` runs the aggregation network bottom-up: each node with evaluated children
gets logits from its own features and its children's features, where a child's
aggregated scores are the network's own outputs for that child (so training back-
propagates through the tree). Leaves and unexpanded nodes keep their own scores.
"""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass

from veracity.methods.checkpoints import require_torch
from veracity.methods.toe.config import AggNetConfig, RuleAggConfig
from veracity.methods.toe.features import node_vector
from veracity.methods.toe.networks import AggregationNet, one_thread, pair_bce
from veracity.methods.toe.tree import ArgumentTree, Node, aggregate_rules

torch = require_torch("ToE's aggregation network")
nn = torch.nn
Tensor = torch.Tensor

Logits = tuple[Tensor, Tensor]


def _evaluated(node: Node) -> bool:
    return node.self_v is not None and node.self_r is not None


def _row(
    node: Node, tree: ArgumentTree, max_depth: int, aggr: tuple[Tensor, Tensor] | None
) -> Tensor:
    """A node's 16 features as a tensor; `aggr` (its aggregated scores) may carry gradients."""
    assert node.self_v is not None and node.self_r is not None
    kids = sum(1 for c in tree.children(node) if _evaluated(c))
    base = torch.tensor(
        node_vector(
            self_v=node.self_v,
            self_r=node.self_r,
            aggr_v=node.self_v,
            aggr_r=node.self_r,
            weight=node.weight,
            depth=node.depth,
            max_depth=max_depth,
            evidence=node.evidence,
            processed_children=kids,
            is_root=node.parent is None,
        ),
        dtype=torch.float32,
    )
    if aggr is None:
        return base
    return torch.cat([base[:2], aggr[0].reshape(1), aggr[1].reshape(1), base[4:]])


def _has_internal(tree: ArgumentTree) -> bool:
    return any(
        _evaluated(n) and any(_evaluated(c) for c in tree.children(n)) for n in tree.nodes.values()
    )


def neural_pass(net: AggregationNet, tree: ArgumentTree, max_depth: int) -> dict[str, Logits]:
    """Aggregation logits of every node that has evaluated children, bottom-up."""
    out: dict[str, Logits] = {}
    for node in tree.post_order():
        if not _evaluated(node):
            continue
        kids = [c for c in tree.children(node) if _evaluated(c)]
        if not kids:
            continue
        rows = []
        for kid in kids:
            logits = out.get(kid.id)
            aggr = (torch.sigmoid(logits[0]), torch.sigmoid(logits[1])) if logits else None
            rows.append(_row(kid, tree, max_depth, aggr))
        parent = _row(node, tree, max_depth, None).unsqueeze(0)
        children = torch.stack(rows).unsqueeze(0)
        mask = torch.ones(1, len(kids), dtype=torch.bool)
        v, r = net(parent, children, mask)
        out[node.id] = (v[0], r[0])
    return out


def aggregate_network(tree: ArgumentTree, net: AggregationNet, max_depth: int) -> None:
    """Set every evaluated node's aggregated scores with the network (leaves: own scores)."""
    net.eval()
    with torch.no_grad(), one_thread():
        logits = neural_pass(net, tree, max_depth)
    for node in tree.nodes.values():
        if not _evaluated(node):
            continue
        if node.id in logits:
            v, r = logits[node.id]
            node.aggr_v, node.aggr_r = float(torch.sigmoid(v)), float(torch.sigmoid(r))
        else:
            node.aggr_v, node.aggr_r = node.self_v, node.self_r


@dataclass
class TreeSample:
    """A completed tree with its root targets (y_v from the gold label, y_r see README)."""

    tree: ArgumentTree
    y_v: float
    y_r: float


def rule_targets(tree: ArgumentTree, rules: RuleAggConfig) -> dict[str, tuple[float, float]]:
    """The rule-based aggregated scores of every node (the imitation targets ṽ_i, r̃_i)."""
    shadow = copy.deepcopy(tree)
    aggregate_rules(shadow, rules)
    return {
        n.id: (n.aggr_v, n.aggr_r)  # type: ignore[misc]
        for n in shadow.nodes.values()
        if n.aggr_v is not None and n.aggr_r is not None
    }


def tree_loss(
    net: AggregationNet,
    sample: TreeSample,
    targets: dict[str, tuple[float, float]],
    cfg: AggNetConfig,
    max_depth: int,
) -> Tensor | None:
    """L_root (Eq. 7) + L_imit (Eq. 8) of one tree; None when the net has nothing to do."""
    logits = neural_pass(net, sample.tree, max_depth)
    if not logits:
        return None
    root = sample.tree.root.id
    loss = torch.zeros(())
    if root in logits:
        goal = (torch.tensor(sample.y_v), torch.tensor(sample.y_r))
        loss = loss + cfg.w_root * pair_bce(logits[root], goal)
    others = [i for i in logits if i != root]
    if others:
        terms = [
            pair_bce(logits[i], (torch.tensor(targets[i][0]), torch.tensor(targets[i][1])))
            for i in others
        ]
        loss = loss + cfg.w_imit * torch.stack(terms).mean()
    return loss


def train_aggregation(
    net: AggregationNet,
    samples: list[TreeSample],
    cfg: AggNetConfig,
    rules: RuleAggConfig,
    max_depth: int,
    optimizer: torch.optim.Optimizer | None = None,
    seed: int = 0,
    batch: int = 8,
) -> tuple[torch.optim.Optimizer, list[float]]:
    """Train on completed trees (AdamW, gradient norm clipped); returns the optimiser and
    the mean loss per epoch over the trees that have internal nodes.

    Raises:
        ValueError: no tree has a node with evaluated children.
    """
    targets = [rule_targets(s.tree, rules) for s in samples]
    usable = [i for i, s in enumerate(samples) if _has_internal(s.tree)]
    if not usable:
        raise ValueError("no tree has an internal node to train the aggregation network on")
    optimizer = optimizer or torch.optim.AdamW(
        net.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay
    )
    rng = random.Random(seed)
    net.train()
    with one_thread():
        losses = _epochs(net, samples, targets, usable, cfg, max_depth, optimizer, rng, batch)
    net.eval()
    return optimizer, losses


def _epochs(
    net: AggregationNet,
    samples: list[TreeSample],
    targets: list[dict[str, tuple[float, float]]],
    usable: list[int],
    cfg: AggNetConfig,
    max_depth: int,
    optimizer: torch.optim.Optimizer,
    rng: random.Random,
    batch: int,
) -> list[float]:
    losses: list[float] = []
    for _ in range(cfg.epochs):
        rng.shuffle(usable)
        total, count = 0.0, 0
        for start in range(0, len(usable), batch):
            parts = [
                tree_loss(net, samples[i], targets[i], cfg, max_depth)
                for i in usable[start : start + batch]
            ]
            parts = [p for p in parts if p is not None]
            if not parts:
                continue
            loss = torch.stack(parts).mean()
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(net.parameters(), cfg.max_grad_norm)
            optimizer.step()
            total += float(loss.detach()) * len(parts)
            count += len(parts)
        losses.append(total / max(count, 1))
    return losses
