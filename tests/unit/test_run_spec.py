"""`RunSpec`: the effective run resolved once (precedence, typed method and backend
options, the label space), recorded in run directories and run again with ``--spec``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from _eval_fixtures import scripted_llm
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.config import DEFAULT_MODEL, RunConfig
from veracity.core.errors import ConfigError, EvalError
from veracity.evaluation.store import RunStore
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.llm.embedded import EmbeddedOptions
from veracity.llm.openai_compat import EndpointOptions
from veracity.runtime import resolve_spec, spec_of
from veracity.runtime.provenance import source_revision
from veracity.runtime.spec import RunSpec, read_spec

STORED = Path(__file__).parents[1] / "data" / "stored" / "direct_old_events"
runner = CliRunner()

# The precedence, as tested: command-line flags > run file > environment > defaults.
# Each row: environment, the file's `llm:` section (None: no file), flags' `llm:` keys,
# and the resolved backend, model, cache mode, LLM concurrency and llama.cpp threads.
ENV_OFF = {"VERACITY_CACHE_MODE": "off", "VERACITY_MAX_CONCURRENCY": "1", "VERACITY_THREADS": "1"}
ENDPOINT = {"VERACITY_BASE_URL": "http://env.example/v1", "VERACITY_MODEL": "env-model"}
PRECEDENCE = [
    ("defaults", {}, None, None, ("embedded", DEFAULT_MODEL, "auto", 4, None)),
    ("environment", ENV_OFF, None, None, ("embedded", DEFAULT_MODEL, "off", 1, 1)),
    # the case: a file that names its backend keeps the environment's settings
    ("file names backend", ENV_OFF, {"backend": "embedded"}, None,
     ("embedded", DEFAULT_MODEL, "off", 1, 1)),
    ("file without backend", ENV_OFF, {"model": "m.gguf"}, None,
     ("embedded", "m.gguf", "off", 1, 1)),
    ("file over environment", ENV_OFF, {"backend": "embedded", "cache_mode": "record",
     "max_concurrency": 3}, None, ("embedded", DEFAULT_MODEL, "record", 3, 1)),
    ("flags over file", ENV_OFF, {"cache_mode": "record", "n_threads": 2},
     {"n_threads": 3, "max_concurrency": 2}, ("embedded", DEFAULT_MODEL, "record", 2, 3)),
    ("environment endpoint", ENDPOINT, None, None, ("openai", "env-model", "auto", 4, None)),
    # a file's own backend takes no model or endpoint from the environment, the rest still
    ("file backend drops env endpoint", {**ENDPOINT, **ENV_OFF}, {"backend": "embedded"},
     None, ("embedded", DEFAULT_MODEL, "off", 1, 1)),
    ("flag endpoint over file", ENV_OFF, {"backend": "embedded"},
     {"base_url": "http://flag.example/v1", "model": "f"}, ("openai", "f", "off", 1, None)),
]  # fmt: skip


@pytest.mark.parametrize(
    "env, file_llm, flag_llm, expected", [row[1:] for row in PRECEDENCE],
    ids=[row[0] for row in PRECEDENCE],
)  # fmt: skip
def test_precedence_flags_file_environment_defaults(
    tmp_path, monkeypatch, env, file_llm, flag_llm, expected
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = None
    if file_llm is not None:
        path = tmp_path / "run.yaml"
        path.write_text(yaml.safe_dump({"method": "direct", "llm": file_llm}))
    flags = {"llm": flag_llm} if flag_llm else None
    spec = resolve_spec(path, flags=flags)
    threads = getattr(spec.llm.options, "n_threads", None)
    got = (spec.llm.backend, spec.llm.model, spec.llm.cache_mode, spec.llm.max_concurrency)
    assert (*got, threads) == expected


def test_backend_defaults_are_written_once_in_its_options_model():
    spec = spec_of(RunConfig())
    assert spec.llm.options == EmbeddedOptions()  # every default from the one model
    assert spec.llm.options.n_ctx == 8192 and spec.llm.options.repeat_penalty == 1.1
    endpoint = spec_of(RunConfig.model_validate({"llm": {"base_url": "http://x/v1"}}))
    assert isinstance(endpoint.llm.options, EndpointOptions)
    assert endpoint.llm.options.repeat_penalty == 1.1


def test_an_option_of_another_backend_is_refused_with_the_backends_options():
    cfg = RunConfig.model_validate({"llm": {"base_url": "http://x/v1", "n_ctx": 4096}})
    with pytest.raises(ConfigError, match=r"n_ctx: not an option of the 'openai' backend.*"):
        spec_of(cfg)
    with pytest.raises(ConfigError, match="poll"):
        spec_of(RunConfig.model_validate({"llm": {"poll": 101}}))


def test_method_config_is_typed_by_the_methods_own_class_and_lists_its_keys():
    spec = spec_of(RunConfig.model_validate({"method": "rag", "method_config": {"top_k": 3}}))
    assert type(spec.method_config).__name__ == "RagConfig" and spec.method_config.top_k == 3
    bad = RunConfig.model_validate({"method": "rag", "method_config": {"topk": 3}})
    with pytest.raises(ConfigError) as err:
        spec_of(bad)
    assert "topk" in str(err.value) and "rag takes:" in str(err.value) and "top_k" in str(err.value)
    with pytest.raises(ConfigError, match="unknown method 'nope'"):
        spec_of(RunConfig(method="nope"))


def test_the_label_space_is_resolved_once():
    # a dataset space the method answers in is used
    assert spec_of(RunConfig(), prefer_labels="supported_refuted").labels == ("supported_refuted")
    # a method with fixed spaces gets its default, and a note says so (no silent fallback)
    radar = spec_of(RunConfig(method="radar"), prefer_labels="supported_refuted")
    assert radar.labels == "true_half_false" and "supported_refuted" in radar.labels_note
    # a space that is not registered is an error, never the method's default
    with pytest.raises(ConfigError, match="labels"):
        spec_of(RunConfig(), prefer_labels="no_such_space")
    with pytest.raises(ConfigError, match="radar works in"):
        spec_of(RunConfig(method="radar", labels="supported_refuted"))


def test_given_evidence_is_read_from_the_typed_method_config(tmp_path):
    from veracity.evaluation.prepare import prepare_run

    cfg = RunConfig.model_validate(
        {"method": "radar", "method_config": {"evidence": "given"}, "dataset": "toy_eval"}
    )
    assert spec_of(cfg).method_config.needs_given_evidence
    assert not spec_of(RunConfig(method="radar")).method_config.needs_given_evidence
    with pytest.raises(EvalError, match="--gold-evidence"):
        prepare_run(cfg, tmp_path / "run", llm=scripted_llm())


@pytest.mark.parametrize(
    ("llm", "key", "value"),
    [
        ({"slot_wait_chars": 0}, "slot_wait_chars", 0),  # embedded: never wait for a slot
        ({"base_url": "http://127.0.0.1:8080/v1", "slots": 2}, "slots", 2),
        ({"provider": "vllm", "slot_cache": True}, "slot_cache", True),
    ],
)
def test_slot_options_in_a_run_file_reach_the_backend_and_round_trip(llm, key, value):
    spec = spec_of(RunConfig.model_validate({"llm": llm}))
    assert getattr(spec.llm.options, key) == value
    assert RunSpec.from_json(json.loads(json.dumps(spec.model_dump(mode="json")))) == spec
    with pytest.raises(ConfigError, match="slot_wait_chars"):
        spec_of(RunConfig.model_validate({"llm": {"slot_wait_chars": -1}}))


def test_a_spec_round_trips_through_json():
    cfg = RunConfig.model_validate(
        {"method": "rag", "method_config": {"top_k": 2}, "labels": "supported_refuted",
         "llm": {"n_threads": 2, "cache_mode": "record"}, "seed": 7}
    )  # fmt: skip
    spec = spec_of(cfg)
    again = RunSpec.from_json(json.loads(json.dumps(spec.model_dump(mode="json"))))
    assert again == spec
    assert (
        spec.to_config().method_config["top_k"] == 2
        and "labels" not in spec.to_config().method_config
    )


def test_source_revision_reads_git_without_a_process(tmp_path):
    pkg = tmp_path / "src" / "veracity" / "runtime"
    pkg.mkdir(parents=True)
    assert source_revision(pkg / "provenance.py") is None  # no checkout: absent, no error
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text("# pack-refs\n" + "a" * 40 + " refs/heads/main\n")
    assert source_revision(pkg / "provenance.py") == "a" * 40
    (git / "refs" / "heads" / "main").write_text("b" * 40 + "\n")
    assert source_revision(pkg / "provenance.py") == "b" * 40


@pytest.fixture
def scripted(monkeypatch):
    """Every model the CLI builds is one scripted model, cached in the run directory."""
    model = scripted_llm()

    def build_llm(cfg, *, cache_path=None, **_):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    return model


def _eval(tmp_path, *args):
    result = runner.invoke(app, ["eval", "--data-dir", str(tmp_path), "--no-progress", *args])
    assert result.exit_code == 0, result.output
    return result


def _labels(run_dir: Path) -> dict[str, str | None]:
    return {r.id: r.predicted for r in RunStore(run_dir).read_predictions()}


def test_eval_records_the_spec_and_runs_it_again(tmp_path, scripted):
    first = tmp_path / "first"
    _eval(tmp_path, "--method", "direct", "--dataset", "toy_eval", "--limit", "4",
          "--seed", "3", "--set", "temperature=0.0", "--out", str(first))  # fmt: skip
    record = json.loads((first / "run.json").read_text())
    assert record["format"] == 1 and record["config"]["method_config"] == {"temperature": 0.0}
    assert not any((first / name).exists() for name in ("config.yaml", "spec.json", "prompts.json"))
    spec = record["spec"]
    assert spec["method"] == "direct" and spec["labels"] == "supported_refuted"
    assert spec["method_config"]["temperature"] == 0.0 and spec["seed"] == 3
    assert spec["llm"]["options"]["n_ctx"] == 8192  # the effective options, defaults filled
    assert record["veracity"] and record["prompt_hashes"]
    assert record.get("source_revision") == source_revision()  # this checkout's commit
    # the data directory it names is outside the run directory: the caller gives its own
    assert read_spec(first, given={"data_dir": str(tmp_path)}).seed == 3

    second = tmp_path / "second"
    calls = len(scripted.calls)
    _eval(tmp_path, "--spec", str(first), "--out", str(second))
    assert len(scripted.calls) == calls + 4  # checked again, not resumed from `first`
    assert _labels(second) == _labels(first) and len(_labels(first)) == 4
    assert json.loads((second / "run.json").read_text())["spec"] == spec


def test_spec_refuses_a_directory_without_one_and_a_config_beside_it(tmp_path, scripted):
    result = runner.invoke(app, ["eval", "--spec", str(tmp_path), "--no-progress"])
    assert result.exit_code == 2 and "records no run spec" in result.output
    cfg = tmp_path / "c.yaml"
    cfg.write_text("method: direct\n")
    result = runner.invoke(app, ["eval", "--spec", str(tmp_path), "--config", str(cfg)])
    assert result.exit_code == 2 and "--spec" in result.output


def test_a_run_directory_written_before_specs_resumes_and_reports(tmp_path, scripted):
    old = tmp_path / "old"
    shutil.copytree(STORED, old)
    assert not (old / "spec.json").exists()
    cfg = yaml.safe_load((old / "config.yaml").read_text())
    assert cfg["llm"]["n_ctx"] == 8192  # the old flat llm section, every field written
    result = _eval(tmp_path, "--out", str(old))  # resume from its own config
    assert "already done" in result.output
    # the resumed session records the run once, spec included, in place of the old files
    assert json.loads((old / "run.json").read_text())["spec"]["method"] == "direct"
    assert not (old / "config.yaml").exists() and not (old / "prompts.json").exists()
    report = runner.invoke(app, ["report", str(old)])
    assert report.exit_code == 0, report.output
