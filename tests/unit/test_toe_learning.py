"""ToE's trainable parts: the evaluation and aggregation networks learn synthetic targets,
GRPO converges on a toy task, action masking, the reward of Eq. 5, checkpoints."""

from __future__ import annotations

import random

import pytest
import torch

from veracity.methods.checkpoints import CheckpointError, read_manifest
from veracity.methods.toe.aggregation import (
    TreeSample,
    aggregate_network,
    rule_targets,
    train_aggregation,
)
from veracity.methods.toe.config import (
    ACTIONS,
    AggNetConfig,
    EvalNetConfig,
    GRPOConfig,
    RewardConfig,
    RuleAggConfig,
    ToEConfig,
)
from veracity.methods.toe.features import (
    STATE_DIM,
    SearchProgress,
    claim_vector,
    evidence_matrix,
    state_vector,
)
from veracity.methods.toe.models import ToEModels
from veracity.methods.toe.networks import EvalSample, EvaluationNet, train_evaluation
from veracity.methods.toe.policy import RetrievalPolicy
from veracity.methods.toe.retrieval import action_mask
from veracity.methods.toe.schema import ClaimFeatures, EvidenceItem, SubClaim
from veracity.methods.toe.trajectory import (
    Step,
    Trajectory,
    group_advantages,
    heuristic_action,
    step_reward,
)
from veracity.methods.toe.tree import ArgumentTree


def features(category: str = "political") -> ClaimFeatures:
    return ClaimFeatures(
        category=category, locale="national", recent_event=True, historical_fact=False,
        factual_statement=True, opinion=False, prediction=False,
        background_query="b q", supporting_query="s q", counter_query="c q",
    )  # fmt: skip


def item(stance: str, relevance: float = 0.9, credibility: float = 0.8, official=False):
    return EvidenceItem(
        doc_id=f"d{random.random()}", source="s", action="web", stance=stance,
        official=official, primary=True, relevance=relevance, credibility=credibility,
        key_point="k", statements=["x"], verified=[True],
    )  # fmt: skip


# --------------------------------------------------------------------------- features


def test_feature_vectors_have_the_papers_shapes():
    f = features()
    assert len(claim_vector(f)) == 12
    progress = SearchProgress(max_steps=5, max_docs=10)
    progress.record("web", 2)
    progress.record("factcheck", 0)
    ev = [item("supports"), item("refutes", official=True)]
    state = state_vector(f, progress, ev, reliability=0.4)
    assert len(state) == STATE_DIM == 29
    assert state[14:16] == [2 / 5, 1 / 2]  # searches made, share that found documents
    assert state[-2:] == [1.0, 0.4]  # official source found, current reliability
    matrix, mask = evidence_matrix(ev * 15)
    assert len(matrix) == 20 and all(len(row) == 8 for row in matrix)
    assert mask == [True] * 20  # 30 items: the 20 most relevant kept
    matrix, mask = evidence_matrix(ev)
    assert mask == [True, True] + [False] * 18
    assert matrix[0][:3] == [1.0, 0.0, 0.0] and matrix[1][:3] == [0.0, 0.0, 1.0]


# --------------------------------------------------------------------------- networks


def synthetic_eval_samples(n: int, seed: int = 0) -> list[EvalSample]:
    """Targets follow the evidence: veracity = share of supporting among stanced items,
    reliability = how many stanced items there are (up to 4)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(0, 6)
        ev = [item(rng.choice(["supports", "refutes", "neutral"])) for _ in range(k)]
        sup = sum(e.stance == "supports" for e in ev)
        ref = sum(e.stance == "refutes" for e in ev)
        v = 0.5 if sup + ref == 0 else sup / (sup + ref)
        r = min(sup + ref, 4) / 4
        matrix, mask = evidence_matrix(ev)
        out.append(EvalSample(claim_vector(features()), matrix, mask, v, r))
    return out


def test_evaluation_network_learns_a_synthetic_target():
    torch.manual_seed(0)
    net = EvaluationNet(dim=32, heads=4)
    samples = synthetic_eval_samples(128)
    cfg = EvalNetConfig(epochs=40, dim=32, lr=3e-3)
    _, losses = train_evaluation(net, samples, cfg, seed=0)
    # BCE on soft targets cannot reach 0: compare with the targets' own entropy
    floor = sum(_entropy(s.veracity) + _entropy(s.reliability) for s in samples) / len(samples)
    assert losses[-1] < losses[0]
    assert losses[-1] - floor < 0.05
    with torch.no_grad():
        s = samples[:64]
        v, _ = net(
            torch.tensor([x.claim for x in s]),
            torch.tensor([x.evidence for x in s]),
            torch.tensor([x.mask for x in s]),
        )
    err = (torch.sigmoid(v) - torch.tensor([x.veracity for x in s])).abs().mean()
    assert float(err) < 0.1


def _entropy(p: float) -> float:
    import math

    p = min(max(p, 1e-6), 1 - 1e-6)
    return -(p * math.log(p) + (1 - p) * math.log(1 - p))


def test_evaluation_network_handles_empty_tracks_and_empty_evidence():
    net = EvaluationNet(dim=16, heads=2)
    matrix, mask = evidence_matrix([])
    v, r = net(torch.zeros(1, 12), torch.tensor([matrix]), torch.tensor([mask]))
    assert torch.isfinite(v).all() and torch.isfinite(r).all()


def synthetic_tree(rng: random.Random) -> TreeSample:
    tree = ArgumentTree("claim")
    root = tree.root
    root.self_v, root.self_r = 0.5, rng.uniform(0.1, 0.6)
    k = rng.randint(2, 4)
    kids = tree.add_children(
        root.id,
        [SubClaim(claim=f"part {i}", dimension="core event", weight=1 / k) for i in range(k)],
    )
    for kid in kids:
        kid.self_v, kid.self_r = rng.random(), rng.uniform(0.3, 1.0)
        kid.status = "evaluated"
    # the gold veracity: the reliability-weighted mean of the children (a rule to learn)
    y_v = sum(c.self_v * c.self_r for c in kids) / sum(c.self_r for c in kids)
    return TreeSample(tree, y_v=y_v, y_r=0.8)


def test_aggregation_network_learns_a_synthetic_target():
    torch.manual_seed(0)
    rng = random.Random(1)
    samples = [synthetic_tree(rng) for _ in range(64)]
    from veracity.methods.toe.networks import AggregationNet

    net = AggregationNet(dim=32, heads=4)
    cfg = AggNetConfig(dim=32, lr=3e-3, epochs=30)
    _, losses = train_aggregation(net, samples, cfg, RuleAggConfig(), max_depth=5, seed=0)
    assert losses[-1] < losses[0]
    floor = sum(_entropy(s.y_v) + _entropy(s.y_r) for s in samples) / len(samples)
    assert losses[-1] - floor < 0.05
    test = synthetic_tree(random.Random(99))
    aggregate_network(test.tree, net, max_depth=5)
    assert test.tree.root.aggr_v == pytest.approx(test.y_v, abs=0.12)
    # leaves keep their own scores
    kid = test.tree.children(test.tree.root)[0]
    assert (kid.aggr_v, kid.aggr_r) == (kid.self_v, kid.self_r)


def test_rule_targets_do_not_touch_the_tree():
    sample = synthetic_tree(random.Random(3))
    targets = rule_targets(sample.tree, RuleAggConfig())
    assert sample.tree.root.aggr_v is None
    assert set(targets) == set(sample.tree.nodes)


def test_aggregation_training_needs_internal_nodes():
    tree = ArgumentTree("c")
    tree.root.self_v = tree.root.self_r = 0.5
    from veracity.methods.toe.networks import AggregationNet

    with pytest.raises(ValueError, match="internal node"):
        train_aggregation(
            AggregationNet(16, 2), [TreeSample(tree, 1.0, 1.0)], AggNetConfig(), RuleAggConfig(), 5
        )


# --------------------------------------------------------------------------- policy


def test_masked_actions_get_zero_probability_and_are_never_chosen():
    policy = RetrievalPolicy(GRPOConfig(), seed=0)
    mask = action_mask({"factcheck", "wiki"})
    assert mask == [False, False, False, True, False, True, False, True]
    state = [0.1] * STATE_DIM
    probs = policy.action_probs(state, mask)
    assert {a for a, p in probs.items() if p > 0} == {"wiki", "factcheck", "stop"}
    assert sum(probs.values()) == pytest.approx(1.0)
    chosen = {ACTIONS[policy.act(state, mask)[0]] for _ in range(60)}
    assert chosen <= {"wiki", "factcheck", "stop"}
    assert ACTIONS[policy.act(state, mask, greedy=True)[0]] in {"wiki", "factcheck", "stop"}


def test_heuristic_follows_category_and_recency_and_skips_masked():
    used = dict.fromkeys(("web", "counter", "arxiv", "wiki", "social", "factcheck", "reddit"), 0)
    allowed = {"web", "wiki", "factcheck", "arxiv", "social"}
    assert heuristic_action("scientific", False, used, allowed) == "arxiv"
    assert heuristic_action("political", False, used, allowed) == "factcheck"
    used["factcheck"] = 1
    assert heuristic_action("political", True, used, allowed) == "social"  # recent: early
    assert heuristic_action("political", False, used, {"factcheck"}) == "stop"


def _rollout(*rewards: float, claim: str = "c", heuristic: bool = False) -> Trajectory:
    steps = [Step([0.0] * STATE_DIM, [True] * len(ACTIONS), 0, -2.0, r) for r in rewards]
    return Trajectory(steps, heuristic=heuristic, claim=claim)


def test_group_advantages_normalise_returns_within_a_group_of_one_claims_rollouts():
    # The example: four steps of 0.3 (return 1.18 at γ = 0.99) against one step
    # of 1.0 (return 1.0). Normalising step rewards across the group (the old code) gave
    # the better rollout [-1.97, -1.49, -1.00, -0.50] and the worse +2.0.
    better, worse = _rollout(0.3, 0.3, 0.3, 0.3), _rollout(1.0)
    assert better.discounted_return(0.99) == pytest.approx(0.3 * (1 + 0.99 + 0.99**2 + 0.99**3))
    adv = group_advantages([better, worse], gamma=0.99)
    assert adv == [[pytest.approx(1.0)] * 4, [pytest.approx(-1.0)]]
    # three rollouts at γ = 0.5: returns 1, 0.5 and 0 (mean 0.5, std sqrt(1/6))
    adv = group_advantages([_rollout(1.0), _rollout(0.0, 1.0), _rollout(0.0, 0.0, 0.0)], 0.5)
    a = 0.5 / (1 / 6) ** 0.5
    assert adv == [[pytest.approx(a)], [pytest.approx(0.0)] * 2, [pytest.approx(-a)] * 3]
    # equal returns: no rollout is better than another
    assert group_advantages([_rollout(0.2), _rollout(0.1, 0.2)], 0.5) == [[0.0], [0.0, 0.0]]
    with pytest.raises(ValueError, match="one claim"):
        group_advantages([_rollout(1.0, claim="a"), _rollout(0.0, claim="b")], 0.99)


def test_heuristic_rollouts_never_enter_the_clipped_ratio():
    policy = RetrievalPolicy(GRPOConfig(group_size=2, warmup_claims=0), seed=0)
    # the warm-up heuristic's rollouts are off-policy: no update from them
    assert policy.learn([_rollout(1.0, heuristic=True), _rollout(0.0, heuristic=True)]) is None
    assert policy.learn([_rollout(1.0, heuristic=True), _rollout(0.0)]) is None
    assert policy.updates == 0
    with pytest.raises(ValueError, match="off-policy"):
        policy.update([_rollout(1.0, heuristic=True), _rollout(0.0)])
    metrics = policy.learn([_rollout(1.0, heuristic=True), _rollout(0.0), _rollout(0.5)])
    assert metrics is not None and metrics["rollouts"] == 2 and policy.updates == 1


def test_grpo_converges_to_the_action_that_pays_more():
    """A toy task: one step per rollout, G rollouts of each claim (a random state);
    factcheck pays 1, every other action 0."""
    cfg = GRPOConfig(lr=3e-3, warmup_claims=0, group_size=8, epochs=4)
    policy = RetrievalPolicy(cfg, seed=0)
    rng = random.Random(0)
    mask = [True] * len(ACTIONS)
    target = ACTIONS.index("factcheck")
    start = policy.action_probs([0.5] * STATE_DIM, mask)["factcheck"]
    for claim in range(60):
        state = [rng.random() for _ in range(STATE_DIM)]
        group = []
        for _ in range(cfg.group_size):
            idx, logp, _ = policy.act(state, mask)
            reward = 1.0 if idx == target else 0.0
            group.append(Trajectory([Step(state, mask, idx, logp, reward)], claim=str(claim)))
        policy.learn(group)
    end = policy.action_probs([0.5] * STATE_DIM, mask)["factcheck"]
    assert policy.updates == 60
    assert start < 0.3 and end > 0.9
    assert all(h["kl"] >= 0 for h in policy.history)


def test_step_reward_follows_equation_5():
    cfg = RewardConfig()
    reward, terms = step_reward(
        cfg, reliability=(0.5, 0.85), veracity=(0.5, 0.2), new_relevance=[0.9, 0.2, 0.8, 0.7, 0.6],
        new_official=True,
    )  # fmt: skip
    expected = 1.0 * 0.35 + 0.5 * 0.3 + 0.05 * 4 * 1 + (0.2 + 0.1) - 0.01
    assert reward == pytest.approx(expected)
    assert terms["bonus"] == pytest.approx(0.3)
    # nothing relevant, no change: only the step penalty
    reward, _ = step_reward(
        cfg, reliability=(0.85, 0.85), veracity=(0.2, 0.2), new_relevance=[0.1],
        new_official=False,
    )  # fmt: skip
    assert reward == pytest.approx(-0.01)


def test_reliability_bonus_only_on_the_first_rise_to_tau_h():
    cfg = RewardConfig()
    kw = {"veracity": (0.5, 0.5), "new_relevance": [], "new_official": False}
    _, first = step_reward(cfg, reliability=(0.5, 0.8), **kw)  # reaches τ_h = 0.8
    assert first["bonus"] == pytest.approx(0.2)
    _, again = step_reward(cfg, reliability=(0.6, 0.9), reached_high=True, **kw)
    assert again["bonus"] == 0.0  # reached before in this episode: paid once
    _, below = step_reward(cfg, reliability=(0.5, 0.79), **kw)
    assert below["bonus"] == 0.0


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_round_trip_keeps_weights_optimisers_and_counters(tmp_path):
    cfg = ToEConfig(eval_net=EvalNetConfig(epochs=2), agg_net=AggNetConfig(epochs=2))
    models = ToEModels(cfg)
    models.eval_optimizer, _ = train_evaluation(
        models.eval_net, synthetic_eval_samples(16), cfg.eval_net
    )
    models.trained["eval_net"] = True
    mask = [True] * len(ACTIONS)
    models.policy.claims_seen = 9  # past the warm-up
    group = []
    for k in range(8):  # one GRPO update on a group of 8 rollouts of one claim
        idx, logp, _ = models.policy.act([0.2] * STATE_DIM, mask)
        group.append(Trajectory([Step([0.2] * STATE_DIM, mask, idx, logp, k / 8)], claim="c"))
    assert models.policy.learn(group) is not None
    folder = tmp_path / "ckpt"
    models.save(folder, data={"dataset": "synthetic"})
    loaded = ToEModels.load(cfg, folder)
    f, ev = features(), [item("refutes")]
    assert loaded.score(f, ev) == pytest.approx(models.score(f, ev))
    assert loaded.trained == {"eval_net": True, "agg_net": False}
    assert loaded.policy.updates == 1 and loaded.policy.claims_seen == 9
    assert loaded.eval_optimizer is not None and loaded.agg_optimizer is None
    state = [0.3] * STATE_DIM
    assert loaded.policy.action_probs(state, mask) == pytest.approx(
        models.policy.action_probs(state, mask)
    )
    manifest = read_manifest(folder, "toe")
    assert manifest.data == {"dataset": "synthetic"}
    assert manifest.trained["policy"] is True
    with pytest.raises(CheckpointError, match="not radar"):
        read_manifest(folder, "radar")
    with pytest.raises(CheckpointError, match="no checkpoint"):
        ToEModels.load(cfg, tmp_path / "missing")
