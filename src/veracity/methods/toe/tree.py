"""The argument tree of Algorithm 1: nodes, priority, the three flags, pruning, and the
rule-based bottom-up aggregation.

Nothing here calls a model: the method (`method.py`) evaluates and decomposes nodes and
asks the tree what to do next, so every rule can be tested on synthetic trees.

Node status: ``pending`` (in the queue), ``evaluated`` (scored, not decomposed),
``expanded`` (scored and decomposed), ``pruned`` (removed from the queue because a
decisive ancestor made it irrelevant), ``unvisited`` (still queued when the loop ended),
``failed`` (its evaluation failed after retries; the error is in the trace).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.methods.toe.config import RuleAggConfig, ThresholdConfig
from veracity.methods.toe.schema import ClaimFeatures, EvidenceItem, SubClaim

Status = Literal["pending", "evaluated", "expanded", "pruned", "unvisited", "failed"]


class Node(BaseModel):
    """One (sub-)claim of the argument tree."""

    model_config = ConfigDict(extra="forbid")

    id: str
    claim: str
    parent: str | None = None
    children: list[str] = Field(default_factory=list)
    depth: int = 0
    weight: float = 1.0  # importance weight among its siblings (root: 1)
    dimension: str | None = None  # the verification dimension of a sub-claim
    status: Status = "pending"
    features: ClaimFeatures | None = None
    evidence: list[EvidenceItem] = Field(default_factory=list)
    self_v: float | None = None  # the node's own veracity, from its evidence
    self_r: float | None = None  # ... and reliability
    aggr_v: float | None = None  # veracity with its subtree's evidence aggregated
    aggr_r: float | None = None
    scorer: str | None = None  # which scorer produced self_v / self_r
    evaluated_at: int | None = None  # iteration of its evaluation
    judge_v: float | None = None  # the LLM judge's soft targets, when it was asked
    judge_r: float | None = None
    judge_reason: str | None = None
    belief: list[dict[str, Any]] = Field(default_factory=list)  # scores after each search
    error: str | None = None  # evaluation failed
    expansion_error: str | None = None  # decomposition failed after its retries
    pruned_at: int | None = None
    pruned_by: str | None = None

    @property
    def scored(self) -> bool:
        return self.aggr_v is not None and self.aggr_r is not None


class ArgumentTree:
    """A growing argument tree rooted at the claim under investigation."""

    def __init__(self, claim: str):
        self.nodes: dict[str, Node] = {}
        self.root = self._new(claim, parent=None, depth=0, weight=1.0, dimension=None)

    def _new(
        self, claim: str, *, parent: str | None, depth: int, weight: float, dimension: str | None
    ) -> Node:
        node = Node(
            id=f"n{len(self.nodes)}",
            claim=claim,
            parent=parent,
            depth=depth,
            weight=weight,
            dimension=dimension,
        )
        self.nodes[node.id] = node
        return node

    def __getitem__(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def __len__(self) -> int:
        return len(self.nodes)

    def add_children(self, parent_id: str, subclaims: list[SubClaim]) -> list[Node]:
        """Append `subclaims` under `parent_id` as pending nodes (weights as given)."""
        parent = self.nodes[parent_id]
        kids = [
            self._new(
                s.claim,
                parent=parent_id,
                depth=parent.depth + 1,
                weight=s.weight,
                dimension=s.dimension,
            )
            for s in subclaims
        ]
        parent.children.extend(k.id for k in kids)
        parent.status = "expanded"
        return kids

    def children(self, node: Node) -> list[Node]:
        return [self.nodes[c] for c in node.children]

    def parent(self, node: Node) -> Node | None:
        return self.nodes[node.parent] if node.parent is not None else None

    def post_order(self, node: Node | None = None) -> Iterator[Node]:
        """Children before parents (bottom-up)."""
        node = node or self.root
        for child in self.children(node):
            yield from self.post_order(child)
        yield node

    def pre_order(self, node: Node | None = None) -> Iterator[Node]:
        """Parents before children (top-down)."""
        node = node or self.root
        yield node
        for child in self.children(node):
            yield from self.pre_order(child)

    def descendants(self, node: Node) -> Iterator[Node]:
        for child in self.children(node):
            yield child
            yield from self.descendants(child)

    @property
    def depth(self) -> int:
        return max(n.depth for n in self.nodes.values())

    def processed_children(self, node: Node) -> list[Node]:
        """Children that have scores (evaluated, possibly with their own subtree)."""
        return [c for c in self.children(node) if c.scored]

    def to_dict(self) -> dict[str, Any]:
        """The tree as JSON-ready data (nodes in creation order)."""
        return {
            "root": self.root.id,
            "nodes": [n.model_dump(mode="json") for n in self.nodes.values()],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ArgumentTree:
        """Rebuild a tree written by `to_dict` (for training on stored trees)."""
        nodes = [Node.model_validate(n) for n in data["nodes"]]
        if not nodes or nodes[0].id != data.get("root"):
            raise ValueError("a stored tree must list its root first")
        tree = cls.__new__(cls)
        tree.nodes = {n.id: n for n in nodes}
        tree.root = tree.nodes[data["root"]]
        return tree


# --------------------------------------------------------------------------- flags


def priority(tree: ArgumentTree, node: Node, w_uncertainty: float, w_importance: float) -> float:
    """Priority(n): weighted parent uncertainty (1 − its aggregated reliability) and the
    node's own importance weight. The root (no parent) counts as fully uncertain."""
    parent = tree.parent(node)
    if parent is None:
        uncertainty = 1.0
    else:
        r = parent.aggr_r if parent.aggr_r is not None else parent.self_r
        uncertainty = 1.0 - (r if r is not None else 0.0)
    return w_uncertainty * uncertainty + w_importance * node.weight


def expansion_flag(node: Node, th: ThresholdConfig, *, first_root_eval: bool) -> bool:
    """δ_n: the node's self-reliability is below τ_r^exp (the root always expands on its
    first evaluation)."""
    if node.self_r is None:
        return False
    return first_root_eval or node.self_r < th.expand_reliability


def decisive_flag(node: Node, th: ThresholdConfig) -> bool:
    """φ_n: aggregated reliability above τ_r^dec and veracity outside [τ_v^-, τ_v^+]."""
    if not node.scored:
        return False
    assert node.aggr_v is not None and node.aggr_r is not None
    outside = node.aggr_v < th.veracity_low or node.aggr_v > th.veracity_high
    return node.aggr_r > th.decide_reliability and outside


def convergence_flag(history: list[float], root: Node, th: ThresholdConfig) -> bool:
    """γ: the range of v_0 over the last iterations is below τ_c and r_0 exceeds τ_r^exp."""
    window = history[-th.convergence_window :]
    if len(window) < th.convergence_window or root.aggr_r is None:
        return False
    return max(window) - min(window) < th.convergence and root.aggr_r > th.expand_reliability


def prune(tree: ArgumentTree, queue: set[str], th: ThresholdConfig, iteration: int) -> list[str]:
    """Top-down pass: drop the pending descendants of every decisive non-leaf node.

    Returns the ids removed from `queue` (their status becomes ``pruned``).
    """
    removed: list[str] = []
    for node in tree.pre_order():
        if not node.children or not decisive_flag(node, th):
            continue
        for d in tree.descendants(node):
            if d.id in queue:
                queue.discard(d.id)
                d.status = "pruned"
                d.pruned_at, d.pruned_by = iteration, node.id
                removed.append(d.id)
    return removed


# --------------------------------------------------------------------------- aggregation


def rule_scores(
    children: list[Node], total_children: int, cfg: RuleAggConfig
) -> tuple[float, float]:
    """(veracity, reliability) of an internal node from its processed children.

    Veracity is the reliability- and importance-weighted mean of child veracity;
    reliability is the importance-weighted mean child reliability, scaled by coverage
    (share of children evaluated) and consistency (agreement of child veracity).
    """
    ws = [c.weight for c in children]
    vs = [c.aggr_v for c in children]
    rs = [c.aggr_r for c in children]
    if None in vs or None in rs or not children:
        raise ValueError("rule aggregation needs scored children")
    mix = [w * max(r, 1e-6) for w, r in zip(ws, rs, strict=True)]  # type: ignore[type-var]
    v = sum(m * x for m, x in zip(mix, vs, strict=True)) / sum(mix)  # type: ignore[operator]
    w_sum = sum(ws)
    base_r = sum(w * r for w, r in zip(ws, rs, strict=True)) / w_sum  # type: ignore[operator]
    mean_v = sum(w * x for w, x in zip(ws, vs, strict=True)) / w_sum  # type: ignore[operator]
    spread = math.sqrt(sum(w * (x - mean_v) ** 2 for w, x in zip(ws, vs, strict=True)) / w_sum)  # type: ignore[operator]
    share = len(children) / max(total_children, len(children))
    coverage = cfg.coverage_floor + (1.0 - cfg.coverage_floor) * share
    consistency = min(1.0, max(0.0, 1.0 - cfg.consistency_scale * spread))
    return _clip(v), _clip(base_r * coverage * consistency)


def live_children(tree: ArgumentTree, node: Node) -> int:
    """Children that count towards coverage: all but the pruned ones."""
    return sum(1 for c in tree.children(node) if c.status != "pruned")


def aggregate_rules(tree: ArgumentTree, cfg: RuleAggConfig) -> None:
    """Bottom-up: leaves and unexpanded nodes keep their own scores; internal nodes take
    `rule_scores` of their processed children (their own scores while none is)."""
    for node in tree.post_order():
        if node.self_v is None or node.self_r is None:
            continue
        kids = tree.processed_children(node)
        if not kids:
            node.aggr_v, node.aggr_r = node.self_v, node.self_r
            continue
        node.aggr_v, node.aggr_r = rule_scores(kids, live_children(tree, node), cfg)


def _clip(x: float) -> float:
    return min(1.0, max(0.0, float(x)))
