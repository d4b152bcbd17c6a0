"""One run record (issue 39, item 1): a run directory keeps the run once, in ``run.json``,
and resumes, reports and runs again from it; directories of older layouts still read.

``tests/data/old_run_acbda6b`` was written by veracity at commit acbda6b (``config.yaml``
+ ``spec.json`` + ``prompts.json``; its README says how); ``tests/data/stored/
direct_old_events`` is older still (``config.yaml`` only).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _eval_fixtures import scripted_llm  # registers the toy_eval dataset
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.errors import ConfigError, RunStoreError
from veracity.evaluation.report import load_run
from veracity.evaluation.store import RunStore
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.runtime.record import FORMAT, read_record
from veracity.runtime.spec import read_spec

DATA = Path(__file__).parents[1] / "data"
ACBDA6B = DATA / "old_run_acbda6b"
CONFIG_ONLY = DATA / "stored" / "direct_old_events"
LEGACY = ("config.yaml", "spec.json", "prompts.json")
runner = CliRunner()


@pytest.fixture
def scripted(monkeypatch):
    """Every model the CLI builds is one scripted model, cached in the run directory."""
    model = scripted_llm()

    def build_llm(cfg, *, cache_path=None, **_):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    return model


@pytest.fixture
def old(tmp_path) -> Path:
    """A copy of the run directory acbda6b wrote."""
    return Path(shutil.copytree(ACBDA6B, tmp_path / "old", ignore=shutil.ignore_patterns("*.md")))


def _eval(tmp_path, *args):
    result = runner.invoke(app, ["eval", "--data-dir", str(tmp_path), "--no-progress", *args])
    assert result.exit_code == 0, result.output
    return result


def test_a_directory_of_acbda6b_reads_as_one_record(old):
    record = read_record(old)
    assert record.layout == "config.yaml + spec.json" and record.path == old / "spec.json"
    assert record.source_revision.startswith("acbda6b") and record.veracity == "0.1.0"
    assert record.prompt_hashes == json.loads((old / "prompts.json").read_text())
    assert record.config["method_config"] == {"temperature": 0.0}  # as given
    assert record.spec["method_config"]["max_tokens"] == 64  # every default filled in
    assert RunStore(old).read_config() == record.config
    assert read_spec(old).seed == 3 and read_spec(old).limit == 3


def test_a_directory_of_acbda6b_resumes_reports_and_runs_again(tmp_path, old, scripted):
    result = _eval(tmp_path, "--out", str(old), "--limit", "4")  # one example more
    assert "3 already done" in result.output and len(scripted.calls) == 1
    # the resumed session keeps the run once: run.json in place of the three old files
    record = json.loads((old / "run.json").read_text())
    assert record["format"] == FORMAT and not any((old / n).exists() for n in LEGACY)
    assert record["config"]["limit"] == 4 and record["spec"]["limit"] == 4
    assert record["config"]["method_config"] == {"temperature": 0.0}
    assert len(RunStore(old).read_predictions()) == 4
    report = runner.invoke(app, ["report", str(old)])
    assert report.exit_code == 0, report.output
    assert (old / "report.md").is_file()
    assert load_run(old).metrics.n == 4

    again = tmp_path / "again"
    _eval(tmp_path, "--spec", str(old), "--out", str(again))
    assert read_record(again).spec == record["spec"]
    compared = runner.invoke(app, ["compare", str(old), str(again), "--json", "--n-boot", "10"])
    assert compared.exit_code == 0, compared.output
    assert json.loads(compared.output)["paired"][0]["shared"] == 4


def test_an_unresumed_directory_of_acbda6b_reports_and_runs_its_spec_again(tmp_path, old, scripted):
    assert load_run(old).metrics.n == 3
    _eval(tmp_path, "--spec", str(old), "--out", str(tmp_path / "again"))
    assert len(scripted.calls) == 3  # checked again, not resumed
    assert read_record(old).layout == "config.yaml + spec.json"  # only read, left as it was


def test_an_old_spec_that_reaches_outside_its_directory_still_needs_trust(tmp_path, old):
    data = json.loads((old / "spec.json").read_text())
    data["spec"]["data_dir"] = "/etc"
    (old / "spec.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="reaches outside its run directory"):
        read_spec(old)
    assert read_spec(old, trust=True).data_dir == "/etc"


def test_a_config_only_directory_says_how_to_run_it_again(tmp_path):
    old = Path(shutil.copytree(CONFIG_ONLY, tmp_path / "old"))
    with pytest.raises(ConfigError) as err:
        read_spec(old)
    # the file it names exists (an earlier message sent users to a config.json)
    assert f"--config {old / 'config.yaml'}" in str(err.value) and f"--out {old}" in str(err.value)
    assert (old / "config.yaml").is_file()


def test_a_record_of_a_newer_format_is_refused_with_what_to_do(tmp_path, old):
    (old / "run.json").write_text(json.dumps({"format": FORMAT + 1, "veracity": "9.0"}))
    with pytest.raises(RunStoreError, match=r"newer veracity \(9.0\).*upgrade"):
        read_record(old)
    report = runner.invoke(app, ["report", str(old)])
    assert report.exit_code == 2 and "upgrade veracity" in " ".join(report.output.split())
    (old / "run.json").write_text(json.dumps({"config": {}}))
    with pytest.raises(RunStoreError, match="no format number"):
        read_record(old)
