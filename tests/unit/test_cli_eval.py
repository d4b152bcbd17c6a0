"""`veracity eval | report | compare` through the command line (scripted model)."""

from __future__ import annotations

import json

import pytest
import yaml
from _eval_fixtures import SpecialMethod, scripted_llm
from typer.testing import CliRunner

from veracity.cli import app
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM

runner = CliRunner()


@pytest.fixture
def llm(monkeypatch):
    """Every model the CLI builds is one scripted model, cached in the run directory."""
    model = scripted_llm()

    def build_llm(cfg, *, cache_path=None, progress=None, **_paths):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    return model


def _eval(tmp_path, *args):
    base = ["eval", "--data-dir", str(tmp_path), "--no-progress"]
    return runner.invoke(app, [*base, *args])


def test_eval_writes_a_run_and_resumes(tmp_path, llm):
    out = tmp_path / "run"
    result = _eval(tmp_path, "--method", "direct", "--dataset", "toy_eval", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "accuracy" in result.output and "0.750" in result.output
    assert "veracity report" in result.output
    for name in ("run.json", "predictions.jsonl", "metrics.json", "usage.json"):
        assert (out / name).is_file()
    saved = json.loads((out / "run.json").read_text())["config"]
    assert saved["llm"]["cache_mode"] == "record"  # kept for replay
    assert len(ResponseCache(out / "cache" / "llm.sqlite")) == 8
    assert len(llm.calls) == 8

    again = _eval(tmp_path, "--out", str(out))  # resume from the run's own config
    assert again.exit_code == 0, again.output
    assert "8 already done" in again.output
    assert len(llm.calls) == 8


def test_ctrl_c_says_how_to_resume(tmp_path, llm, monkeypatch):
    monkeypatch.setattr(SpecialMethod, "interrupt_on", "t3")
    out = tmp_path / "run"
    args = ["--method", "toy_special", "--dataset", "toy_eval", "--out", str(out)]
    args += ["--concurrency", "1"]
    result = _eval(tmp_path, *args)
    assert result.exit_code == 130
    assert "3 of 8 examples are saved" in result.output
    assert f"veracity eval --out {out}" in result.output
    monkeypatch.setattr(SpecialMethod, "interrupt_on", None)
    result = _eval(tmp_path, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 8


def test_unregistered_method_and_unmappable_labels_fail_before_running(tmp_path, llm):
    result = _eval(tmp_path, "--method", "no_such_method", "--dataset", "toy_eval")
    assert result.exit_code == 2
    assert "unknown method 'no_such_method'" in result.output
    result = _eval(tmp_path, "--dataset", "toy_liar", "--labels", "rumor", "--out", str(tmp_path))
    assert result.exit_code == 2 and "no label map" in result.output
    assert not llm.calls


def test_experiment_config_variant(tmp_path, llm):
    cfg = tmp_path / "exp.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "name": "toy_exp",
                "method": "direct",
                "dataset": "toy_eval",
                "variants": {"small": {"limit": 2, "split": "test"}},
            }
        )
    )
    out = tmp_path / "run"
    result = _eval(tmp_path, "--config", str(cfg), "--variant", "small", "--out", str(out))
    assert result.exit_code == 0, result.output
    saved = json.loads((out / "run.json").read_text())["config"]
    assert (saved["variant"], saved["split"], saved["limit"]) == ("small", "test", 2)
    bad = _eval(tmp_path, "--config", str(cfg), "--variant", "huge")
    assert bad.exit_code == 2 and "no variant 'huge'" in bad.output


def test_report_and_compare_commands(tmp_path, llm):
    a, b = tmp_path / "a", tmp_path / "b"
    assert _eval(tmp_path, "--dataset", "toy_eval", "--out", str(a)).exit_code == 0
    args = ["--dataset", "toy_eval", "--method", "toy_special", "--out", str(b)]
    assert _eval(tmp_path, *args).exit_code == 0
    result = runner.invoke(app, ["report", str(a)])
    assert result.exit_code == 0, result.output
    assert (a / "report.html").is_file() and (a / "report.md").is_file()
    result = runner.invoke(app, ["compare", str(a), str(b), "--json", "--n-boot", "100"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert [r["method"] for r in data["runs"]] == ["direct", "toy_special"]
    assert data["paired"][0]["shared"] == 8
    missing = runner.invoke(app, ["report", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "not a run directory" in missing.output


def test_replay_reuses_recorded_responses_without_calling_the_model(tmp_path, llm):
    first, replay = tmp_path / "first", tmp_path / "replay"
    assert _eval(tmp_path, "--dataset", "toy_eval", "--out", str(first)).exit_code == 0
    calls = len(llm.calls)
    args = ["--config", str(first), "--replay-from", str(first)]  # a run directory's config
    result = _eval(tmp_path, *args, "--out", str(replay))
    assert result.exit_code == 0, result.output
    assert len(llm.calls) == calls  # every response came from the recorded cache
    saved = json.loads((replay / "run.json").read_text())["config"]
    assert saved["llm"]["cache_mode"] == "replay"

    def predictions(d):
        rows = [json.loads(x) for x in (d / "predictions.jsonl").read_text().splitlines()]
        return {r["id"]: r["predicted"] for r in rows}

    assert predictions(replay) == predictions(first)
    same = _eval(tmp_path, "--replay-from", str(first), "--out", str(first))
    assert same.exit_code == 2 and "another run directory" in same.output


def test_default_run_directory_is_stable_per_method_dataset_split_and_model():
    from veracity.cli.eval import default_out
    from veracity.evaluation.experiment import ExperimentConfig

    cfg = ExperimentConfig(method="direct", dataset="toy_eval", llm={"model": "Qwen/Qwen2.5-7B"})
    assert str(default_out(cfg)) == "runs/direct-toy_eval-dev-Qwen2.5-7B"  # first split
    named = ExperimentConfig(name="exp", variant=None, dataset="toy_eval", split="test")
    assert str(default_out(named)) == "runs/exp-toy_eval-test-smollm2-135m"


def test_progress_bar_shows_running_accuracy(tmp_path, llm):
    args = ["eval", "--data-dir", str(tmp_path), "--dataset", "toy_eval", "--out", str(tmp_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "8/8" in result.output and "acc 0.750" in result.output and "$0.0000" in result.output


def test_a_run_where_most_examples_fail_says_why_and_exits_non_zero(tmp_path, monkeypatch):
    from veracity.testing import ScriptedLLM, ScriptedReply

    broken = ScriptedLLM(default=ScriptedReply("I cannot answer in JSON."))
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda cfg, **kw: ManagedLLM(broken))
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    args = ["--method", "direct", "--dataset", "toy_eval", "--limit", "4"]
    result = _eval(tmp_path, *args, "--out", str(tmp_path / "run"))
    assert result.exit_code == 2, result.output
    assert "4 of 4 examples failed" in result.output
    assert "4 × " in result.output and "StructuredOutputError" in result.output
    assert "--retry-errors" in result.output


def test_a_run_with_few_failures_exits_zero(tmp_path, llm, monkeypatch):
    monkeypatch.setattr(SpecialMethod, "interrupt_on", None)
    args = ["--method", "toy_special", "--dataset", "toy_eval", "--out", str(tmp_path / "run")]
    result = _eval(tmp_path, *args)
    assert result.exit_code == 0, result.output
    assert "/ 1 / 1" in result.output or "crashed" in result.output  # some failed, not most
    assert "examples failed" not in result.output
