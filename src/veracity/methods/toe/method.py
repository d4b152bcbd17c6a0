"""ToE: Tree of Evidence verification (Algorithm 1).

The claim is the root of an argument tree. Each iteration takes the pending node of
highest priority, lets the retrieval agent gather and the evidence agent read evidence
for it, scores it (the evaluation network once trained, else the LLM judge), decomposes
it into sub-claims when its reliability is low (the root always, on its first
evaluation), aggregates scores bottom-up (the aggregation network once trained, else the
rules), prunes pending descendants of decisive nodes, and stops when the root is
decisive or its veracity has converged, the queue is empty, or T_max iterations ran.
The root's veracity v_0 maps to true / uncertain / false by the label space's cut-offs.

The trace holds one ``tree_node`` event per node per iteration (scores, status, flags,
priority; the evidence of the node evaluated in that iteration), every policy decision,
every search and LLM call; the verdict's metadata holds the final tree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from veracity.core import context
from veracity.core.context import CheckContext
from veracity.core.errors import MethodConfigError, StructuredOutputError
from veracity.core.events import Fault, Note, Stage
from veracity.core.types import CheckInput, Claim, Document, Verdict
from veracity.methods.base import BaseMethod
from veracity.methods.toe.agents import ToEAgents
from veracity.methods.toe.config import SEARCH_ACTIONS, ToEConfig, missing_sources_message
from veracity.methods.toe.evidence import EvidenceEvaluator
from veracity.methods.toe.output import emit_iteration, tree_stats, verdict_fields
from veracity.methods.toe.retrieval import NodeSearch, PolicyMode, RetrievalAgent, StepBudget
from veracity.methods.toe.schema import ClaimFeatures, EvidenceItem
from veracity.methods.toe.tree import (
    ArgumentTree,
    Node,
    aggregate_rules,
    convergence_flag,
    decisive_flag,
    expansion_flag,
    priority,
    prune,
)
from veracity.retrieval.base import Source
from veracity.retrieval.defaults import SourceNeed


def resolve_actions(
    cfg: ToEConfig, sources: Mapping[str, Source]
) -> tuple[dict[str, Source], dict[str, str]]:
    """Action -> source for the usable actions, and action -> why for the masked ones."""
    usable: dict[str, Source] = {}
    masked: dict[str, str] = {}
    for action in SEARCH_ACTIONS:
        name = cfg.action_sources.get(action)
        if action in cfg.masked_actions:
            masked[action] = "masked by the config (ablation)"
        elif name is None:
            masked[action] = "no source mapped to this action"
        elif name not in sources:
            masked[action] = f"source {name!r} is not configured"
        else:
            usable[action] = sources[name]
    return usable, masked


@dataclass
class _Check:
    """Per-check state (checks may run concurrently on one method object)."""

    claim: Claim
    tree: ArgumentTree
    mode: PolicyMode
    budget: StepBudget | None = None  # the claim's search steps (None: per node)
    documents: dict[str, Document] = field(default_factory=dict)
    actions: Counter = field(default_factory=Counter)
    history: list[float] = field(default_factory=list)
    updates: list[dict[str, float]] = field(default_factory=list)


class ToEMethod(BaseMethod):
    """Tree of Evidence (Wang et al., 2026); see README.md in this folder."""

    name = "toe"
    config_class = ToEConfig
    default_labels = "true_uncertain_false"
    extra_parts = ("models",)
    input_kinds = ("claim",)
    description = (
        "argument tree: RL-driven multi-source retrieval, evidence evaluation, "
        "bottom-up aggregation (ToE)"
    )
    config: ToEConfig

    def setup(self) -> None:
        super().setup()
        cfg = self.config
        if self.label_space.cutoffs is None:
            raise MethodConfigError(
                f"toe maps its veracity score to labels by cut-offs; {self.label_space.name} "
                "has none (use true_uncertain_false)"
            )
        self.action_sources, self.masked = resolve_actions(cfg, self.sources)
        if not self.action_sources:
            raise MethodConfigError(missing_sources_message(cfg))
        given = self.parts.extras.get("models")  # a test's trained stand-ins
        self.models = given if given is not None else self._load_models()
        self.scorer = self._pick("scorer", cfg.scorer, "eval_net", "network", "llm_judge")
        self.aggregator = self._pick("aggregator", cfg.aggregator, "agg_net", "network", "rules")
        self.collect_targets = False  # training: always ask the judge for soft targets

    @classmethod
    def source_needs(cls, config: Mapping[str, Any]) -> list[SourceNeed]:
        """The web source (web and counter-evidence actions) and Wikipedia (the wiki
        action, left masked where it cannot be had); the other actions keep their
        sources only when the run names them."""
        cfg = cls.parse_config(config)
        if not isinstance(cfg, ToEConfig):
            return []
        needs: dict[str, SourceNeed] = {}
        for name, actions in cfg.sources_by_name().items():
            if {"web", "counter"} & set(actions):
                needs[name] = SourceNeed(name, purpose="web and counter-evidence search")
            elif "wiki" in actions:
                needs[name] = SourceNeed(
                    name, "encyclopedia", off={}, purpose="the Wikipedia action"
                )
        return list(needs.values())

    def _load_models(self) -> Any:
        from veracity.methods.toe.models import models_for_run

        root = self.home.checkpoints if self.home is not None else None
        return models_for_run(self.config, root)

    def _pick(self, what: str, wanted: str, part: str, trained: str, fallback: str) -> str:
        ready = bool(self.models.trained.get(part))
        if wanted == "auto":
            return trained if ready else fallback
        if wanted == trained and not ready:
            raise MethodConfigError(
                f"toe: {what} {trained!r} needs a checkpoint with a trained {part} "
                f"(checkpoint: {self.config.checkpoint!r})"
            )
        return wanted

    def policy_mode(self) -> PolicyMode:
        """Heuristic during warm-up (or when frozen with a policy never updated)."""
        policy = self.models.policy
        if self.config.freeze_policy:
            return "policy" if policy.updates > 0 else "heuristic"
        return "heuristic" if policy.warming_up else "policy"

    # ----------------------------------------------------------------- Algorithm 1

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        if not isinstance(item, Claim):
            raise TypeError(f"{self.name} checks claims, not a {item.kind}")
        cfg, th = self.config, self.config.thresholds
        budget = StepBudget(cfg.max_search_steps) if cfg.search_steps_per == "claim" else None
        run = _Check(item, ArgumentTree(item.text), self.policy_mode(), budget)
        tree, root = run.tree, run.tree.root
        ctx.emit(
            Stage(
                name="toe",
                step="setup",
                iterations=cfg.max_iterations,
                detail={
                    "scorer": self.scorer,
                    "aggregator": self.aggregator,
                    "policy": run.mode,
                    "actions": {a: s.name for a, s in self.action_sources.items()},
                    "masked": self.masked,
                },
            )
        )
        queue, stop_reason, t = {root.id}, "max_iterations", 0
        for t in range(1, cfg.max_iterations + 1):
            node = self._select(tree, queue)
            queue.discard(node.id)
            if await self._evaluate(node, run, t):
                first = node is root and t == 1
                if expansion_flag(node, th, first_root_eval=first) and node.depth < cfg.max_depth:
                    queue.update(k.id for k in await self._expand(node, tree))
            self._aggregate(tree)
            pruned = prune(tree, queue, th, t)
            if root.aggr_v is not None:
                run.history.append(root.aggr_v)
            stop = self._stop_reason(run, queue, t)
            if stop is not None:
                stop_reason = stop
                for i in queue:
                    tree[i].status = "unvisited"
            emit_iteration(ctx, tree, cfg, t, node.id, pruned)
            if stop is not None:
                break
        if not self.config.freeze_policy:
            self.models.policy.claims_seen += 1
        return self._verdict(run, t, stop_reason)

    def _select(self, tree: ArgumentTree, queue: set[str]) -> Node:
        """argmax of Priority(n) over the queue (ties: the earliest created node)."""
        cfg = self.config

        def key(n: Node) -> tuple[float, int]:
            p = priority(tree, n, cfg.priority_uncertainty, cfg.priority_importance)
            return p, -int(n.id[1:])

        return max((tree[i] for i in queue), key=key)

    def _stop_reason(self, run: _Check, queue: set[str], t: int) -> str | None:
        """Why the loop ends after iteration `t` (φ_0, γ, empty queue, T_max), or None."""
        th, root = self.config.thresholds, run.tree.root
        if decisive_flag(root, th):
            return "decisive"
        if convergence_flag(run.history, root, th):
            return "converged"
        if not queue:
            return "queue_empty"
        return "max_iterations" if t >= self.config.max_iterations else None

    async def _evaluate(self, node: Node, run: _Check, t: int) -> bool:
        """Gather evidence for `node` and score it; False when a sub-claim's evaluation
        failed (recorded). A failure at the root is a fault of the whole check."""
        agents = ToEAgents(self.llm, self.config)
        try:
            context_text = run.claim.context if node.parent is None else None
            features = await agents.features(node.claim, context_text, node.id)
            node.features = features
            search = await self._search(node, features, agents, run)
            if self.collect_targets and search.scorer != "llm_judge":
                await self._judge(node, search.evidence, agents)
        except StructuredOutputError as exc:
            if node.parent is None:
                raise
            node.status, node.error = "failed", f"{type(exc).__name__}: {exc}"
            context.current().emit(
                Fault(name="toe:node", error=node.error, detail={"node": node.id})
            )
            return False
        node.evidence, node.belief, node.scorer = search.evidence, search.belief, search.scorer
        node.self_v, node.self_r = search.veracity, search.reliability
        node.status, node.evaluated_at = "evaluated", t
        run.documents.update(search.documents)
        run.actions.update(search.actions)
        return True

    async def _search(
        self, node: Node, features: ClaimFeatures, agents: ToEAgents, run: _Check
    ) -> NodeSearch:
        """The node's retrieval episode. While π_θ learns (after the warm-up, not frozen),
        G − 1 extra rollouts of the same node come first, from the same step budget
        without spending it; with the node's own episode (the last, whose evidence the
        tree keeps) they form one GRPO group."""
        retrieval = RetrievalAgent(
            agents,
            EvidenceEvaluator(self.llm, self.config),
            self.action_sources,
            self.models.policy,
            self.config,
        )
        score = self._scorer(node, features, agents)
        learning = not self.config.freeze_policy and run.mode == "policy"
        extra = []
        for k in range(1, self.config.grpo.group_size if learning else 1):
            budget = run.budget.copy() if run.budget is not None else None
            extra.append(await retrieval.search(node, features, score, run.mode, budget, k))
        search = await retrieval.search(node, features, score, run.mode, run.budget)
        if learning:
            group = [s.trajectory for s in extra] + [search.trajectory]
            metrics = self.models.policy.learn(group)
            if metrics is not None:
                run.updates.append(metrics)
                context.current().emit(
                    Note(name="toe:grpo_update", detail={**metrics, "node": node.id})
                )
        return search

    def _scorer(self, node: Node, features: ClaimFeatures, agents: ToEAgents):
        async def score(evidence: list[EvidenceItem]) -> tuple[float, float, str]:
            if self.scorer == "network":
                v, r = self.models.score(features, evidence)
                return v, r, "network"
            judged = await self._judge(node, evidence, agents)
            return judged[0], judged[1], "llm_judge"

        return score

    async def _judge(
        self, node: Node, evidence: list[EvidenceItem], agents: ToEAgents
    ) -> tuple[float, float]:
        scores = await agents.judge(node.claim, evidence, node.id)
        v, r = scores.veracity / 100, scores.reliability / 100
        node.judge_v, node.judge_r, node.judge_reason = v, r, scores.reason
        return v, r

    async def _expand(self, node: Node, tree: ArgumentTree) -> list[Node]:
        known = "; ".join(e.key_point for e in node.evidence[:3])
        try:
            subs = await ToEAgents(self.llm, self.config).decompose(node.claim, known, node.id)
        except StructuredOutputError as exc:
            node.expansion_error = f"{type(exc).__name__}: {exc}"
            context.current().emit(
                Fault(name="toe:decompose", error=node.expansion_error, detail={"node": node.id})
            )
            return []
        kids = tree.add_children(node.id, subs)
        subclaims = [
            {"id": k.id, "claim": k.claim, "dimension": k.dimension, "weight": k.weight}
            for k in kids
        ]
        context.current().emit(
            Note(name="toe:decompose", detail={"node": node.id, "subclaims": subclaims})
        )
        return kids

    def _aggregate(self, tree: ArgumentTree) -> None:
        if self.aggregator == "network":
            from veracity.methods.toe.aggregation import aggregate_network

            aggregate_network(tree, self.models.agg_net, self.config.max_depth)
        else:
            aggregate_rules(tree, self.config.rules)

    def _verdict(self, run: _Check, iterations: int, stop_reason: str) -> Verdict:
        tree = run.tree
        fields = verdict_fields(tree, self.label_space, run.documents, iterations, stop_reason)
        policy = self.models.policy
        metadata = {
            "iterations": iterations,
            "stop_reason": stop_reason,
            "root_history": [round(v, 4) for v in run.history],
            **tree_stats(tree, run.actions),
            "masked_actions": self.masked,
            "scorer": self.scorer,
            "aggregator": self.aggregator,
            "policy": {
                "mode": run.mode,
                "frozen": self.config.freeze_policy,
                "claims_seen": policy.claims_seen,
                "updates": policy.updates,
                "updates_this_check": run.updates,
            },
            "checkpoint": self.config.checkpoint,
            "tree": tree.to_dict(),
        }
        return self.verdict(**fields, metadata=metadata)
