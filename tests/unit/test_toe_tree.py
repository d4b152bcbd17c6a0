"""ToE tree management on synthetic trees: priority, the three flags, pruning, and the
rule-based bottom-up aggregation."""

from __future__ import annotations

import pytest

from veracity.methods.toe.config import RuleAggConfig, ThresholdConfig
from veracity.methods.toe.schema import SubClaim, decomposition_model
from veracity.methods.toe.tree import (
    ArgumentTree,
    aggregate_rules,
    convergence_flag,
    decisive_flag,
    expansion_flag,
    priority,
    prune,
    rule_scores,
)

TH = ThresholdConfig()
RULES = RuleAggConfig()


def sub(text: str, weight: float, dim: str = "core event") -> SubClaim:
    return SubClaim(claim=text, dimension=dim, weight=weight)


def scored(tree: ArgumentTree, node_id: str, v: float, r: float) -> None:
    node = tree[node_id]
    node.self_v, node.self_r = v, r
    node.status = "evaluated" if not node.children else "expanded"


def three_children(weights=(0.5, 0.3, 0.2)) -> ArgumentTree:
    tree = ArgumentTree("root claim")
    scored(tree, "n0", 0.5, 0.3)
    tree.add_children("n0", [sub(f"part {i}", w) for i, w in enumerate(weights)])
    return tree


def test_priority_combines_parent_uncertainty_and_importance():
    tree = three_children()
    aggregate_rules(tree, RULES)  # root: only its own scores, r = 0.3
    n1, n3 = tree["n1"], tree["n3"]
    assert priority(tree, n1, 0.5, 0.5) == pytest.approx(0.5 * 0.7 + 0.5 * 0.5)
    assert priority(tree, n3, 0.5, 0.5) == pytest.approx(0.5 * 0.7 + 0.5 * 0.2)
    assert priority(tree, tree.root, 0.5, 0.5) == pytest.approx(0.5 * 1.0 + 0.5 * 1.0)
    # only importance, or only uncertainty
    assert priority(tree, n1, 0.0, 1.0) == pytest.approx(0.5)
    assert priority(tree, n1, 1.0, 0.0) == priority(tree, n3, 1.0, 0.0)


def test_expansion_flag_uses_self_reliability_and_root_rule():
    tree = ArgumentTree("c")
    node = tree.root
    assert not expansion_flag(node, TH, first_root_eval=True)  # not evaluated yet
    node.self_v, node.self_r = 0.9, 0.95
    assert not expansion_flag(node, TH, first_root_eval=False)
    assert expansion_flag(node, TH, first_root_eval=True)  # the root always expands first
    node.self_r = 0.69
    assert expansion_flag(node, TH, first_root_eval=False)


@pytest.mark.parametrize(
    ("v", "r", "expected"),
    [(0.1, 0.8, True), (0.9, 0.71, True), (0.5, 0.99, False), (0.3, 0.9, False),
     (0.7, 0.9, False), (0.05, 0.7, False)],
)  # fmt: skip
def test_decisive_flag(v, r, expected):
    tree = ArgumentTree("c")
    tree.root.aggr_v, tree.root.aggr_r = v, r
    assert decisive_flag(tree.root, TH) is expected


def test_convergence_flag_needs_three_stable_iterations_and_reliability():
    tree = ArgumentTree("c")
    tree.root.aggr_v, tree.root.aggr_r = 0.5, 0.75
    assert not convergence_flag([0.5, 0.52], tree.root, TH)  # too few iterations
    assert convergence_flag([0.1, 0.5, 0.52, 0.55], tree.root, TH)  # last three within 0.1
    assert not convergence_flag([0.5, 0.52, 0.61], tree.root, TH)
    tree.root.aggr_r = 0.6
    assert not convergence_flag([0.5, 0.5, 0.5], tree.root, TH)  # not reliable enough


def test_rule_aggregation_weights_by_reliability_and_importance():
    tree = three_children((0.5, 0.5, 0.0001))
    scored(tree, "n1", 0.0, 0.9)
    scored(tree, "n2", 1.0, 0.3)
    aggregate_rules(tree, RULES)
    root = tree.root
    # veracity: weights 0.5*0.9 and 0.5*0.3 -> (0*0.45 + 1*0.15) / 0.6
    assert root.aggr_v == pytest.approx(0.25)
    # reliability: mean r 0.6 × coverage (2 of 3: 0.5 + 0.5 * 2/3) × consistency (sd 0.5)
    assert root.aggr_r == pytest.approx(0.6 * (0.5 + 0.5 * 2 / 3) * 0.0)
    # leaves keep their own scores
    assert (tree["n1"].aggr_v, tree["n1"].aggr_r) == (0.0, 0.9)
    assert tree["n3"].aggr_v is None  # never evaluated


def test_rule_aggregation_agreement_and_coverage_raise_reliability():
    tree = three_children()
    scored(tree, "n1", 0.1, 0.9)
    aggregate_rules(tree, RULES)
    one = tree.root.aggr_r
    scored(tree, "n2", 0.12, 0.9)
    aggregate_rules(tree, RULES)
    two = tree.root.aggr_r
    scored(tree, "n3", 0.9, 0.9)  # disagrees
    aggregate_rules(tree, RULES)
    three = tree.root.aggr_r
    assert one == pytest.approx(0.9 * (0.5 + 0.5 / 3))
    assert two > one
    assert three < two


def test_rule_aggregation_is_bottom_up_through_levels():
    tree = three_children()
    scored(tree, "n1", 0.5, 0.2)
    tree.add_children("n1", [sub("deep a", 1), sub("deep b", 1)])
    scored(tree, "n4", 0.0, 1.0)
    scored(tree, "n5", 0.0, 1.0)
    aggregate_rules(tree, RULES)
    assert tree["n1"].aggr_v == pytest.approx(0.0)
    assert tree["n1"].aggr_r == pytest.approx(1.0)  # both children, full agreement
    assert tree.root.aggr_v == pytest.approx(0.0)  # only n1 is processed below the root


def test_rule_scores_refuse_unscored_children():
    tree = three_children()
    with pytest.raises(ValueError, match="scored children"):
        rule_scores([tree["n1"]], 3, RULES)


def test_pruning_removes_pending_descendants_of_a_decisive_root():
    tree = three_children()
    scored(tree, "n1", 0.05, 0.95)
    scored(tree, "n2", 0.05, 0.95)
    scored(tree, "n3", 0.5, 0.2)
    tree.add_children("n3", [sub("deep a", 1), sub("deep b", 1)])
    tree["n3"].status = "expanded"
    queue = {"n4", "n5"}
    aggregate_rules(tree, RULES)
    # n3 (not decisive itself) counts as processed: 3 of 3 children, but it disagrees
    assert not decisive_flag(tree.root, TH)
    tree["n3"].self_v = tree["n3"].self_r = None  # as if n3 were still pending
    tree["n3"].aggr_v = tree["n3"].aggr_r = None
    aggregate_rules(tree, RULES)
    assert tree.root.aggr_r == pytest.approx(0.95 * (0.5 + 0.5 * 2 / 3))
    assert decisive_flag(tree.root, TH)
    removed = prune(tree, queue, TH, iteration=4)
    assert sorted(removed) == ["n4", "n5"]
    assert queue == set()
    assert tree["n4"].status == "pruned" and tree["n4"].pruned_by == "n0"


def test_pruning_of_a_decisive_subtree_keeps_other_branches():
    tree = three_children()
    scored(tree, "n1", 0.5, 0.2)
    tree.add_children("n1", [sub("deep a", 1), sub("deep b", 1), sub("deep c", 1)])
    scored(tree, "n4", 0.02, 0.99)
    scored(tree, "n5", 0.02, 0.99)
    queue = {"n2", "n3", "n6"}
    aggregate_rules(tree, RULES)
    assert decisive_flag(tree["n1"], TH)
    assert not decisive_flag(tree.root, TH)  # one processed child of three
    removed = prune(tree, queue, TH, iteration=5)
    assert removed == ["n6"]
    assert queue == {"n2", "n3"}
    assert tree["n6"].status == "pruned" and tree["n6"].pruned_at == 5
    aggregate_rules(tree, RULES)  # a pruned child no longer counts against coverage
    assert tree["n1"].aggr_r == pytest.approx(0.99)


def test_tree_round_trips_through_json():
    tree = three_children()
    scored(tree, "n1", 0.2, 0.8)
    aggregate_rules(tree, RULES)
    again = ArgumentTree.from_dict(tree.to_dict())
    assert again.to_dict() == tree.to_dict()
    assert [n.id for n in again.post_order()] == ["n1", "n2", "n3", "n0"]
    with pytest.raises(ValueError, match="root first"):
        ArgumentTree.from_dict({"root": "n1", "nodes": tree.to_dict()["nodes"]})


def test_decomposition_weights_are_normalised_and_validated():
    model = decomposition_model(2, 4)
    ok = model.model_validate(
        {"subclaims": [
            {"claim": "a is b", "dimension": "core event", "weight": 3},
            {"claim": "c is d", "dimension": "entity identity", "weight": 1},
        ]}
    )  # fmt: skip
    assert [s.weight for s in ok.subclaims] == [0.75, 0.25]
    with pytest.raises(ValueError):
        model.model_validate(
            {"subclaims": [{"claim": "a is b", "dimension": "core event", "weight": 1}]}
        )
    with pytest.raises(ValueError):  # zero weight
        model.model_validate(
            {"subclaims": [
                {"claim": "a is b", "dimension": "core event", "weight": 0},
                {"claim": "c is d", "dimension": "core event", "weight": 1},
            ]}
        )  # fmt: skip
    with pytest.raises(ValueError, match="same"):
        model.model_validate(
            {"subclaims": [
                {"claim": "a is b", "dimension": "core event", "weight": 1},
                {"claim": "A is b", "dimension": "core event", "weight": 1},
            ]}
        )  # fmt: skip
    with pytest.raises(ValueError, match="repeats the statement"):
        decomposition_model(2, 4, parent="A is B.").model_validate(
            {"subclaims": [
                {"claim": "a is  b", "dimension": "core event", "weight": 1},
                {"claim": "c is d", "dimension": "core event", "weight": 1},
            ]}
        )  # fmt: skip
    with pytest.raises(ValueError):  # not one of the seven dimensions
        model.model_validate(
            {"subclaims": [
                {"claim": "a is b", "dimension": "vibes", "weight": 1},
                {"claim": "c is d", "dimension": "core event", "weight": 1},
            ]}
        )  # fmt: skip


def test_each_sub_claim_checks_a_dimension_of_its_own():
    model = decomposition_model(2, 4)
    with pytest.raises(ValueError, match="dimension 'core event'"):
        model.model_validate(
            {"subclaims": [
                {"claim": "a is b", "dimension": "core event", "weight": 1},
                {"claim": "c is d", "dimension": "entity identity", "weight": 1},
                {"claim": "e is f", "dimension": "core event", "weight": 1},
            ]}
        )  # fmt: skip
    ok = model.model_validate(
        {"subclaims": [
            {"claim": "a is b", "dimension": "core event", "weight": 1},
            {"claim": "c is d", "dimension": "entity identity", "weight": 1},
        ]}
    )  # fmt: skip
    assert [s.dimension for s in ok.subclaims] == ["core event", "entity identity"]
