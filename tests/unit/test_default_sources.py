"""Zero-config retrieval: a retrieving method given no sources gets defaults.

Online (the network probe answers — faked here) it searches keyless live sources, whose
answers come from recorded DuckDuckGo and Wikipedia responses; offline it searches the
default local corpus, or stops with one message giving the exact commands.
"""

from __future__ import annotations

import pytest
from _offline_world import DATA_DIR, FakeDDGS, recorded_network
from typer.testing import CliRunner

from veracity import api
from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError
from veracity.datasets import get_dataset
from veracity.llm.client import ManagedLLM
from veracity.retrieval import defaults
from veracity.retrieval.defaults import DEFAULT_INDEX, SourceNeed, default_sources
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import build_run, resolve_spec, with_default_sources
from veracity.runtime.home import home_paths, offline
from veracity.testing import ScriptedLLM, ScriptedReply

RAG_REPLY = '{"cited": [1], "label": "false"}'
WIKI = SourceNeed(
    "wiki", "encyclopedia", off={"use_wikipedia": False}, purpose="Wikipedia retrieval"
)


@pytest.fixture
def online(monkeypatch):
    """The network 'answers' (a faked probe); DuckDuckGo and Wikipedia are recorded."""
    monkeypatch.delenv("VERACITY_OFFLINE", raising=False)
    probes = []
    defaults.set_probe(lambda: probes.append(1) or True)
    with recorded_network(monkeypatch):
        yield probes
    defaults.set_probe(None)


@pytest.fixture
def default_corpus():
    docs = list(get_dataset("scifact").corpus(DATA_DIR))
    return build_local_corpus(DEFAULT_INDEX, docs, mode="bm25", indexes_dir=home_paths().indexes)


def scripted() -> ScriptedLLM:
    return ScriptedLLM(default=ScriptedReply(RAG_REPLY))


def test_online_needs_get_keyless_live_sources():
    needs = [SourceNeed("web"), WIKI]
    chosen = default_sources("zofia", needs, online=True, indexes_dir=home_paths().indexes)
    assert chosen.sources == {
        "web": {"type": "web", "engine": "auto"},
        "wiki": {"type": "wikipedia"},
    }
    assert chosen.method_config == {}
    assert "live sources" in chosen.notes[0]


def test_offline_without_the_default_corpus_gives_the_commands(tmp_path):
    with pytest.raises(ConfigError) as err:
        default_sources("rag", [SourceNeed("web")], online=False, indexes_dir=tmp_path)
    assert "veracity index build --dataset scifact" in str(err.value)
    assert "--source web=local:INDEX" in str(err.value)
    with pytest.raises(ConfigError, match="--source evidence=local:INDEX"):
        default_sources("radar", [SourceNeed("evidence")], online=False, indexes_dir=tmp_path)


def test_offline_uses_the_default_corpus_and_turns_off_wikipedia(default_corpus):
    needs = [SourceNeed("web"), WIKI]
    chosen = default_sources("zofia", needs, online=False, indexes_dir=home_paths().indexes)
    assert chosen.sources == {"web": {"type": "local", "index": DEFAULT_INDEX}}
    assert chosen.method_config == {"use_wikipedia": False}
    assert any("without Wikipedia retrieval" in n for n in chosen.notes)


def test_an_encyclopedia_the_method_cannot_do_without_is_refused_offline(default_corpus):
    with pytest.raises(ConfigError, match="--source wiki=TYPE"):
        default_sources(
            "m",
            [SourceNeed("wiki", "encyclopedia")],
            online=False,
            indexes_dir=home_paths().indexes,
        )


def test_probe_is_cached_and_the_offline_switch_skips_it(monkeypatch):
    calls = []
    defaults.set_probe(lambda: calls.append(1) or True)
    try:
        monkeypatch.delenv("VERACITY_OFFLINE", raising=False)
        assert not offline()
        assert defaults.network_available() and defaults.network_available()
        assert calls == [1]
        monkeypatch.setenv("VERACITY_OFFLINE", "1")  # read by the composition root only
        assert offline()
        assert not defaults.network_available(offline=offline()) and calls == [1]
    finally:
        defaults.set_probe(None)


def test_configured_sources_are_left_alone(online):
    cfg = RunConfig(method="rag", sources={"web": {"type": "local", "index": "mine"}})
    assert with_default_sources(cfg) == (cfg, [])
    assert with_default_sources(RunConfig(method="direct")) == (RunConfig(method="direct"), [])
    assert online == []  # no probe when no default is needed


def test_runtime_online_rag_searches_duckduckgo(online):
    run = build_run(resolve_spec(RunConfig(method="rag")), llm=scripted())
    assert run.spec.sources == {"web": {"type": "web", "engine": "auto"}}
    assert run.notes and "live sources" in run.notes[0]
    FakeDDGS.queries.clear()
    verdict = api.check("A synthetic abstract sentence.", "rag", llm=scripted())
    assert verdict.label == "false" and FakeDDGS.queries
    assert verdict.evidence and verdict.evidence[0].document.url


def test_runtime_online_zofia_gets_web_and_wikipedia(online):
    run = build_run(resolve_spec(RunConfig(method="zofia")), llm=scripted())
    assert {name: spec["type"] for name, spec in run.spec.sources.items()} == {
        "web": "web",
        "wikipedia": "wikipedia",
    }


def test_runtime_offline_radar_searches_the_default_corpus(default_corpus):
    run = build_run(resolve_spec(RunConfig(method="radar")), llm=scripted())
    assert run.spec.sources == {"evidence": {"type": "local", "index": DEFAULT_INDEX}}
    assert "default local corpus" in run.notes[0]


def test_runtime_offline_without_corpus_stops_with_the_commands():
    with pytest.raises(ConfigError, match="veracity index build --dataset"):
        build_run(resolve_spec(RunConfig(method="rag")), llm=scripted())


def test_python_api_offline_rag_cites_the_default_corpus(default_corpus):
    verdict = api.check("A synthetic abstract sentence.", "rag", llm=scripted())
    assert verdict.label == "false"
    assert verdict.evidence, "rag cited nothing from the default corpus"


@pytest.fixture
def cli_llm(monkeypatch):
    llm = scripted()
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda cfg=None, **kw: ManagedLLM(llm))
    monkeypatch.setattr("veracity.cli.check.ensure_model", lambda cfg: None)
    return llm


def test_cli_check_offline_without_corpus_says_how(cli_llm):
    result = CliRunner().invoke(app, ["check", "--method", "rag", "A synthetic abstract sentence."])
    assert result.exit_code != 0
    assert "veracity index build --dataset scifact" in result.output
    assert "Traceback" not in result.output


def test_cli_check_offline_picks_up_the_built_default_corpus(cli_llm, monkeypatch):
    monkeypatch.setenv("VERACITY_DATA_DIR", str(DATA_DIR))
    build = CliRunner().invoke(app, ["index", "build", "--dataset", "scifact", "--mode", "bm25"])
    assert build.exit_code == 0, build.output
    assert "default local corpus" in build.output
    result = CliRunner().invoke(app, ["check", "--method", "rag", "A synthetic abstract sentence."])
    assert result.exit_code == 0, result.output
    assert "default local corpus" in result.output


def test_the_choice_is_in_every_verdicts_trace(default_corpus):
    verdict = api.check("A synthetic abstract sentence.", "rag", llm=scripted())
    notes = [e.data["text"] for e in verdict.trace.events if e.kind == "note"]
    assert notes and "default local corpus" in notes[0]


def test_the_rest_api_builder_gets_the_same_defaults(default_corpus):
    from veracity.server.runs import RunBuilder
    from veracity.server.schemas import CheckRequest
    from veracity.server.settings import ServerSettings

    builder = RunBuilder(RunConfig(), ServerSettings(), llm=scripted())
    request = CheckRequest.model_validate(
        {"input": {"kind": "claim", "text": "A synthetic abstract sentence."}, "method": "rag"}
    )
    run = builder.build(request).run
    assert run.spec.sources == {"web": {"type": "local", "index": DEFAULT_INDEX}}
    assert run.notes and "default local corpus" in run.notes[0]


def test_cli_eval_offline_uses_the_default_corpus_or_says_how(tmp_path, monkeypatch):
    from veracity.testing.schema import schema_llm

    llm = schema_llm()
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda cfg=None, **kw: ManagedLLM(llm))
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    args = ["eval", "--method", "rag", "--dataset", "scifact", "--limit", "1", "--no-progress"]
    args += ["--data-dir", str(DATA_DIR), "--out", str(tmp_path / "run")]
    refused = CliRunner().invoke(app, args)
    assert refused.exit_code == 2 and "veracity index build --dataset scifact" in refused.output
    build_local_corpus(
        DEFAULT_INDEX,
        list(get_dataset("scifact").corpus(DATA_DIR)),
        mode="bm25",
        indexes_dir=home_paths().indexes,
    )
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "default local corpus" in result.output
