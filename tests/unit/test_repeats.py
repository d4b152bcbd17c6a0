"""Balanced samples (`sample_per_class`) and repeated runs (`repeats`)."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest
from _eval_fixtures import TOY, config, scripted_llm
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.errors import EvalError
from veracity.core.types import Claim
from veracity.datasets.base import Example
from veracity.evaluation.prepare import check_resumable, prepare_run, select_examples
from veracity.evaluation.repeats import Spread, plan_repeats, run_repeats, summarize_repeats
from veracity.evaluation.report import write_report
from veracity.evaluation.runner import run_session
from veracity.evaluation.store import RunStore
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM

GOLD = {i: gold for i, gold, _ in TOY}


def _examples(n_a: int, n_b: int) -> list[Example]:
    rows = [("a", "SUPPORTED")] * n_a + [("b", "REFUTED")] * n_b
    return [
        Example(id=f"{c}{k}", input=Claim(text="x"), label=label, label_space="supported_refuted")
        for k, (c, label) in enumerate(rows)
    ]


def test_balanced_sample_takes_n_per_class_seeded_in_dataset_order():
    examples = _examples(10, 3)
    pick = select_examples(examples, None, False, 7, per_class=2, class_of=lambda e: e.label)
    assert Counter(e.label for e in pick) == {"SUPPORTED": 2, "REFUTED": 2}
    assert [e.id for e in pick] == sorted((e.id for e in pick), key=lambda i: int(i[1:]))
    again = select_examples(examples, None, False, 7, per_class=2, class_of=lambda e: e.label)
    other = select_examples(examples, None, False, 8, per_class=2, class_of=lambda e: e.label)
    assert [e.id for e in pick] == [e.id for e in again] and pick != other
    # a class smaller than N is taken whole
    pick = select_examples(examples, None, False, 0, per_class=5, class_of=lambda e: e.label)
    assert Counter(e.label for e in pick) == {"SUPPORTED": 5, "REFUTED": 3}
    # with --limit, the balanced sample is drawn from the first `limit`
    pick = select_examples(examples, 6, False, 0, per_class=1, class_of=lambda e: e.label)
    assert [e.label for e in pick] == ["SUPPORTED"]


def test_prepare_balances_the_gold_classes_in_the_methods_space(tmp_path):
    cfg = config(tmp_path, sample_per_class=2, seed=3)
    run = prepare_run(cfg, tmp_path / "run", llm=scripted_llm())
    assert Counter(GOLD[e.id] for e in run.examples) == {"SUPPORTED": 2, "REFUTED": 2}
    # the seed decides the sample, so a resume with another seed is refused
    run.store.write_record(run.config.model_dump(mode="json"))
    with pytest.raises(EvalError, match="seed"):
        check_resumable(run.store, cfg.with_overrides({"seed": 4}))


def test_repeats_run_in_sub_directories_and_report_the_spread(tmp_path):
    cfg = config(tmp_path, sample_per_class=2, repeats=3, seed=10)
    out = tmp_path / "rep"
    summary = asyncio.run(run_repeats(cfg, out, llm=scripted_llm()))
    assert summary.finished == 3 and summary.seeds == [10, 11, 12] and summary.n == [4, 4, 4]
    assert summary.runs == ["repeat-1", "repeat-2", "repeat-3"]
    acc = summary.metrics["accuracy"]
    assert acc.min <= acc.q1 <= acc.median <= acc.q3 <= acc.max and len(acc.values) == 3
    assert {"macro_f1", "f1:SUPPORTED", "tokens_per_example"} <= set(summary.metrics)
    saved = json.loads((out / "repeats.json").read_text())
    assert saved["metrics"]["accuracy"]["median"] == acc.median
    for k in (1, 2, 3):
        sub = RunStore(out / f"repeat-{k}")
        assert sub.read_config()["seed"] == 9 + k and len(sub.read_predictions()) == 4
    md, html = write_report(out)
    assert "Metrics over the repeats" in md.read_text() and "accuracy" in html.read_text()


def test_repeats_resume_and_can_grow(tmp_path):
    llm = scripted_llm()
    out = tmp_path / "rep"
    asyncio.run(run_repeats(config(tmp_path, repeats=2), out, llm=llm))
    calls = len(llm.calls)
    summary = asyncio.run(run_repeats(config(tmp_path, repeats=3), out, llm=llm))
    assert summary.finished == 3 and len(llm.calls) == calls + 8  # only the new repeat ran


def test_spread_and_refusals(tmp_path):
    s = Spread.of([0.5, 0.7, 0.6, 0.9])
    assert (s.median, s.min, s.max) == pytest.approx((0.65, 0.5, 0.9))
    assert s.q1 == pytest.approx(0.575) and s.iqr == pytest.approx(0.75 - 0.575)
    single = tmp_path / "single"
    run = prepare_run(config(tmp_path), single, llm=scripted_llm())
    asyncio.run(run_session(run))
    with pytest.raises(EvalError, match="single run"):
        plan_repeats(config(tmp_path, repeats=2), single)
    with pytest.raises(EvalError, match="at least 2"):
        plan_repeats(config(tmp_path), tmp_path / "x")
    plan_repeats(config(tmp_path, repeats=2), tmp_path / "rep")
    with pytest.raises(EvalError, match="repeats"):  # a repeated run resumed as a single one
        prepare_run(config(tmp_path), tmp_path / "rep", llm=scripted_llm())
    with pytest.raises(Exception, match="no repeat has finished"):
        summarize_repeats(tmp_path / "rep")


def test_cli_repeats_and_sample_per_class(tmp_path, monkeypatch):
    model = scripted_llm()

    def build_llm(cfg, *, cache_path=None, progress=None, **_paths):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    out = tmp_path / "rep"
    args = ["eval", "--data-dir", str(tmp_path), "--no-progress", "--dataset", "toy_eval"]
    args += ["--sample-per-class", "3", "--repeats", "2", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "repeat 2/2 (seed 1)" in result.output and "median" in result.output
    assert json.loads((out / "repeats.json").read_text())["n"] == [6, 6]
    for k in (1, 2):  # each repeat keeps its own caches
        assert len(ResponseCache(out / f"repeat-{k}" / "cache" / "llm.sqlite")) == 6
    again = CliRunner().invoke(app, ["eval", "--no-progress", "--out", str(out)])
    assert again.exit_code == 0, again.output
    assert again.output.count("6 already done") == 2
    report = CliRunner().invoke(app, ["report", str(out)])
    assert report.exit_code == 0 and (out / "report.md").is_file()


def test_cli_a_failing_repeat_does_not_stop_the_later_ones(tmp_path, monkeypatch):
    from veracity.testing import ScriptedLLM, ScriptedReply

    broken = ScriptedLLM(default=ScriptedReply("I cannot answer in JSON."))
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda cfg, **kw: ManagedLLM(broken))
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    out = tmp_path / "rep"
    args = ["eval", "--data-dir", str(tmp_path), "--no-progress", "--dataset", "toy_eval"]
    args += ["--method", "direct", "--limit", "3", "--repeats", "3", "--out", str(out)]
    result = CliRunner().invoke(app, args)
    said = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "repeat 3/3 (seed 2)" in said and "median" in said  # every repeat ran
    # said before the first repeat starts, with what it costs
    notice = "This run repeats 3 times, seeds 0 to 2, 3 examples each (9 checks in all)"
    assert notice in said and said.index(notice) < said.index("repeat 1/3")
    assert json.loads((out / "repeats.json").read_text())["n"] == [3, 3, 3]
    assert "3 of 3 repeats failed" in said and "--retry-errors" in said


def test_report_and_compare_read_repeated_runs(tmp_path, monkeypatch):
    # issue 41: `report` over a repeated run showed a Python method in its "by repeat"
    # column; `compare` refused the parent folder ("no predictions yet") and named two
    # `repeat-1` runs "#2 − #2"
    model = scripted_llm()

    def build_llm(cfg, *, cache_path=None, progress=None, **_paths):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    for name in ("a", "b"):
        args = ["eval", "--data-dir", str(tmp_path), "--no-progress", "--dataset", "toy_eval"]
        args += ["--limit", "4", "--repeats", "2", "--out", str(tmp_path / name)]
        assert CliRunner().invoke(app, args).exit_code == 0
    report = CliRunner().invoke(app, ["report", str(tmp_path / "a")])
    assert report.exit_code == 0, report.output
    text = (tmp_path / "a" / "report.md").read_text()
    assert "built-in method" not in text
    row = next(line for line in text.splitlines() if line.startswith("| accuracy |"))
    assert row.rstrip(" |").split("|")[-1].count(",") == 1  # two repeats' values
    assert "built-in method" not in (tmp_path / "a" / "report.html").read_text()

    runner = CliRunner()
    both = runner.invoke(app, ["compare", "--json", str(tmp_path / "a"), str(tmp_path / "b")])
    assert both.exit_code == 0, both.output
    result = json.loads(both.output)
    labels = [r["label"] for r in result["runs"]]
    assert labels == ["a/repeat-1", "a/repeat-2", "b/repeat-1", "b/repeat-2"]
    assert [p["other"] for p in result["paired"]] == labels[1:]
    firsts = [str(tmp_path / n / "repeat-1") for n in ("a", "b")]
    narrow = CliRunner().invoke(app, ["compare", *firsts], terminal_width=60)
    assert narrow.exit_code == 0, narrow.output
    assert "#2 − #1" in narrow.output and "#2 − #2" not in narrow.output
