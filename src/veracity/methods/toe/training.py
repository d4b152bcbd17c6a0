"""Training ToE: collect trees from labelled claims, then fit the networks.

`ToETrainer` wraps a ToE method whose parts live in one checkpoint folder. For each
claim it runs the method (the LLM judge scores every node and the rules aggregate, so
the judge's soft scores become the evaluation network's targets; the policy learns
online with GRPO as it goes), appends the claim's tree to ``records.jsonl`` and saves the
checkpoint, so an interrupted run resumes where it stopped. `fit` then trains the
evaluation network on every judge-scored evidence state (Eq. 6) and the aggregation
network on the completed trees (Eq. 7–8), and saves both with a manifest.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from veracity.core.infra import append_line, cut_torn_line
from veracity.core.types import Verdict
from veracity.methods.checkpoints import CheckpointError
from veracity.methods.toe.aggregation import TreeSample, rule_targets, train_aggregation
from veracity.methods.toe.config import ToEConfig
from veracity.methods.toe.features import claim_vector, evidence_matrix
from veracity.methods.toe.method import ToEMethod
from veracity.methods.toe.models import ToEModels
from veracity.methods.toe.networks import EvalSample, train_evaluation
from veracity.methods.toe.tree import ArgumentTree

RECORDS = "records.jsonl"
_STATS = ("iterations", "stop_reason", "nodes", "depth", "status_counts", "actions", "category")


def eval_samples(tree: ArgumentTree, cfg: ToEConfig) -> list[EvalSample]:
    """One sample per judge-scored evidence state of every node (each search step's
    evidence prefix with the judge's scores, and the final judge targets)."""
    out: list[EvalSample] = []
    for node in tree.nodes.values():
        if node.features is None:
            continue
        claim = claim_vector(node.features)
        states = [(b["n_evidence"], b["veracity"], b["reliability"]) for b in node.belief
                  if b.get("scorer") == "llm_judge"]  # fmt: skip
        if node.judge_v is not None and node.judge_r is not None and node.scorer != "llm_judge":
            states.append((len(node.evidence), node.judge_v, node.judge_r))
        for k, v, r in states:
            matrix, mask = evidence_matrix(node.evidence[:k], cfg.eval_net.max_evidence)
            out.append(EvalSample(claim, matrix, mask, float(v), float(r)))
    return out


def tree_sample(tree: ArgumentTree, gold: float, cfg: ToEConfig) -> TreeSample:
    """The tree with its root targets: y_v is the gold veracity; y_r (ours: the paper does
    not say) is how close the rule-aggregated root came to it, 1 − |y_v − v_0^rules|."""
    rules = rule_targets(tree, cfg.rules)
    v_rules = rules.get(tree.root.id, (0.5, 0.0))[0]
    return TreeSample(tree, y_v=gold, y_r=1.0 - abs(gold - v_rules))


class ToETrainer:
    """Collects trees into a checkpoint folder and fits ToE's networks on them."""

    def __init__(self, method: ToEMethod, folder: Path):
        self.method = method
        self.folder = folder
        method.collect_targets = True

    @classmethod
    def open(cls, method: ToEMethod, folder: Path, *, fresh: bool = False) -> ToETrainer:
        """Resume the checkpoint in `folder` (or start one); `fresh` refuses to reuse one.

        Raises:
            CheckpointError: `fresh` and the folder already holds a checkpoint.
        """
        cfg = method.config
        if (folder / "manifest.json").is_file():
            if fresh:
                raise CheckpointError(
                    f"{folder} already holds a checkpoint (resume, or pick another)"
                )
            method.models = ToEModels.load(cfg, folder)
        else:
            method.models = ToEModels(cfg)
        cut_torn_line(folder / RECORDS)  # a hard kill mid-write; the next record must not join it
        return cls(method, folder)

    @property
    def records_path(self) -> Path:
        return self.folder / RECORDS

    def records(self) -> list[dict[str, Any]]:
        """The collected claims (a torn last line from a hard kill is ignored; `open` cuts it)."""
        if not self.records_path.is_file():
            return []
        out = []
        for line in self.records_path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def done(self) -> set[str]:
        return {r["id"] for r in self.records()}

    def record(self, example_id: str, gold: float, verdict: Verdict, **data: Any) -> dict[str, Any]:
        """Store one claim's outcome and save the checkpoint (policy state, buffer)."""
        rec = {
            "id": example_id,
            "gold": gold,
            "label": verdict.label,
            "score": verdict.score,
            "error": verdict.error,
            "usage": verdict.usage.model_dump(),
            "tree": verdict.metadata.get("tree"),
            "stats": {
                k: verdict.metadata.get(k)
                for k in ("iterations", "stop_reason", "nodes", "depth", "actions", "category")
            },
            **data,
        }
        append_line(self.records_path, json.dumps(rec))  # one synced write
        self.method.models.save(self.folder)
        return rec

    def fit(self, manifest_data: dict[str, Any] | None = None) -> dict[str, Any]:
        """Train both networks on everything collected so far and save the checkpoint.

        Raises:
            CheckpointError: nothing usable has been collected yet.
        """
        started = time.perf_counter()
        cfg, models = self.method.config, self.method.models
        trees = [
            (ArgumentTree.from_dict(r["tree"]), r["gold"]) for r in self.records() if r.get("tree")
        ]
        if not trees:
            raise CheckpointError(f"{self.folder}: no collected trees to train on")
        metrics: dict[str, Any] = dict(models.manifest.metrics)
        samples = [s for tree, _ in trees for s in eval_samples(tree, cfg)]
        if samples:
            models.eval_optimizer, losses = train_evaluation(
                models.eval_net, samples, cfg.eval_net, models.eval_optimizer, seed=cfg.seed
            )
            models.trained["eval_net"] = True
            metrics["eval_net"] = _loss_summary(losses, len(samples))
        tree_samples = [tree_sample(tree, gold, cfg) for tree, gold in trees]
        try:
            models.agg_optimizer, losses = train_aggregation(
                models.agg_net, tree_samples, cfg.agg_net, cfg.rules, cfg.max_depth,
                models.agg_optimizer, seed=cfg.seed,
            )  # fmt: skip
            models.trained["agg_net"] = True
            metrics["agg_net"] = _loss_summary(losses, len(tree_samples))
        except ValueError as exc:  # no tree with an internal node yet
            metrics["agg_net"] = {"skipped": str(exc)}
        metrics["fit_seconds"] = round(time.perf_counter() - started, 2)
        metrics["policy"] = {
            "updates": models.policy.updates,
            "claims_seen": models.policy.claims_seen,
            "last_update": models.policy.history[-1] if models.policy.history else None,
        }
        models.save(
            self.folder,
            metrics=metrics,
            config=cfg.model_dump(mode="json"),
            seed=cfg.seed,
            data={**models.manifest.data, **(manifest_data or {}), "trees": len(trees)},
        )
        return metrics


def _loss_summary(losses: list[float], n: int) -> dict[str, Any]:
    return {"samples": n, "epochs": len(losses), "loss_first": round(losses[0], 5),
            "loss_last": round(losses[-1], 5)}  # fmt: skip
