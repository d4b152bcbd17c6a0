"""The RL-driven retrieval agent (Section III-B): one search episode per tree node.

At each step the agent builds the 29-dim state, picks one of the eight actions (the
warm-up heuristic or the policy; actions without a source are masked), has the LLM write
the action's query, searches the action's source (at most 3 results), reads the new
documents into evidence objects, re-scores the node (the belief state) and records the
step's reward (Eq. 5). The episode ends on `stop`, at 10 documents, or when the step
budget is spent: 5 search steps per claim, shared by all the claim's nodes (Table I), or
per node with ``search_steps_per: node``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from veracity.core import context
from veracity.core.events import Decision, Fault
from veracity.core.types import Document
from veracity.methods.toe.agents import ToEAgents
from veracity.methods.toe.config import ACTIONS, SEARCH_ACTIONS, ToEConfig
from veracity.methods.toe.evidence import EvidenceEvaluator
from veracity.methods.toe.features import SearchProgress, state_vector
from veracity.methods.toe.schema import ClaimFeatures, EvidenceItem
from veracity.methods.toe.trajectory import Step, Trajectory, heuristic_action, step_reward
from veracity.methods.toe.tree import Node
from veracity.retrieval.base import Query, Source, SourceAuthError, SourceError
from veracity.retrieval.guards import guard_query

PolicyMode = Literal["heuristic", "policy"]
# (veracity, reliability, scorer name) of a node given its evidence so far
ScoreFn = Callable[[list[EvidenceItem]], Awaitable[tuple[float, float, str]]]
PRIOR = (0.5, 0.0)  # belief before any evidence: undecided, no reliability


@dataclass
class StepBudget:
    """Search steps left: one per claim, shared by its nodes (or one per node episode)."""

    limit: int
    used: int = 0

    @property
    def left(self) -> int:
        return self.limit - self.used

    def copy(self) -> StepBudget:
        """The same budget for an extra rollout, which does not spend the claim's."""
        return StepBudget(self.limit, self.used)


@dataclass
class NodeSearch:
    """What one episode produced."""

    evidence: list[EvidenceItem]
    documents: dict[str, Document]
    trajectory: Trajectory
    veracity: float
    reliability: float
    scorer: str
    belief: list[dict[str, Any]] = field(default_factory=list)  # per step, for trace/training
    actions: list[str] = field(default_factory=list)
    reached_high: bool = False  # reliability has reached τ_h in this episode (b_rel paid)


def action_mask(allowed: set[str]) -> list[bool]:
    """Mask over the eight actions: a search action needs a source; stop is always open."""
    return [a in allowed for a in SEARCH_ACTIONS] + [True]


class RetrievalAgent:
    """Runs search episodes over the sources mapped to actions.

    Args:
        agents: the LLM agents (query writing).
        evaluator: the evidence evaluation agent.
        sources: action -> source; actions missing here are masked.
        policy: the `RetrievalPolicy` (π_θ); it acts unless the warm-up heuristic does.
        cfg: the method config.
    """

    def __init__(
        self,
        agents: ToEAgents,
        evaluator: EvidenceEvaluator,
        sources: dict[str, Source],
        policy: Any,
        cfg: ToEConfig,
    ):
        self.agents = agents
        self.evaluator = evaluator
        self.sources = sources
        self.policy = policy
        self.cfg = cfg
        self.allowed = set(sources)
        self.mask = action_mask(self.allowed)

    async def search(
        self,
        node: Node,
        features: ClaimFeatures,
        score: ScoreFn,
        mode: PolicyMode,
        budget: StepBudget | None = None,
        rollout: int = 0,
    ) -> NodeSearch:
        """One episode for `node` within `budget` (default: a fresh one of
        ``max_search_steps``); `rollout` numbers GRPO's extra rollouts in the trace."""
        cfg = self.cfg
        if budget is None:
            budget = StepBudget(cfg.max_search_steps)
        progress = SearchProgress(cfg.max_search_steps, cfg.max_docs_per_node, budget.used)
        trajectory = Trajectory(heuristic=mode == "heuristic", claim=node.claim)
        result = NodeSearch([], {}, trajectory, *PRIOR, "none")
        queries: list[str] = []
        scored = False
        while budget.left > 0 and len(result.documents) < cfg.max_docs_per_node:
            state = state_vector(features, progress, result.evidence, result.reliability)
            idx, logp = self._choose(mode, features, progress, state, node.id, rollout)
            action = ACTIONS[idx]
            if action == "stop":
                result.trajectory.steps.append(Step(state, self.mask, idx, logp, 0.0))
                break
            budget.used += 1
            query = await self.agents.query(action, node.claim, features, queries, node.id)
            queries.append(query)
            reward, new = await self._step(action, query, node, result, score)
            result.trajectory.steps.append(Step(state, self.mask, idx, logp, reward))
            progress.record(action, new)
            scored = True
        if not scored:  # stopped (or out of steps) before any search: score no evidence
            result.veracity, result.reliability, result.scorer = await score(result.evidence)
            result.belief.append(
                {"step": 0, "n_evidence": 0, "veracity": result.veracity,
                 "reliability": result.reliability, "scorer": result.scorer}
            )  # fmt: skip
        return result

    async def _step(
        self, action: str, query: str, node: Node, result: NodeSearch, score: ScoreFn
    ) -> tuple[float, int]:
        """Search, read the new documents, re-score the node; (reward, new documents)."""
        cfg = self.cfg
        found = await self._search(action, query, node.id)
        room = cfg.max_docs_per_node - len(result.documents)
        new = [d for d in found if d.id not in result.documents][:room]
        result.documents.update((d.id, d) for d in new)
        items = await self.evaluator.evaluate(node.claim, new, action, node.id)
        result.evidence.extend(items)
        v, r, result.scorer = await score(result.evidence)
        reward, terms = step_reward(
            cfg.reward,
            reliability=(result.reliability, r),
            veracity=(result.veracity, v),
            new_relevance=[i.relevance for i in items],
            new_official=any(i.official for i in items),
            reached_high=result.reached_high,
        )
        result.reached_high = result.reached_high or r >= cfg.reward.high_confidence
        result.actions.append(action)
        result.belief.append(
            {
                "step": len(result.actions), "action": action, "query": query,
                "new_docs": len(new), "n_evidence": len(result.evidence), "veracity": v,
                "reliability": r, "scorer": result.scorer, "reward": round(reward, 4),
                "terms": terms,
            }
        )  # fmt: skip
        result.veracity, result.reliability = v, r
        return reward, len(new)

    def _choose(
        self,
        mode: PolicyMode,
        features: ClaimFeatures,
        progress: SearchProgress,
        state: list[float],
        node_id: str,
        rollout: int,
    ) -> tuple[int, float]:
        """The action and its log-probability under the policy that chose it: the
        heuristic is deterministic (log 1 = 0); its steps never enter GRPO's ratio."""
        probs = None
        if mode == "heuristic":
            action = heuristic_action(
                features.category, features.recent_event, progress.per_action, self.allowed
            )
            idx, logp = ACTIONS.index(action), 0.0
        else:
            idx, logp, probs = self.policy.act(state, self.mask, greedy=self.cfg.greedy)
        data: dict[str, Any] = {
            "node": node_id, "step": progress.steps + 1, "action": ACTIONS[idx], "mode": mode,
        }  # fmt: skip
        if rollout:
            data["rollout"] = rollout  # an extra GRPO rollout: not the node's evidence
        shares = {} if probs is None else {"probabilities": dict(zip(ACTIONS, probs, strict=True))}
        context.current().emit(Decision(name="toe:policy", **shares, detail=data))
        return idx, logp

    async def _search(self, action: str, text: str, node_id: str) -> list[Document]:
        """Search the action's source; a failure (after the source's retries) is recorded
        and counts as a search that found nothing."""
        query = guard_query(Query(text=text, top_k=self.cfg.results_per_action))
        try:
            return await self.sources[action].search(query)
        except SourceAuthError:
            raise
        except SourceError as exc:
            context.current().emit(
                Fault(
                    name=f"toe:{action}",
                    error=f"{type(exc).__name__}: {exc}",
                    detail={"node": node_id},
                )
            )
            return []
