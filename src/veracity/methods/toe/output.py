"""What a ToE check leaves behind: the per-iteration ``tree_node`` trace events and the
verdict (label from v_0, the rationale, cited evidence, the final tree in metadata)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from veracity.core.context import CheckContext
from veracity.core.events import TreeNode
from veracity.core.labels import LabelSpace
from veracity.core.types import Document, Evidence, Stance
from veracity.evidence.quotes import verify_evidence
from veracity.methods.toe.config import ToEConfig
from veracity.methods.toe.tree import ArgumentTree, Node, decisive_flag, expansion_flag, priority

_STANCE = {"supports": Stance.SUPPORTS, "refutes": Stance.REFUTES, "neutral": Stance.NEUTRAL}


def _evidence_brief(node: Node) -> list[dict[str, Any]]:
    return [
        {
            "doc_id": e.doc_id, "title": e.title, "url": e.url, "source": e.source,
            "action": e.action, "stance": e.stance, "official": e.official,
            "primary": e.primary, "relevance": e.relevance, "credibility": e.credibility,
            "key_point": e.key_point,
        }
        for e in node.evidence
    ]  # fmt: skip


def emit_iteration(
    ctx: CheckContext,
    tree: ArgumentTree,
    cfg: ToEConfig,
    iteration: int,
    evaluated: str,
    pruned: list[str],
) -> None:
    """One ``tree_node`` event per node for this iteration (evidence with the node that
    was evaluated in it)."""
    th = cfg.thresholds
    for node in tree.pre_order():
        data: dict[str, Any] = {  # ToE's own figures, beside the node's declared fields
            "self_veracity": node.self_v,
            "self_reliability": node.self_r,
            "weight": round(node.weight, 4),
            "dimension": node.dimension,
            "depth": node.depth,
            "expand": expansion_flag(
                node, th, first_root_eval=node.parent is None and node.evaluated_at == 1
            ),
            "decisive": decisive_flag(node, th),
            "scorer": node.scorer,
            "n_evidence": len(node.evidence),
            "evaluated_now": node.id == evaluated,
            "pruned_now": node.id in pruned,
        }
        if node.status == "pending":
            data["priority"] = round(
                priority(tree, node, cfg.priority_uncertainty, cfg.priority_importance), 4
            )
        if node.pruned_by:
            data["pruned_by"] = node.pruned_by
        if node.error:
            data["error"] = node.error
        if node.id == evaluated:
            data["evidence"] = _evidence_brief(node)
        ctx.emit(
            TreeNode(
                name="toe",
                node_id=node.id,
                parent_id=node.parent,
                claim=node.claim,
                veracity=node.aggr_v,
                reliability=node.aggr_r,
                status=node.status,
                iteration=iteration,
                detail=data,
            )
        )


def cited_evidence(tree: ArgumentTree, documents: dict[str, Document]) -> list[Evidence]:
    """Evidence of every node (root first), each with its first kept statement as the
    quote, checked against its document."""
    out: list[Evidence] = []
    seen: set[tuple[str, str]] = set()
    for node in tree.pre_order():
        for e in node.evidence:
            doc = documents.get(e.doc_id)
            if doc is None or (node.id, e.doc_id) in seen:
                continue
            seen.add((node.id, e.doc_id))
            out.append(
                Evidence(
                    document=doc,
                    quote=e.statements[0] if e.statements else None,
                    stance=_STANCE[e.stance],
                    credibility=e.credibility,
                    note=f"{node.id}: {e.key_point}",
                )
            )
    return verify_evidence(out)


def rationale(tree: ArgumentTree, iterations: int, stop_reason: str) -> str:
    """A readable account: the root's scores, why the loop stopped, each sub-claim."""
    root = tree.root
    lines = [
        f"Veracity {root.aggr_v:.2f}, reliability {root.aggr_r:.2f} after {iterations} "
        f"iteration(s) ({stop_reason.replace('_', ' ')}); {len(tree)} node(s), "
        f"depth {tree.depth}."
    ]
    if root.judge_reason:
        lines.append(f"Judge on the claim's own evidence: {root.judge_reason}")
    for node in tree.pre_order():
        if node is root:
            continue
        state = node.status
        if node.aggr_v is not None and node.aggr_r is not None:
            state = f"v {node.aggr_v:.2f}, r {node.aggr_r:.2f}; {node.status}"
        indent = "  " * node.depth
        lines.append(f"{indent}- [{node.dimension}] {node.claim} ({state})")
    return "\n".join(lines)


def verdict_fields(
    tree: ArgumentTree,
    space: LabelSpace,
    documents: dict[str, Document],
    iterations: int,
    stop_reason: str,
) -> dict[str, Any]:
    """Label, score, confidence, rationale and evidence of a finished tree."""
    root = tree.root
    assert root.aggr_v is not None and root.aggr_r is not None
    return {
        "label": space.from_score(root.aggr_v),
        "score": root.aggr_v,
        "confidence": root.aggr_r,
        "rationale": rationale(tree, iterations, stop_reason),
        "evidence": cited_evidence(tree, documents),
    }


def tree_stats(tree: ArgumentTree, actions: Counter) -> dict[str, Any]:
    """Counts for reports: nodes by status, depth, actions taken, the root's category."""
    status = Counter(n.status for n in tree.nodes.values())
    features = tree.root.features
    return {
        "nodes": len(tree),
        "depth": tree.depth,
        "status_counts": dict(status),
        "actions": {a: actions[a] for a in sorted(actions)},
        "category": features.category if features else None,
    }
