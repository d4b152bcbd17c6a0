"""The numeric inputs of ToE's three networks.

- `claim_vector` — the evaluation network's 12-dim claim features: category (6),
  locale (3), recent event, historical fact, factual statement.
- `state_vector` — the policy's 29-dim state: the claim attributes (6 + 3 + 5 flags),
  search progress (share of the claim's step budget spent, share of this node's
  searches that found new documents), evidence status
  (items, stance shares, searches per source, official source found) and the node's
  current reliability (the belief state r_{n,t}).
- `evidence_matrix` — the padded 20×8 evidence matrix with its mask: stance (3, one-hot),
  source type, relevance, credibility, official, primary.
- `node_vector` — the aggregation network's 16-dim node features.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from veracity.methods.toe.config import ACTIONS, SEARCH_ACTIONS
from veracity.methods.toe.schema import (
    CATEGORIES,
    CLAIM_FLAGS,
    LOCALES,
    STANCES,
    ClaimFeatures,
    EvidenceItem,
)

CLAIM_DIM = 12
STATE_DIM = 29
EVIDENCE_DIM = 8
NODE_DIM = 16
N_ACTIONS = len(ACTIONS)


def _one_hot(value: str, options: tuple[str, ...]) -> list[float]:
    return [1.0 if value == o else 0.0 for o in options]


def claim_vector(f: ClaimFeatures) -> list[float]:
    """The 12-dim claim features of the evaluation network."""
    out = _one_hot(f.category, CATEGORIES) + _one_hot(f.locale, LOCALES)
    out += [float(f.recent_event), float(f.historical_fact), float(f.factual_statement)]
    assert len(out) == CLAIM_DIM
    return out


@dataclass
class SearchProgress:
    """What the retrieval agent has done for one node so far (`done_before`: the claim's
    search steps spent on earlier nodes, which the claim's step budget counts too)."""

    max_steps: int
    max_docs: int
    done_before: int = 0
    steps: int = 0
    fruitful: int = 0  # searches that brought at least one new document
    per_action: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SEARCH_ACTIONS, 0))

    def record(self, action: str, new_docs: int) -> None:
        self.steps += 1
        self.fruitful += int(new_docs > 0)
        self.per_action[action] += 1


def state_vector(
    f: ClaimFeatures, progress: SearchProgress, evidence: list[EvidenceItem], reliability: float
) -> list[float]:
    """The policy's 29-dim state s_t."""
    out = _one_hot(f.category, CATEGORIES) + _one_hot(f.locale, LOCALES)
    out += [float(getattr(f, name)) for name in CLAIM_FLAGS]
    steps = max(progress.steps, 1)
    spent = (progress.done_before + progress.steps) / progress.max_steps  # of the budget
    out += [spent, progress.fruitful / steps]
    n = len(evidence)
    out.append(min(n, progress.max_docs) / progress.max_docs)
    out += [sum(e.stance == s for e in evidence) / max(n, 1) for s in STANCES]
    out += [progress.per_action[a] / progress.max_steps for a in SEARCH_ACTIONS]
    out.append(float(any(e.official for e in evidence)))
    out.append(float(reliability))
    assert len(out) == STATE_DIM
    return out


def evidence_row(e: EvidenceItem) -> list[float]:
    """One row of the evidence matrix."""
    source_type = SEARCH_ACTIONS.index(e.action) / (len(SEARCH_ACTIONS) - 1)
    return [
        *_one_hot(e.stance, STANCES),
        source_type,
        e.relevance,
        e.credibility,
        float(e.official),
        float(e.primary),
    ]


def evidence_matrix(
    evidence: list[EvidenceItem], rows: int = 20
) -> tuple[list[list[float]], list[bool]]:
    """The padded evidence matrix (`rows` × 8) and its occupancy mask.

    Items beyond `rows` are dropped, most relevant kept first.
    """
    kept = sorted(evidence, key=lambda e: -e.relevance)[:rows]
    matrix = [evidence_row(e) for e in kept]
    mask = [True] * len(matrix)
    while len(matrix) < rows:
        matrix.append([0.0] * EVIDENCE_DIM)
        mask.append(False)
    return matrix, mask


def node_vector(
    *,
    self_v: float,
    self_r: float,
    aggr_v: float,
    aggr_r: float,
    weight: float,
    depth: int,
    max_depth: int,
    evidence: list[EvidenceItem],
    processed_children: int,
    is_root: bool,
) -> list[float]:
    """The aggregation network's 16-dim node features."""
    n = len(evidence)
    shares = [sum(e.stance == s for e in evidence) / max(n, 1) for s in STANCES]
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0  # noqa: E731
    out = [
        self_v,
        self_r,
        aggr_v,
        aggr_r,
        weight,
        depth / max(max_depth, 1),
        min(n, 10) / 10,
        *shares,
        float(any(e.official for e in evidence)),
        mean([e.credibility for e in evidence]),
        mean([e.relevance for e in evidence]),
        min(processed_children, 4) / 4,
        float(is_root),
        abs(self_v - 0.5) * 2,
    ]
    assert len(out) == NODE_DIM
    return out
