"""The spec is the only currency below the front ends (issue 39, item 1): a run is
resolved through one entry (`veracity.runtime.resolve_spec`), a built `Run` holds its spec
and nothing else of the run, the service resolves each distinct check's choices once, a
chosen model reaches the backend resolved (and is the model the run's spec names), and the
command line pulls a missing model before any backend is built."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.llm.client import ManagedLLM
from veracity.llm.options import LLMSpec
from veracity.runtime import Run, build_run, resolve_spec, service
from veracity.runtime.service import Veracity
from veracity.testing import ScriptedLLM, ScriptedReply

REPLY = ScriptedReply('{"label": "false"}', alternatives={"false": 0.8, "true": 0.2}, at="false")


@pytest.fixture
def factory(monkeypatch):
    """What reaches the model factory, in order, and a scripted model for each."""
    seen: list[object] = []

    def fake_build(llm=None, **kw):
        seen.append(llm)
        return ManagedLLM(ScriptedLLM(default=REPLY))

    monkeypatch.setattr("veracity.llm.factory.build_llm", fake_build)
    return seen


def test_one_entry_layers_the_file_the_variant_and_the_flags(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(
        "method: cot\nmethod_config: {temperature: 0.3}\n"
        "variants:\n  hot: {method_config: {temperature: 0.9}}\n"
    )
    spec = resolve_spec(path, flags={"labels": "true_false"}, variant="hot")
    assert spec.method == "cot" and spec.variant == "hot" and spec.labels == "true_false"
    assert spec.method_config.temperature == 0.9
    # the config it came from goes with it, out of its JSON and its equality
    assert spec.given is not None and spec.given.method_config == {"temperature": 0.9}
    assert "given" not in spec.model_dump(mode="json")
    assert spec == resolve_spec(spec.given)


def test_a_run_holds_its_spec_and_no_config(factory):
    run = build_run(resolve_spec(RunConfig(method="direct")))
    fields = {f.name for f in dataclasses.fields(Run)}
    assert "config" not in fields and run.spec.method == "direct"


def test_the_service_resolves_each_distinct_choice_once(monkeypatch, factory):
    calls = []
    real = service.resolve_spec

    def counting(*args, **kwargs):
        calls.append(kwargs.get("flags"))
        return real(*args, **kwargs)

    monkeypatch.setattr(service, "resolve_spec", counting)
    v = Veracity(RunConfig(method="direct"))
    for _ in range(3):
        v.plan("The Eiffel Tower is in Berlin.")
    assert len(calls) == 1  # the default choices: resolved once, not per plan
    for _ in range(2):
        v.plan("The Eiffel Tower is in Berlin.", labels="true_false")
    assert len(calls) == 2


def test_a_chosen_model_reaches_the_backend_resolved_and_is_the_runs_model(factory):
    v = Veracity(RunConfig(method="direct"), models=["other-model"])
    plan = v.plan("The Eiffel Tower is in Berlin.", model="other-model")
    assert plan.run.spec.llm.model == "other-model"
    assert all(isinstance(llm, LLMSpec) for llm in factory)
    assert [llm.model for llm in factory] == ["other-model"]


def test_check_pulls_a_missing_model_before_the_backend_is_built(monkeypatch, factory, tmp_path):
    monkeypatch.setenv("VERACITY_MODELS_DIR", str(tmp_path))  # the catalogue model is missing
    order: list[str] = []
    monkeypatch.setattr(
        "veracity.cli.check.ensure_model", lambda llm: order.append(f"pull {llm.model}")
    )
    real_build = service.build_llm

    def building(spec, *args, **kwargs):
        order.append(f"build {spec.llm.model}")
        return real_build(spec, *args, **kwargs)

    monkeypatch.setattr(service, "build_llm", building)
    result = CliRunner().invoke(app, ["check", "The Eiffel Tower is in Berlin.", "--json"])
    assert result.exit_code == 0, result.output
    assert order == ["pull smollm2-135m", "build smollm2-135m"]


def test_the_service_asks_for_a_pull_only_for_a_missing_catalogue_model(
    monkeypatch, factory, tmp_path
):
    """A model that is there, or is not the catalogue's, goes to no pull hook: the service
    decides what must be pulled, so the model travels no further than it must."""
    from veracity.llm.models import CATALOG, model_path

    monkeypatch.setenv("VERACITY_MODELS_DIR", str(tmp_path))
    model_path(CATALOG["smollm2-135m"], tmp_path).write_bytes(b"")  # downloaded
    asked: list[str] = []
    for model in ("/tmp/a-local-model.gguf", "smollm2-135m"):
        config = RunConfig(method="direct", llm={"model": model})
        Veracity(config, ready=lambda spec: asked.append(spec.llm.model)).llm()
    assert asked == []


def test_the_runtime_owns_the_evaluation_replay_policy():
    """`eval --replay-from` replays only: the runtime's evaluation config says so (the
    command rewrote the cache mode itself)."""
    from veracity.runtime import evaluation_config

    flags = {"method": "direct", "dataset": "x"}
    assert evaluation_config(None, None, None, flags, replay=True).llm.cache_mode == "replay"
    assert evaluation_config(None, None, None, flags).llm.cache_mode == "record"
