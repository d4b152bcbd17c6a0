"""`veracity doctor`: findings for a healthy and for a broken environment."""

from __future__ import annotations

import json
from collections import namedtuple

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.doctor import diagnose
from veracity.runtime.home import home_paths
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

    def search(name, options):
        seen.append((name, options))
        raise OSError("no route")

    cfg = RunConfig(sources={"wikipedia": {}})
    finding = by_check(diagnose(cfg, search=search))["source wikipedia"]
    assert finding.status == "fail" and seen == [("wikipedia", {})]
    assert (
        finding.detail
        == "https://en.wikipedia.org/w/api.php: test search failed: OSError: no route"
    )


def test_json_output():
    result = runner.invoke(app, ["doctor", "--offline", "--json"])
    assert result.exit_code in (0, 1)
    checks = {f["check"] for f in json.loads(result.stdout)}
    assert "disk" in checks and "model" in checks


# ----------------------------------------------------------- sources, probed by a search


@pytest.fixture
def live(monkeypatch):
    """Default sources may go live (VERACITY_OFFLINE unset); answers are recorded."""
    from _offline_world import recorded_network

    monkeypatch.delenv("VERACITY_OFFLINE", raising=False)
    with recorded_network(monkeypatch) as router:
        yield router


def test_each_web_engine_runs_a_test_search_that_answers(live):
    found = by_check(diagnose())
    engine = found["web search duckduckgo"]
    assert engine.status == "ok" and "a test search answered (" in engine.detail
    assert found["web engines"].status == "ok"
    assert found["web engines"].detail == "answered a test search: duckduckgo"


def test_a_web_engine_whose_search_fails_is_reported_failed_with_the_error(live, monkeypatch):
    import ddgs
    from ddgs.exceptions import DDGSException

    class Unreachable:
        def __init__(self, *args, **kwargs):
            pass

        def text(self, query, **kwargs):
            raise DDGSException("error resolving DNS")

    monkeypatch.setattr(ddgs, "DDGS", Unreachable)
    found = by_check(diagnose())
    engine = found["web search duckduckgo"]
    assert engine.status == "fail"
    assert "SourceUnreachable: duckduckgo: ddgs failed: error resolving DNS" in engine.detail
    assert "veracity index build" in engine.fix
    summary = found["web engines"]
    assert summary.status == "fail" and "none answered a test search" in summary.detail
    result = runner.invoke(app, ["doctor", "--json"])
    assert result.exit_code == 1
    rows = {f["check"]: f for f in json.loads(result.stdout)}
    assert rows["web search duckduckgo"]["status"] == "fail"


def test_a_search_that_hangs_fails_after_the_time_limit(live):
    def hangs(name, options):
        raise TimeoutError

    engine = by_check(diagnose(search=hangs))["web search duckduckgo"]
    assert engine.status == "fail" and "TimeoutError: no answer in 8 s" in engine.detail


def test_offline_default_engines_are_not_probed(monkeypatch):
    calls = []

    def search(name, options):
        calls.append(name)
        return 1

    monkeypatch.setenv("VERACITY_OFFLINE", "1")
    assert by_check(diagnose(search=search))["web search duckduckgo"].detail == (
        "not probed (VERACITY_OFFLINE is set)"
    )
    flag = by_check(diagnose(network=False, search=search))["web search duckduckgo"]
    assert flag.status == "skipped" and flag.detail == "not probed (--offline)" and calls == []


def test_a_configured_source_is_probed_by_a_search(live):
    cfg = RunConfig(sources={"wikipedia": {}})
    finding = by_check(diagnose(cfg))["source wikipedia"]
    assert finding.status == "ok"
    assert finding.detail.startswith("https://en.wikipedia.org/w/api.php: a test search answered")


def test_a_configured_source_whose_search_fails_says_why(monkeypatch):
    import httpx
    import respx

    with respx.mock() as router:
        router.route(host="en.wikipedia.org").mock(side_effect=httpx.ConnectError("refused"))
        finding = by_check(diagnose(RunConfig(sources={"wikipedia": {}})))["source wikipedia"]
    assert finding.status == "fail"
    assert "test search failed: SourceUnreachable: wikipedia: cannot reach" in finding.detail


def test_the_default_index_is_reported_with_its_size_or_how_to_build_it():
    from veracity.core.types import Document
    from veracity.retrieval.local.corpus import build_local_corpus

    missing = by_check(diagnose(network=False))["default index"]
    assert missing.status == "warn" and "not built" in missing.detail
    assert missing.fix.startswith("veracity index build ./my-docs")
    docs = [Document(id=f"d{i}", text=f"Passage number {i} about councils.") for i in range(3)]
    build_local_corpus("default", docs, mode="bm25", indexes_dir=home_paths().indexes)
    built = by_check(diagnose(network=False))["default index"]
    assert built.status == "ok" and built.detail.startswith("3 documents (3 passages, bm25)")
