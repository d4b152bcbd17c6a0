"""`veracity doctor`: findings for a healthy and for a broken environment."""

from __future__ import annotations

import json
from collections import namedtuple

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.config import RunConfig
from veracity.doctor import diagnose
from veracity.testing.fake_openai import FakeOpenAIServer

runner = CliRunner()


def by_check(findings):
    return {f.check: f for f in findings}


def test_offline_defaults_report_every_area():
    found = by_check(diagnose(network=False))
    assert {"python", "home", "caches", "disk", "benchmark data", "model", "web engines",
            "optional packages"} <= set(found)  # fmt: skip
    assert found["home"].status == "ok" and found["caches"].status == "ok"


def test_a_home_that_cannot_be_written_fails_with_a_fix(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("VERACITY_HOME", str(blocker / "home"))
    result = runner.invoke(app, ["doctor", "--offline"], env={"COLUMNS": "200"})
    assert result.exit_code == 1
    assert "fail" in result.output and "VERACITY_HOME" in result.output


def test_low_disk_space_fails(monkeypatch):
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr("veracity.doctor.shutil.disk_usage", lambda p: usage(10, 10, 10))
    assert by_check(diagnose(network=False))["disk"].status == "fail"


def test_a_missing_model_says_how_to_pull_it(tmp_path, monkeypatch):
    monkeypatch.setenv("VERACITY_MODELS_DIR", str(tmp_path / "no-models"))
    model = by_check(diagnose(RunConfig(llm={"auto_pull": False}), network=False))["model"]
    assert model.status == "fail" and model.fix == "veracity models pull smollm2-135m"


@pytest.mark.server
def test_an_endpoint_is_probed_with_its_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "right-key")
    with FakeOpenAIServer(api_key="right-key") as server:
        cfg = RunConfig(llm={"base_url": server.url, "model": "m"})
        found = by_check(diagnose(cfg))
        assert found["model"].status == "ok" and found["API key"].status == "ok"
        monkeypatch.setenv("OPENAI_API_KEY", "wrong-key")
        rejected = by_check(diagnose(cfg))["model"]
        assert rejected.status == "fail" and "OPENAI_API_KEY" in rejected.fix
        url = server.url
    gone = by_check(diagnose(RunConfig(llm={"base_url": url, "model": "m"})))["model"]
    assert gone.status == "fail" and "unreachable" in gone.detail


def test_a_source_without_its_key_fails_naming_the_variable(monkeypatch):
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    cfg = RunConfig(sources={"web": {"type": "brave"}})
    finding = by_check(diagnose(cfg, network=False))["source web"]
    assert finding.status == "fail" and "BRAVE_API_KEY" in finding.detail


def test_sources_are_probed_where_they_live(monkeypatch):
    seen = []

    def probe(url, headers):
        seen.append(url)
        raise OSError("no route")

    cfg = RunConfig(sources={"wikipedia": {}})
    finding = by_check(diagnose(cfg, probe=probe))["source wikipedia"]
    assert finding.status == "fail" and seen == ["https://en.wikipedia.org/w/api.php"]


def test_json_output():
    result = runner.invoke(app, ["doctor", "--offline", "--json"])
    assert result.exit_code in (0, 1)
    checks = {f["check"] for f in json.loads(result.stdout)}
    assert "disk" in checks and "model" in checks
