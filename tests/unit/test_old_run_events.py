"""A run directory written before trace events became classes still reads, reports and
resumes (`tests/data/stored/direct_old_events`: `direct` on two toy examples with the
scripted model, written by the code of commit 7b41ca2, whose events were plain
``{kind, name, t, data}`` records checked against optional-field payload models)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from _eval_fixtures import scripted_llm
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.events import Decision, ModelCall, OtherEvent, Stage
from veracity.core.trace import event_sentence
from veracity.evaluation.store import RunStore
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM

OLD_RUN = Path(__file__).parents[1] / "data" / "stored" / "direct_old_events"
runner = CliRunner()


@pytest.fixture
def old_run(tmp_path: Path) -> Path:
    """A writable copy of the stored run (report and resume write into it)."""
    return Path(shutil.copytree(OLD_RUN, tmp_path / "run"))


def test_the_stored_events_read_back_as_their_classes(old_run):
    records = RunStore(old_run).read_predictions()
    assert [r.id for r in records] == ["t0", "t1"]
    events = records[0].verdict.trace.events
    assert [type(e) for e in events] == [Stage, ModelCall, Decision, Stage]
    start, call, decision, end = events
    assert (start.step, end.step, end.data["label"]) == ("start", "end", "SUPPORTED")
    assert (call.prompt_tokens, call.completion_tokens, call.cached) == (104, 9, False)
    assert decision.label == "SUPPORTED" and decision.probabilities["SUPPORTED"] == 0.8
    assert event_sentence(end) == "Direct: end (label: SUPPORTED)"
    stored = json.loads((old_run / "predictions.jsonl").read_text().splitlines()[0])
    again = records[0].verdict.trace.model_dump(mode="json")["events"]
    assert again == stored["verdict"]["trace"]["events"]  # the JSON form is unchanged


def test_report_renders_the_old_run_with_its_trace_in_words(old_run):
    result = runner.invoke(app, ["report", str(old_run)])
    assert result.exit_code == 0, result.output
    text = (old_run / "report.html").read_text()  # the examples' traces are in the HTML
    assert "Direct: end (label: SUPPORTED)" in text
    assert "Direct decided SUPPORTED" in text


def test_an_unknown_or_ill_fitting_stored_event_renders_generically(old_run):
    path = old_run / "predictions.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    first["verdict"]["trace"]["events"][1:1] = [
        {"kind": "plugin_probe", "name": "my_plugin", "t": 0.01, "data": {"score": 0.5}},
        {"kind": "search", "name": "wiki", "t": 0.02, "data": {"results": ["a"]}},  # no cached
    ]
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    events = RunStore(old_run).read_predictions()[0].verdict.trace.events
    probe, search = events[1], events[2]
    assert isinstance(probe, OtherEvent) and isinstance(search, OtherEvent)
    assert event_sentence(probe) == "Plugin probe from my_plugin: score: 0.5"
    assert event_sentence(search) == "Searched wiki: 1 result"  # its kind's sentence still
    result = runner.invoke(app, ["report", str(old_run)])
    assert result.exit_code == 0, result.output
    assert "Plugin probe from my_plugin: score: 0.5" in (old_run / "report.html").read_text()


def test_the_old_run_resumes_with_nothing_left_to_do(old_run, tmp_path, monkeypatch):
    model = scripted_llm()

    def build_llm(cfg, *, cache_path=None, progress=None, **_paths):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    args = ["eval", "--data-dir", str(tmp_path), "--no-progress", "--out", str(old_run)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "2 already done" in result.output
    assert model.calls == []
