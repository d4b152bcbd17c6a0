"""ToE's experiment configs evaluate what the paper evaluated (issue 24, item 1): every ToE
row the paper reports is the model trained on LIAR train, loaded from its checkpoint with
the trained networks and the policy frozen; a missing checkpoint stops the run with the
exact `veracity train toe` command that makes it; untrained or online-adapting runs exist
only as variants named ``untrained…``. The configs are found by glob, so a ToE row added
later is held to the same rule."""

from __future__ import annotations

import json
import shlex

import pytest
from _offline_world import DATA_DIR, build_checkpoints, build_indexes, recorded_network
from _toe_script import toe_llm
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.errors import EvalError
from veracity.evaluation.experiment import experiment_dir, load_experiment
from veracity.evaluation.prepare import prepare_run
from veracity.evaluation.store import RunStore
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.methods.checkpoints import checkpoint_folder, read_manifest
from veracity.runtime.home import home_paths
from veracity.testing.schema import schema_llm

TOE_CONFIGS = sorted(experiment_dir().glob("toe_*.yaml"))
COMMAND = (
    "veracity train toe --dataset liar --split train --checkpoint liar "
    "--source factcheck=local:liar-archive"
)


def _toe_rows() -> list:
    rows = []
    for path in TOE_CONFIGS:
        exp = load_experiment(path)
        for variant in [None, *exp.variants]:
            if exp.with_variant(variant).method == "toe":  # not a baseline row
                rows.append(pytest.param(path, variant, id=f"{path.stem}:{variant or 'base'}"))
    return rows


ROWS = _toe_rows()


def _untrained(variant: str | None) -> bool:
    return bool(variant and variant.startswith("untrained"))


def _config(path, variant):
    return (
        load_experiment(path)
        .with_variant(variant)
        .model_copy(update={"limit": 1, "sample": False, "sample_per_class": None,
                            "repeats": 1, "concurrency": 1, "data_dir": str(DATA_DIR)})
    )  # fmt: skip


@pytest.fixture
def offline_world(monkeypatch):
    with recorded_network(monkeypatch) as router:
        yield router


def test_the_toe_configs_have_trained_rows_and_named_untrained_ones():
    assert {p.stem for p in TOE_CONFIGS} == {"toe_table2", "toe_table3", "toe_figure5"}
    names = [p.values[1] for p in ROWS]
    assert sum(not _untrained(n) for n in names) == 13  # Table II 7, Table III 5, Figure 5
    assert "untrained_online" in names  # online adaptation only under its own name
    for path in TOE_CONFIGS:
        for name, variant in load_experiment(path).variants.items():
            if _untrained(name):
                assert variant.description.startswith("ours, not the paper's")


@pytest.mark.parametrize(("path", "variant"), ROWS)
def test_every_toe_row_resolves_as_the_paper_ran_it(path, variant, offline_world, tmp_path):
    cfg = _config(path, variant)
    build_indexes(cfg)
    build_checkpoints(cfg)
    run = prepare_run(cfg, tmp_path / "run", llm=schema_llm())
    run.store.release()
    method = run.method
    mcfg = method.config
    if _untrained(variant):
        assert mcfg.checkpoint is None and mcfg.trained_on is None
        assert (method.scorer, method.aggregator) == ("llm_judge", "rules")
        assert method.policy_mode() == "heuristic"  # the warm-up heuristic acts
        assert mcfg.freeze_policy == (variant != "untrained_online")
        return
    assert mcfg.checkpoint == "liar" and mcfg.freeze_policy
    assert mcfg.trained_on.model_dump() == {
        "dataset": "liar", "split": "train", "sources": ["factcheck=local:liar-archive"],
        "config": None, "limit": None,
    }  # fmt: skip
    folder = checkpoint_folder("toe", "liar", root=home_paths().checkpoints)
    assert method.models.folder == folder  # loaded from the checkpoint
    assert read_manifest(folder, "toe").data == {"dataset": "liar", "split": "train"}
    assert (method.scorer, method.aggregator) == ("network", "network")
    assert method.policy_mode() == "policy"  # the trained policy acts, frozen


@pytest.mark.parametrize(("path", "variant"), [r for r in ROWS if not _untrained(r.values[1])])
def test_a_missing_checkpoint_stops_the_run_with_the_command_that_makes_it(
    path, variant, offline_world, tmp_path
):
    cfg = _config(path, variant)
    build_indexes(cfg)
    with pytest.raises(EvalError) as caught:
        prepare_run(cfg, tmp_path / "run", llm=schema_llm())
    assert f"make it with: {COMMAND}" in str(caught.value)


@pytest.mark.parametrize(
    ("problem", "trained", "data"),
    [
        ("untrained eval_net and agg_net", {}, {"dataset": "liar", "split": "train"}),
        ("trained on politifact_hidden/test", {"eval_net": True, "agg_net": True, "policy": 1},
         {"dataset": "politifact_hidden", "split": "test"}),
        ("the policy was never updated", {"eval_net": True, "agg_net": True},
         {"dataset": "liar", "split": "train"}),
    ],
)  # fmt: skip
def test_an_unfinished_checkpoint_is_refused(problem, trained, data, offline_world, tmp_path):
    from veracity.methods.toe import ToEConfig
    from veracity.methods.toe.models import ToEModels

    cfg = _config(experiment_dir() / "toe_table2.yaml", None)
    build_indexes(cfg)
    models = ToEModels(ToEConfig(**cfg.method_config))
    models.trained = {
        "eval_net": bool(trained.get("eval_net")),
        "agg_net": bool(trained.get("agg_net")),
    }
    models.policy.updates = int(trained.get("policy", 0))
    models.save(checkpoint_folder("toe", "liar", root=home_paths().checkpoints), data=data)
    with pytest.raises(EvalError, match="is not a finished training on liar/train") as caught:
        prepare_run(cfg, tmp_path / "run", llm=schema_llm())
    assert problem in str(caught.value) and COMMAND in str(caught.value)


def test_trained_on_needs_a_frozen_policy_and_a_checkpoint():
    from veracity.methods.toe import ToEConfig

    for bad in ({"checkpoint": "liar"}, {"freeze_policy": True}):
        with pytest.raises(ValueError, match="needs checkpoint set and freeze_policy: true"):
            ToEConfig(trained_on={}, **bad)


def test_a_baseline_row_does_not_inherit_the_toe_settings():
    exp = load_experiment(experiment_dir() / "toe_table2.yaml")
    assert exp.method_config["checkpoint"] == "liar"
    assert exp.with_variant("direct").method_config == {}
    # Z-CoT stays zero-shot: cot reads the sources it is given unless told not to
    assert exp.with_variant("cot").method_config == {"evidence": "none"}


# --------------------------------------------------------------------------- end to end


def _liar(n: int, first_id: int) -> str:
    """Invented statements in LIAR's 14-column layout (no real claim)."""
    labels = ("false", "true", "half-true", "pants-fire", "mostly-true")
    rows = []
    for i in range(n):
        statement = f"The Brellin canal project number {i} cost {3 + i} million."
        meta = ["canals", "jane-doe", "mayor", "Oss", "none", "0", "1", "0", "0", "0"]
        cols = [f"{first_id + i}.json", labels[i % len(labels)], statement, *meta, "a speech"]
        rows.append("\t".join(cols))
    return "\n".join(rows) + "\n"


@pytest.fixture
def toe_world(tmp_path, monkeypatch):
    """The CLI with a scripted ToE model and an invented LIAR in VERACITY_DATA_DIR."""
    data = tmp_path / "data"
    (data / "liar").mkdir(parents=True)
    (data / "liar" / "train.tsv").write_text(_liar(10, 100))
    (data / "liar" / "valid.tsv").write_text(_liar(3, 900))
    monkeypatch.setenv("VERACITY_DATA_DIR", str(data))
    model = toe_llm({"n0": (0.4, 0.4), "*": (0.1, 0.9)})

    def build_llm(cfg=None, *, cache_path=None, progress=None, **kw):
        return ManagedLLM(model, cache=ResponseCache(tmp_path / "llm.sqlite", mode="off"))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    for where in ("veracity.cli.methods.toe", "veracity.cli.eval"):
        monkeypatch.setattr(f"{where}.ensure_model", lambda cfg: None)
    return tmp_path


def test_the_command_in_the_message_makes_the_checkpoint_the_run_accepts(toe_world):
    runner = CliRunner()
    table2 = str(experiment_dir() / "toe_table2.yaml")
    out = toe_world / "runs"
    evaluate = ["eval", "--config", table2, "--repeats", "1", "--limit", "2", "--out", str(out)]
    refused = runner.invoke(app, evaluate)
    assert refused.exit_code == 2 and COMMAND in refused.output
    index = ["index", "build", "--dataset", "liar", "--name", "liar-archive", "--mode", "bm25"]
    assert runner.invoke(app, index).exit_code == 0
    trained = runner.invoke(app, shlex.split(COMMAND)[1:])  # as printed, without `veracity`
    assert trained.exit_code == 0, trained.output
    manifest = read_manifest(checkpoint_folder("toe", "liar", root=home_paths().checkpoints), "toe")
    assert manifest.trained == {"eval_net": True, "agg_net": True, "policy": True}
    result = runner.invoke(app, evaluate)
    assert result.exit_code == 0, result.output
    records = RunStore(out).read_predictions()
    assert len(records) == 2
    for record in records:
        meta = record.verdict.metadata
        assert (meta["scorer"], meta["aggregator"], meta["checkpoint"]) == (
            "network", "network", "liar",
        )  # fmt: skip
        assert meta["policy"]["mode"] == "policy" and meta["policy"]["frozen"]
        assert meta["policy"]["updates_this_check"] == []
    config = json.loads(json.dumps(RunStore(out).read_config()))
    assert config["method_config"]["trained_on"]["dataset"] == "liar"
