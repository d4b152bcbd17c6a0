"""Training ToE (collect, resume, fit, reload) and AdvFact (build, load, flip rates),
through the library and the command line, with a scripted model and invented LIAR rows."""

from __future__ import annotations

import json
import random

import pytest
from _toe_script import FACTCHECK_DOCS, WIKI_DOCS, sources, toe_llm
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.labels import get_label_space
from veracity.core.types import Claim
from veracity.datasets import DatasetInfo, Example, load_dataset
from veracity.evaluation.training import collect
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.methods.checkpoints import checkpoint_folder, read_manifest
from veracity.methods.toe import ToEMethod
from veracity.methods.toe.training import ToETrainer, eval_samples
from veracity.methods.toe.tree import ArgumentTree
from veracity.retrieval.base import Query
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime.home import home_paths
from veracity.testing import ScriptedLLM

runner = CliRunner()
SPACE = get_label_space("true_uncertain_false")
PLAN = {"n0": (0.4, 0.4), "*": (0.1, 0.9)}
LABELS = ("false", "pants-fire", "true", "half-true", "barely-true", "false")


def examples(n: int = 3) -> list[Example]:
    return [
        Example(
            id=f"x{i}",
            input=Claim(id=f"x{i}", text=f"The Brellin canal claim number {i} is true."),
            label=["false", "true", "uncertain"][i % 3],
            label_space="true_uncertain_false",
        )
        for i in range(n)
    ]


INFO = DatasetInfo(
    name="toy", label_space="true_uncertain_false", splits=("train",), input_kind="claim",
    folder="toy",
)  # fmt: skip


async def test_trainer_collects_resumes_fits_and_the_checkpoint_reloads(tmp_path):
    folder = tmp_path / "ckpt"
    config = {"eval_net": {"epochs": 5}, "agg_net": {"epochs": 5}}
    method = ToEMethod(toe_llm(PLAN), config, sources=sources())
    trainer = ToETrainer.open(method, folder)
    assert method.collect_targets
    got = await collect(trainer, examples(2), INFO, SPACE)
    assert got == 2 and trainer.done() == {"x0", "x1"}
    assert read_manifest(folder, "toe").parts.keys() == {"eval_net", "agg_net", "policy"}
    # a second trainer on the same folder resumes: only the new claim is checked
    method2 = ToEMethod(toe_llm(PLAN), config, sources=sources())
    trainer2 = ToETrainer.open(method2, folder)
    assert method2.models.policy.claims_seen == 2
    assert await collect(trainer2, examples(3), INFO, SPACE) == 1
    records = trainer2.records()
    assert [r["id"] for r in records] == ["x0", "x1", "x2"]
    assert [r["gold"] for r in records] == [0.0, 1.0, 0.5]
    assert records[0]["stats"]["stop_reason"] == "decisive"
    tree = ArgumentTree.from_dict(records[0]["tree"])
    samples = eval_samples(tree, method2.config)
    # one sample per search step of each evaluated node (2 + 2 + 1: five steps per claim)
    assert len(samples) == 5 and all(len(s.evidence) == 20 for s in samples)
    metrics = trainer2.fit({"dataset": "toy"})
    assert metrics["eval_net"]["samples"] == 15 and metrics["eval_net"]["epochs"] == 5
    assert metrics["agg_net"]["samples"] == 3
    manifest = read_manifest(folder, "toe")
    assert manifest.trained == {"eval_net": True, "agg_net": True, "policy": False}
    assert manifest.data["trees"] == 3 and manifest.config["eval_net"]["epochs"] == 5
    # a run that loads the checkpoint scores with the networks (auto)
    llm = toe_llm(PLAN)
    trained = ToEMethod(llm, {"checkpoint": str(folder)}, sources=sources())
    assert (trained.scorer, trained.aggregator) == ("network", "network")
    verdict = await trained.check(examples(1)[0].input)
    assert verdict.ok and not llm.calls_tagged("toe:judge")
    assert verdict.metadata["aggregator"] == "network"


async def test_a_torn_last_record_is_cut_before_the_next_claim_is_stored(tmp_path):
    folder = tmp_path / "ckpt"
    trainer = ToETrainer.open(ToEMethod(toe_llm(PLAN), {}, sources=sources()), folder)
    assert await collect(trainer, examples(1), INFO, SPACE) == 1
    with trainer.records_path.open("a", encoding="utf-8") as fh:
        fh.write('{"id": "x1", "gold": 1.0, "lab')  # a kill -9 in the middle of a write
    again = ToETrainer.open(ToEMethod(toe_llm(PLAN), {}, sources=sources()), folder)
    assert again.done() == {"x0"}
    assert await collect(again, examples(2), INFO, SPACE) == 1
    # without the cut, x1's record would be glued to the torn line and lost
    assert [r["id"] for r in again.records()] == ["x0", "x1"]


async def test_trainer_asks_the_judge_for_targets_when_the_network_scores(tmp_path):
    folder = tmp_path / "ckpt"
    method = ToEMethod(toe_llm(PLAN), {"eval_net": {"epochs": 2}}, sources=sources())
    trainer = ToETrainer.open(method, folder)
    await collect(trainer, examples(1), INFO, SPACE)
    trainer.fit()
    llm = toe_llm(PLAN)
    again = ToEMethod(llm, {"checkpoint": str(folder), "scorer": "network"}, sources=sources())
    trainer = ToETrainer.open(again, folder)
    await collect(trainer, [*examples(1), *examples(2)[1:]], INFO, SPACE)
    assert llm.calls_tagged("toe:judge")  # targets for the new claim's nodes
    tree = ArgumentTree.from_dict(trainer.records()[-1]["tree"])
    assert all(n.judge_v is not None for n in tree.nodes.values() if n.evaluated_at)
    assert {n.scorer for n in tree.nodes.values() if n.evaluated_at} == {"network"}


# --------------------------------------------------------------------------- command line


def _liar_rows(n: int, seed: int = 0, first_id: int = 100) -> str:
    """Invented statements in LIAR's 14-column layout."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        label = LABELS[i % len(LABELS)]
        statement = f"The Brellin canal project number {i} cost {rng.randint(2, 90)} million."
        cols = [f"{first_id + i}.json", label, statement, "canals", "jane-doe", "mayor", "Oss",
                "none", "0", "1", "0", "0", "0", "a speech"]  # fmt: skip
        lines.append("\t".join(cols))
    return "\n".join(lines) + "\n"


@pytest.fixture
def toe_cli(tmp_path, monkeypatch):
    """The CLI with a scripted ToE model, invented LIAR data and a fact-check index."""
    data = tmp_path / "data"
    (data / "liar").mkdir(parents=True)
    (data / "liar" / "train.tsv").write_text(_liar_rows(6))
    (data / "liar" / "valid.tsv").write_text(_liar_rows(12, seed=1, first_id=900))
    build_local_corpus(
        "toyfc", FACTCHECK_DOCS + WIKI_DOCS, mode="bm25", indexes_dir=home_paths().indexes
    )
    model = toe_llm(PLAN)

    def build_llm(cfg, *, cache_path=None, progress=None, **_paths):
        return ManagedLLM(model, cache=ResponseCache(tmp_path / "llm.sqlite", mode="off"))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.methods.toe.ensure_model", lambda cfg: None)
    monkeypatch.setattr("veracity.cli.check.ensure_model", lambda cfg: None)
    return data, model


def test_train_command_collects_resumes_and_writes_a_checkpoint(toe_cli, tmp_path):
    data, model = toe_cli
    args = ["train", "toe", "--limit", "3", "--checkpoint", "ck", "--data-dir", str(data),
            "--source", "factcheck=local:toyfc", "--no-progress"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "0 already collected" in result.output
    assert "eval_net" in result.output and "loss" in result.output
    ck = checkpoint_folder("toe", "ck", root=home_paths().checkpoints)
    manifest = read_manifest(ck, "toe")
    assert manifest.data["dataset"] == "liar" and manifest.data["claims"] == 3
    calls = len(model.calls)
    again = runner.invoke(app, [*args, "--no-fit"])
    assert again.exit_code == 0, again.output
    assert "3 already collected" in again.output and len(model.calls) == calls
    check = runner.invoke(
        app,
        ["check", "The Brellin canal is 40 km long.", "--method", "toe", "--source",
         "factcheck=local:toyfc", "--config", _run_file(tmp_path, "ck")],
    )  # fmt: skip
    assert check.exit_code == 0, check.output
    assert "argument tree after" in check.output


def _run_file(tmp_path, ck) -> str:
    # the checkpoint by its name under VERACITY_HOME: a run file may name no path outside
    # its own folder (issue 38), and a checkpoint's name is how run files refer to one
    path = tmp_path / "run.yaml"
    path.write_text(json.dumps({"method": "toe", "method_config": {"checkpoint": str(ck)}}))
    return str(path)


def test_train_command_reports_a_missing_dataset(toe_cli):
    result = runner.invoke(app, ["train", "toe", "--dataset", "nope", "--no-progress",
                                 "--source", "factcheck=local:toyfc"])  # fmt: skip
    assert result.exit_code == 2 and "nope" in result.output


# --------------------------------------------------------------------------- AdvFact


def advfact_llm() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(
        ".",
        lambda r: json.dumps(
            {
                "narrative": "Officials confirmed on 3 May that the Brellin canal project "
                f"cost exactly the stated million euros ({r.tag}), according to town records."
            }
        ),
        tag="advfact:rewrite",
    )
    llm.on(
        ".",
        lambda r: json.dumps(
            {
                "passages": [
                    f"Report {i}: records from the town office fully confirm this "
                    f"statement in every detail ({r.tag})."
                    for i in range(2)
                ]
            }
        ),
        tag="advfact:poison",
    )
    return llm


async def test_advfact_build_load_corpus_and_flip_rates(toe_cli, tmp_path):
    from veracity.evaluation.advfact import BuildOptions, build_advfact, flip_rates
    from veracity.evaluation.store import PredictionRecord, RunStore
    from veracity.retrieval.base import Query
    from veracity.retrieval.local.corpus import LocalCorpus

    data, _ = toe_cli
    options = BuildOptions(n=3, seed=1, passages_per_claim=2, index="adv")
    manifest = await build_advfact(advfact_llm(), options, data_dir=data)
    assert (manifest["claims"], manifest["samples"], manifest["passages"]) == (3, 6, 6)
    assert manifest["indexes"]["adv"] == manifest["indexes"]["adv-clean"] + 6
    everything = load_dataset("advfact", "all")
    assert len(everything) == 6 and {e.label for e in everything} == {"false"}
    fake = load_dataset("advfact", "fakegpt")
    assert len(fake) == 3 and all("Officials confirmed" in e.input.text for e in fake)
    poisoned = load_dataset("advfact", "poisonedrag")
    clean = load_dataset("advfact", "clean")
    assert [e.input.text for e in poisoned] == [e.input.text for e in clean]
    assert {e.metadata["liar_label"] for e in clean} <= {"false", "pants-fire", "barely-true"}
    source = poisoned[0].metadata["source_id"]
    assert poisoned[0].metadata["exclude_domains"] == [f"s{source}.liar-archive.invalid"]
    hits = await LocalCorpus("adv", indexes_dir=home_paths().indexes).search(
        Query(text=poisoned[0].input.text, top_k=3)
    )
    assert hits[0].id.startswith(f"poison:{source}:")
    clean_hits = await LocalCorpus("adv-clean", indexes_dir=home_paths().indexes).search(
        Query(text=poisoned[0].input.text)
    )
    assert not any(h.id.startswith("poison:") for h in clean_hits)

    def run(name, rows):
        store = RunStore(tmp_path / name)
        store.write_record({"method": "direct"})
        for rid, pred in rows:
            store.append(PredictionRecord(id=rid, gold="false", gold_original="false",
                                          predicted=pred, status="ok"))  # fmt: skip
        return store.path

    ids = [e.metadata["source_id"] for e in clean]
    clean_run = run("clean", [(f"clean-{ids[0]}", "false"), (f"clean-{ids[1]}", "false"),
                              (f"clean-{ids[2]}", "true")])  # fmt: skip
    attacked = run("attacked", [(f"fakegpt-{ids[0]}", "true"), (f"fakegpt-{ids[1]}", "false"),
                                (f"poisonedrag-{ids[2]}", "false")])  # fmt: skip
    stats = {s.attack: s for s in flip_rates(clean_run, attacked)}
    assert stats["fakegpt"].pairs == 2 and stats["fakegpt"].flip_rate == 0.5
    assert stats["fakegpt"].harmful_flip_rate == 0.5
    assert stats["poisonedrag"].flip_rate == 1.0 and stats["poisonedrag"].harmful_flip_rate == 0
    assert stats["all"].pairs == 3 and stats["all"].clean_accuracy == pytest.approx(2 / 3, abs=1e-4)
    result = runner.invoke(app, ["advfact", "flips", str(clean_run), str(attacked)])
    assert result.exit_code == 0 and "harmful" in result.output


async def test_advfact_rewrites_that_drop_the_claim_are_asked_again(toe_cli):
    from veracity.evaluation.advfact import BuildOptions, build_advfact

    data, _ = toe_cli
    llm = advfact_llm()
    off_topic = json.dumps({"narrative": "The weather in the capital was mild and sunny all week."})
    llm.on(".", off_topic, tag="advfact:rewrite", times=1)
    llm._rules.insert(0, llm._rules.pop())  # the off-topic reply comes first
    manifest = await build_advfact(llm, BuildOptions(n=1, passages_per_claim=2), data_dir=data)
    assert manifest["claims"] == 1
    rewrites = llm.calls_tagged("advfact:rewrite")
    assert len(rewrites) == 2 and "drops the statement" in rewrites[1].messages[-1].content


async def test_advfact_leaves_out_claims_whose_replies_stay_invalid(toe_cli):
    from veracity.evaluation.advfact import BuildOptions, build_advfact

    data, _ = toe_cli
    llm = advfact_llm()
    llm._rules[1].reply = json.dumps({"passages": ["too short"] * 2})
    manifest = await build_advfact(llm, BuildOptions(n=2, passages_per_claim=2), data_dir=data)
    assert manifest["claims"] == 0 and len(manifest["failed"]) == 2
    assert "Passages" in next(iter(manifest["failed"].values()))


async def test_training_never_shows_a_claim_its_own_fact_check_record(toe_cli, tmp_path):
    from veracity.datasets import get_dataset
    from veracity.retrieval.local.corpus import LocalCorpus

    data, _ = toe_cli
    liar = get_dataset("liar")
    build_local_corpus("archive", liar.corpus(data), mode="bm25", indexes_dir=home_paths().indexes)
    claims = load_dataset("liar", "train", data, labels="true_uncertain_false")[:2]
    method = ToEMethod(
        toe_llm(PLAN), {"eval_net": {"epochs": 1}},
        sources={"factcheck": LocalCorpus("archive", indexes_dir=home_paths().indexes)},
    )  # fmt: skip
    trainer = ToETrainer.open(method, tmp_path / "ck")
    await collect(trainer, claims, liar.info, SPACE)
    for rec in trainer.records():
        tree = ArgumentTree.from_dict(rec["tree"])
        seen = {e.doc_id.split("#")[0] for n in tree.nodes.values() for e in n.evidence}
        assert seen and f"liar:{rec['id']}" not in seen  # others' records only
    # without the guards (a plain check) the same search does find the claim's own record
    hits = await LocalCorpus("archive", indexes_dir=home_paths().indexes).search(
        Query(text=claims[0].input.text, top_k=3)
    )
    assert f"liar:{claims[0].id}" in {h.id.split("#")[0] for h in hits}


def test_advfact_build_command(toe_cli, monkeypatch, tmp_path):
    data, _ = toe_cli
    llm = advfact_llm()
    monkeypatch.setattr("veracity.runtime.build_llm", lambda cfg, *a, **k: ManagedLLM(llm))
    monkeypatch.setattr("veracity.cli.methods.toe.ensure_model", lambda cfg: None)
    out = tmp_path / "adv"
    args = ["advfact", "build", "--n", "2", "--passages", "2", "--index", "adv2",
            "--data-dir", str(data), "--out", str(out)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "index adv2" in result.output and "claims left out" in result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["claims"] == 2 and manifest["options"]["passages_per_claim"] == 2
    bad = runner.invoke(app, ["advfact", "build", "--n", "500", "--data-dir", str(data),
                              "--out", str(out)])  # fmt: skip
    assert bad.exit_code == 2 and "false statements" in bad.output


async def test_advfact_rows_keep_the_two_attacks_apart(toe_cli):
    """Table II's AdvFact rows: rewritten claims meet clean evidence, original claims meet
    the poisoned passages, and the clean control meets neither attack."""
    from veracity.evaluation.advfact import BuildOptions, build_advfact
    from veracity.evaluation.experiment import experiment_dir, load_experiment
    from veracity.retrieval.local.corpus import LocalCorpus

    data, _ = toe_cli
    await build_advfact(advfact_llm(), BuildOptions(n=3, passages_per_claim=2), data_dir=data)
    exp = load_experiment(experiment_dir() / "toe_table2.yaml")
    every = {v: exp.with_variant(v) for v in exp.variants if exp.variants[v].dataset == "advfact"}
    attack = {"fakegpt": ("fakegpt", "advfact-clean"), "poisonedrag": ("poisonedrag", "advfact")}
    attack["clean"] = ("clean", "advfact-clean")
    # every AdvFact row, ToE's and each baseline's, meets the attack its name says
    for variant, cfg in every.items():
        assert (cfg.split, cfg.sources["web"]["index"]) == attack[variant.rsplit("_", 1)[1]]
    assert {f"{m}_advfact_fakegpt" for m in ("steel", "defgen", "afacta")} <= set(every)
    rows = {v: every[v] for v in ("advfact_fakegpt", "advfact_poisonedrag", "advfact_clean")}
    for variant, cfg in rows.items():
        examples = load_dataset("advfact", cfg.split)
        assert len(examples) == 3
        index = LocalCorpus(cfg.sources["web"]["index"], indexes_dir=home_paths().indexes)
        poisoned = 0
        for e in examples:
            rewritten = e.input.text != e.metadata["original"] if e.metadata["original"] else False
            assert rewritten == (variant == "advfact_fakegpt")
            hits = await index.search(Query(text=e.input.text, top_k=3))
            poisoned += any(h.id.startswith("poison:") for h in hits)
        assert poisoned == (3 if variant == "advfact_poisonedrag" else 0), variant
