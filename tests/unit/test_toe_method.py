"""ToE end to end with a scripted model: Algorithm 1 expands, prunes, stops on decisiveness
or convergence; masking, the trace's tree, failures, scorers, checkpoints, the CLI view."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from _toe_script import CLAIM, DECOMPOSITION, FACTCHECK_DOCS, WIKI_DOCS, sources, toe_llm

from veracity.core.errors import MethodConfigError
from veracity.core.types import Claim
from veracity.methods.base import load_method
from veracity.methods.toe import ToEMethod
from veracity.methods.toe.models import ToEModels
from veracity.methods.toe.networks import EvalSample, train_evaluation
from veracity.testing import InMemorySource


async def run(plan, *, config=None, srcs=None, **kw):
    llm = toe_llm(plan, **kw)
    method = ToEMethod(llm, config or {}, sources=srcs if srcs is not None else sources())
    return method, llm, await method.check(CLAIM)


def tree_events(verdict):
    return [e.data for e in verdict.trace.of_kind("tree_node")]


async def test_tree_expands_prunes_and_stops_when_the_root_is_decisive():
    # root unreliable (expands); sub-claims reliable and false -> root decisive after two
    method, _, verdict = await run({"n0": (0.4, 0.4), "*": (0.1, 0.9)})
    meta = verdict.metadata
    assert verdict.ok and verdict.label == "false"
    assert verdict.score == pytest.approx(0.1)
    assert verdict.confidence == pytest.approx(0.9 * (0.5 + 0.5 * 2 / 3))
    assert meta["stop_reason"] == "decisive" and meta["iterations"] == 3
    assert meta["status_counts"] == {"expanded": 1, "evaluated": 2, "pruned": 1}
    tree = {n["id"]: n for n in meta["tree"]["nodes"]}
    # highest priority first: the weightiest sub-claim (5/10) then 3/10; 2/10 is pruned
    assert tree["n1"]["evaluated_at"] == 2 and tree["n2"]["evaluated_at"] == 3
    assert tree["n3"]["status"] == "pruned" and tree["n3"]["pruned_by"] == "n0"
    assert [round(tree[i]["weight"], 2) for i in ("n1", "n2", "n3")] == [0.5, 0.3, 0.2]
    # one tree_node event per node per iteration
    events = tree_events(verdict)
    per_iter = Counter(e["iteration"] for e in events)
    assert per_iter == {1: 4, 2: 4, 3: 4}
    last = {e["node_id"]: e for e in events if e["iteration"] == 3}
    assert last["n3"]["status"] == "pruned" and last["n3"]["pruned_now"]
    assert last["n0"]["decisive"] and last["n0"]["veracity"] == pytest.approx(0.1)
    first = next(e for e in events if e["iteration"] == 1 and e["node_id"] == "n0")
    assert first["expand"] and first["evaluated_now"] and first["evidence"]
    assert {e["node_id"]: e["parent_id"] for e in events}["n2"] == "n0"
    # every retrieval decision is in the trace, with the masked actions named
    setup = next(e for e in verdict.trace.of_kind("stage") if e.data.get("step") == "setup")
    assert set(setup.data["masked"]) == {"web", "counter", "arxiv", "social", "reddit"}
    decisions = [e.data for e in verdict.trace.of_kind("decision") if e.name == "toe:policy"]
    assert {d["action"] for d in decisions} <= {"factcheck", "wiki", "stop"}
    # five search steps per claim (Table I): two for n0, two for n1, the last one for n2
    assert meta["actions"] == {"factcheck": 3, "wiki": 2}
    assert meta["category"] == "political"
    # cited evidence is checked against its documents
    assert verdict.evidence and all(e.quote_verified for e in verdict.evidence)
    assert method.models.policy.claims_seen == 1


async def test_tree_converges_when_the_root_veracity_stops_moving():
    _, _, verdict = await run({"n0": (0.5, 0.5), "*": (0.5, 0.9)})
    meta = verdict.metadata
    assert meta["stop_reason"] == "converged"
    assert meta["root_history"] == [0.5, 0.5, 0.5]
    assert verdict.label == "uncertain"
    assert meta["status_counts"]["unvisited"] == 1  # left in the queue when it stopped
    last = [e for e in tree_events(verdict) if e["iteration"] == 3]
    assert {e["node_id"]: e["status"] for e in last}["n3"] == "unvisited"


async def test_low_reliability_sub_claims_expand_until_max_depth_and_t_max():
    def decomposition(request):
        node = request.tag.split(":")[2]
        return json.dumps(
            {"subclaims": [
                {"claim": f"Brellin part 1 of {node}", "dimension": "core event", "weight": 1},
                {"claim": f"Brellin part 2 of {node}", "dimension": "entity identity", "weight": 1},
            ]}
        )  # fmt: skip

    _, llm, verdict = await run(
        {"*": (0.5, 0.3)}, config={"max_depth": 2, "max_iterations": 6},
        decomposition=decomposition,
    )  # fmt: skip
    meta = verdict.metadata
    assert meta["stop_reason"] == "max_iterations" and meta["iterations"] == 6
    depths = {n["id"]: n["depth"] for n in meta["tree"]["nodes"]}
    assert max(depths.values()) == 2
    # nodes at max depth are never decomposed
    deep = [n for n in meta["tree"]["nodes"] if n["depth"] == 2 and n["evaluated_at"]]
    assert deep and all(not n["children"] for n in deep)
    assert len(llm.calls_tagged("toe:decompose")) == sum(
        1 for n in meta["tree"]["nodes"] if n["children"]
    )


async def test_failed_decomposition_is_recorded_and_the_tree_carries_on():
    bad = json.dumps({"subclaims": [{"claim": "only one", "dimension": "core event", "weight": 1}]})
    _, llm, verdict = await run({"*": (0.2, 0.5)}, decomposition=bad)
    assert verdict.ok  # the root's own evaluation still gives a verdict
    assert len(llm.calls_tagged("toe:decompose")) == 3  # first try + two re-asks
    errors = [e for e in verdict.trace.of_kind("error") if e.name == "toe:decompose"]
    assert errors and "Decomposition" in errors[0].data["error"]
    root = verdict.metadata["tree"]["nodes"][0]
    assert root["expansion_error"] and root["status"] == "evaluated"
    assert verdict.metadata["stop_reason"] == "queue_empty"


async def test_root_failure_is_a_recorded_fault_not_a_label():
    llm = toe_llm({"*": (0.5, 0.5)}, features_reply='{"category": "sports"}')  # never valid
    verdict = await ToEMethod(llm, {}, sources=sources()).check(CLAIM)
    assert verdict.label is None and "StructuredOutputError" in verdict.error


async def test_ablation_masks_a_tool_group_and_the_heuristic_moves_on():
    _, _, verdict = await run({"*": (0.1, 0.9)}, config={"masked_actions": ["factcheck"]})
    assert verdict.metadata["masked_actions"]["factcheck"] == "masked by the config (ablation)"
    assert set(verdict.metadata["actions"]) == {"wiki"}


def test_a_run_without_any_usable_source_is_refused():
    with pytest.raises(MethodConfigError, match="none of its actions has a source"):
        ToEMethod(toe_llm({}), {}, sources={"other": InMemorySource([], name="other")})
    with pytest.raises(MethodConfigError, match="cut-offs"):
        ToEMethod(toe_llm({}), {}, labels="true_false", sources=sources())


def test_method_is_registered_and_maps_actions_to_named_sources():
    custom = {"factcheck": "fc", "wiki": "enc", "web": "fc"}
    srcs = {
        "fc": InMemorySource([], name="fc"),
        "enc": InMemorySource([], name="enc"),
    }
    method = load_method("toe", llm=toe_llm({}), config={"action_sources": custom}, sources=srcs)
    assert set(method.action_sources) == {"factcheck", "wiki", "web"}
    assert method.masked["counter"] == "no source mapped to this action"
    with pytest.raises(MethodConfigError, match="unknown retrieval actions"):
        ToEMethod(toe_llm({}), {"masked_actions": ["tiktok"]}, sources=srcs)


async def test_trained_checkpoint_switches_to_the_network_scorer(tmp_path):
    cfg_dict = {"checkpoint": str(tmp_path / "ckpt"), "freeze_policy": True}
    with pytest.raises(MethodConfigError, match="make it with: veracity train toe"):
        ToEMethod(toe_llm({}), cfg_dict, sources=sources())
    from veracity.methods.toe.config import EvalNetConfig, ToEConfig

    cfg = ToEConfig(eval_net=EvalNetConfig(epochs=3))
    models = ToEModels(cfg)
    sample = EvalSample([0.0] * 12, [[0.0] * 8] * 20, [False] * 20, 0.1, 0.95)
    models.eval_optimizer, _ = train_evaluation(models.eval_net, [sample] * 8, cfg.eval_net)
    models.trained["eval_net"] = True
    models.save(tmp_path / "ckpt")
    method, llm, verdict = await run({"*": (0.5, 0.5)}, config=cfg_dict)
    assert method.scorer == "network" and method.aggregator == "rules"
    assert not llm.calls_tagged("toe:judge")  # the network replaced the judge
    assert verdict.metadata["scorer"] == "network"
    assert {e["scorer"] for e in tree_events(verdict) if e["scorer"]} == {"network"}
    assert verdict.metadata["policy"]["frozen"] and method.models.policy.claims_seen == 0
    with pytest.raises(MethodConfigError, match="trained agg_net"):
        ToEMethod(toe_llm({}), {**cfg_dict, "aggregator": "network"}, sources=sources())


async def test_online_learning_updates_the_policy_after_warm_up():
    llm = toe_llm({"n0": (0.4, 0.4), "*": (0.1, 0.9)})
    config = {"grpo": {"warmup_claims": 1, "group_size": 2}, "seed": 3}
    method = ToEMethod(llm, config, sources=sources())
    first = await method.check(CLAIM)
    assert first.metadata["policy"]["mode"] == "heuristic"
    second = await method.check(Claim(text="The Brellin canal cost 3 million euros in 2020."))
    assert second.metadata["policy"]["mode"] == "policy"
    assert method.models.policy.updates >= 1
    notes = [e for e in first.trace.of_kind("note") if e.name == "toe:grpo_update"]
    notes += [e for e in second.trace.of_kind("note") if e.name == "toe:grpo_update"]
    assert notes and {"loss", "kl", "entropy"} <= set(notes[0].data)
    probs = [
        e.data["probabilities"] for e in second.trace.of_kind("decision") if e.name == "toe:policy"
    ]
    assert probs and all(p["web"] == 0 and p["arxiv"] == 0 for p in probs)


def test_cli_prints_the_tree(monkeypatch):
    import asyncio

    from rich.console import Console

    from veracity.cli.render import tree_view

    _, _, verdict = asyncio.run(run({"n0": (0.4, 0.4), "*": (0.1, 0.9)}))
    console = Console(record=True, width=140)
    console.print(tree_view(verdict))
    text = console.export_text()
    assert "argument tree after 3 iteration(s)" in text
    assert "[pruned]" in text and "quantitative accuracy" in text
    assert "v 0.10 r 0.75 [expanded]" in text


async def test_web_ui_nests_the_tree_from_the_trace():
    from veracity.server.views import argument_tree, stored_events

    _, _, verdict = await run({"n0": (0.4, 0.4), "*": (0.1, 0.9)})
    # as the web UI reads a stored verdict: its JSON, turned back into event classes
    roots = argument_tree(stored_events(verdict.model_dump(mode="json")))
    assert [r.id for r in roots] == ["n0"]
    children = {c.id: c.data for c in roots[0].children}
    assert set(children) == {"n1", "n2", "n3"}
    assert children["n3"]["status"] == "pruned" and roots[0].data["status"] == "expanded"
    assert roots[0].data["veracity"] == pytest.approx(0.1)


def test_decomposition_fixture_is_valid():
    from veracity.methods.toe.schema import decomposition_model

    parsed = decomposition_model(2, 4).model_validate_json(DECOMPOSITION)
    assert sum(s.weight for s in parsed.subclaims) == pytest.approx(1.0)


# --------------------------------------------------------------------------- issue 24


async def test_grpo_groups_are_rollouts_of_one_claim_and_leave_the_warm_up_out(monkeypatch):
    from veracity.methods.toe.policy import RetrievalPolicy

    groups = []
    update = RetrievalPolicy.update

    def spy(self, group):
        groups.append(list(group))
        return update(self, group)

    monkeypatch.setattr(RetrievalPolicy, "update", spy)
    llm = toe_llm({"n0": (0.4, 0.4), "*": (0.1, 0.9)})
    config = {"grpo": {"warmup_claims": 1, "group_size": 3}, "seed": 3}
    method = ToEMethod(llm, config, sources=sources())
    first = await method.check(CLAIM)  # the warm-up heuristic acts: nothing to learn from
    assert first.metadata["policy"]["mode"] == "heuristic" and not groups
    second = await method.check(Claim(text="The Brellin canal cost 3 million euros in 2020."))
    assert second.metadata["policy"]["mode"] == "policy" and groups
    evaluated = {n["claim"] for n in second.metadata["tree"]["nodes"] if n["evaluated_at"]}
    for group in groups:  # G rollouts of one (sub-)claim of this check, all on-policy
        assert len(group) == 3 and not any(t.heuristic for t in group)
        assert len({t.claim for t in group}) == 1 and group[0].claim in evaluated
    assert method.models.policy.updates == len(groups)
    # the extra rollouts are marked in the trace; the tree keeps each node's own episode
    decisions = [e.data for e in second.trace.of_kind("decision") if e.name == "toe:policy"]
    assert {d.get("rollout") for d in decisions} == {None, 1, 2}
    own = Counter(d["action"] for d in decisions if "rollout" not in d and d["action"] != "stop")
    assert own == Counter(second.metadata["actions"])


async def test_reliability_bonus_is_paid_only_when_reliability_first_reaches_tau_h():
    reliability = iter([85, 60, 90, 95])  # crosses τ_h = 0.8, falls back, crosses again

    def judge(request):
        return json.dumps({"veracity": 20, "reliability": next(reliability), "reason": "[E1]"})

    llm = toe_llm({})
    llm.on(".", judge, tag="toe:judge")
    llm._rules.insert(0, llm._rules.pop())  # this judge answers first
    plain = [d for d in [*FACTCHECK_DOCS, *WIKI_DOCS] if ".gov." not in str(d.url)]  # no b_auth
    srcs = {name: InMemorySource(plain, name=name) for name in ("factcheck", "wikipedia", "web")}
    method = ToEMethod(llm, {"max_iterations": 1}, sources=srcs)
    verdict = await method.check(CLAIM)
    belief = verdict.metadata["tree"]["nodes"][0]["belief"]
    assert [b["reliability"] for b in belief] == [0.85, 0.6, 0.9, 0.95]
    assert [b["terms"]["bonus"] for b in belief] == [0.2, 0.0, 0.0, 0.0]


async def test_five_search_steps_per_claim_are_shared_by_its_nodes():
    plan = {"n0": (0.4, 0.4), "*": (0.1, 0.9)}
    _, _, verdict = await run(plan)

    def searches(v):
        decisions = [e.data for e in v.trace.of_kind("decision") if e.name == "toe:policy"]
        return Counter(d["node"] for d in decisions if d["action"] != "stop")

    assert searches(verdict) == {"n0": 2, "n1": 2, "n2": 1}  # the heuristic wants 2 each
    assert sum(verdict.metadata["actions"].values()) == 5
    _, _, tight = await run(plan, config={"max_search_steps": 2})
    assert searches(tight) == {"n0": 2}  # the sub-claims are scored on no evidence
    nodes = {n["id"]: n for n in tight.metadata["tree"]["nodes"]}
    assert nodes["n1"]["evaluated_at"] and nodes["n1"]["evidence"] == []
    _, _, per_node = await run(plan, config={"search_steps_per": "node"})  # ours, a variant
    assert searches(per_node) == {"n0": 2, "n1": 2, "n2": 2}


async def test_sub_claims_that_share_a_dimension_are_sent_back():
    same_dimension = json.dumps(
        {"subclaims": [
            {"claim": "The Brellin canal is 40 km long.", "dimension": "core event", "weight": 1},
            {"claim": "The Brellin canal opened in 2019.", "dimension": "core event", "weight": 1},
        ]}
    )  # fmt: skip
    replies = iter([same_dimension, DECOMPOSITION])
    _, llm, verdict = await run(
        {"n0": (0.4, 0.4), "*": (0.1, 0.9)}, decomposition=lambda request: next(replies)
    )
    calls = llm.calls_tagged("toe:decompose")
    assert len(calls) == 2 and "dimension 'core event'" in calls[1].messages[-1].content
    dims = [n["dimension"] for n in verdict.metadata["tree"]["nodes"] if n["parent"]]
    assert len(dims) == 3 and len(set(dims)) == 3


@pytest.mark.parametrize("layout", ["shared", "paper"])
async def test_prompts_open_with_the_check_notice_and_the_node_statement(layout):
    """Shared layout: every call's system message is the same notice, its user message
    opens with the statement of the node it is about, and the agent's own system text
    closes it; calls about one node repeat each other's opening. Paper: each agent's
    system text leads."""
    from veracity.llm.slots import shared_chars
    from veracity.prompt_layout import ROLE_HEADING

    _, llm, verdict = await run(
        {"n0": (0.4, 0.4), "*": (0.1, 0.9)}, config={"prompt_layout": layout}
    )
    assert verdict.ok and verdict.label == "false"
    root = [c for c in llm.calls if c.tag.endswith(":n0") and not c.tag.startswith("toe:decompose")]
    kinds = {c.tag.split(":")[1] for c in root}
    assert {"features", "query", "clean", "analyse", "judge"} <= kinds
    systems = {c.messages[0].content for c in llm.calls}
    first_user = [c.messages[1].content for c in root]
    if layout == "paper":
        assert len(systems) > 1 and all(s.startswith("You ") for s in systems)
        return
    assert len(systems) == 1 and next(iter(systems)).startswith("Parts of this conversation")
    opening = f"Statement:\n<statement>\n{CLAIM.text}"
    assert all(u.startswith(opening) for u in first_user)
    assert all(ROLE_HEADING in u and u.index(ROLE_HEADING) > len(opening) for u in first_user)
    texts = ["".join(m.content for m in c.messages) for c in root]
    shared = min(shared_chars(a, b) for a in texts for b in texts if a is not b)
    assert shared >= len(next(iter(systems))) + len(opening)
