"""The evaluation runner: full runs, resume after interruption, crashes, labels, guards."""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest
from _eval_fixtures import SEARCH_SOURCE, TOY, config, scripted_llm

from veracity.evaluation.runner import EvalError, finalize, prepare_run, run_session
from veracity.evaluation.store import RunStore, RunStoreError
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.retrieval.base import Query
from veracity.retrieval.guards import EvalGuards, eval_guards, guard_query


def _run(cfg, out, llm=None, **kw):
    run = prepare_run(cfg, out, llm=llm or scripted_llm(), **kw)
    return run, asyncio.run(run_session(run))


def test_full_run_writes_run_directory_with_expected_metrics(tmp_path):
    run, m = _run(config(tmp_path), tmp_path / "run")
    store = run.store
    records = store.read_predictions()
    assert sorted(r.id for r in records) == [t[0] for t in TOY]
    assert m.n == 8 and m.accuracy == pytest.approx(6 / 8)
    assert m.per_class["SUPPORTED"].f1 == pytest.approx(0.75)
    assert m.macro_f1 == pytest.approx(0.75)
    assert m.confusion == {
        "SUPPORTED": {"SUPPORTED": 3, "REFUTED": 1},
        "REFUTED": {"SUPPORTED": 1, "REFUTED": 3},
    }
    # each record keeps the verdict with trace and usage
    rec = records[0]
    assert rec.verdict.trace.events and rec.usage.llm_calls == 1
    assert rec.confidence == pytest.approx(0.8)
    assert json.loads(store.metrics_path.read_text())["accuracy"] == pytest.approx(0.75)
    usage = json.loads(store.usage_path.read_text())
    assert usage["llm_calls"] == 8 and usage["sessions"] == 1
    saved = store.read_config()
    assert saved["method"] == "direct" and saved["labels"] == "supported_refuted"
    assert saved["split"] == "dev"  # the dataset's first split, resolved


def _interrupt_after(n_records: int):
    """An on_record callback that cancels the running session after n records."""
    state = {"seen": 0}

    def on_record(_rec):
        state["seen"] += 1
        if state["seen"] == n_records:
            asyncio.current_task().cancel()  # the worker's task; its session unwinds

    return on_record


def test_resume_after_cancellation_gives_identical_metrics_and_no_duplicates(tmp_path):
    _, reference = _run(config(tmp_path), tmp_path / "reference")

    out = tmp_path / "resumed"
    # a small latency gives the event loop a point to deliver the cancellation
    run = prepare_run(config(tmp_path, concurrency=1), out, llm=scripted_llm(latency_s=0.001))
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(run_session(run, on_record=_interrupt_after(3)))
    # the records reported, and any finished while the last of them was being written
    saved = len(run.store.read_predictions())
    assert saved >= 3
    assert len(run.todo) == 8 - saved

    again = prepare_run(config(tmp_path, concurrency=1), out, llm=(llm := scripted_llm()))
    metrics = asyncio.run(run_session(again))
    assert len(llm.calls) == 8 - saved  # finished examples were not checked again
    lines = again.store.predictions_path.read_text().splitlines()
    ids = [json.loads(line)["id"] for line in lines]
    assert len(ids) == len(set(ids)) == 8
    assert metrics.model_dump(exclude={"usage"}) == reference.model_dump(exclude={"usage"})
    sessions = again.store.read_sessions()
    assert [s["status"] for s in sessions] == ["interrupted", "finished"]
    assert 3 <= sessions[0]["examples_finished"] <= saved  # a group in flight is not counted


def test_keyboard_interrupt_in_a_method_loses_nothing(tmp_path):
    out = tmp_path / "run"
    cfg = config(tmp_path, method="toy_special", concurrency=1)
    run = prepare_run(cfg, out, llm=scripted_llm())
    run.method.interrupt_on = "t4"
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run_session(run))
    done = [r.id for r in run.store.read_predictions()]
    assert done == ["t0", "t1", "t2", "t3"]

    rerun = prepare_run(cfg, out, llm=scripted_llm())
    metrics = asyncio.run(run_session(rerun))
    assert metrics.n == 8 and metrics.accuracy == pytest.approx(6 / 8)
    assert len(rerun.store.predictions_path.read_text().splitlines()) == 8


def test_a_crash_is_recorded_with_traceback_and_the_run_goes_on(tmp_path):
    rows = [("a", "SUPPORTED", "SUPPORTED"), ("b", "REFUTED", "crash"), ("c", "REFUTED", "abstain")]
    from _eval_fixtures import ToyDataset

    from veracity.core import registry

    registry.datasets.register("toy_crash", ToyDataset(rows, "toy_crash"))
    run, m = _run(config(tmp_path, method="toy_special", dataset="toy_crash"), tmp_path / "r")
    by_id = {r.id: r for r in run.store.read_predictions()}
    assert by_id["b"].status == "exception" and by_id["b"].predicted is None
    assert "RuntimeError: boom in the method" in by_id["b"].exception
    assert "Traceback" in by_id["b"].exception
    assert by_id["c"].status == "abstained" and by_id["c"].verdict.abstain_reason == "not sure"
    assert m.counts == {"ok": 1, "abstained": 1, "error": 0, "exception": 1}
    assert m.accuracy == pytest.approx(1 / 3)  # abstentions and crashes count as wrong
    assert m.exception_rate == pytest.approx(1 / 3)
    assert m.confusion["REFUTED"] == {
        "SUPPORTED": 0, "REFUTED": 0, "(abstained)": 1, "(error)": 1,
    }  # fmt: skip


def test_gold_labels_are_mapped_or_the_run_is_refused_up_front(tmp_path):
    # toy_liar is in liar6; direct accepts any space, so by default it runs in liar6
    run = prepare_run(config(tmp_path, dataset="toy_liar"), tmp_path / "a", llm=scripted_llm())
    assert run.space.name == "liar6"
    assert run.gold["l1"] == ("half-true", "half-true")
    # --labels true_false maps the gold labels with the registered liar6 -> binary table
    cfg = config(tmp_path, dataset="toy_liar", labels="true_false")
    run = prepare_run(cfg, tmp_path / "b", llm=scripted_llm())
    assert run.gold == {
        "l0": ("false", "pants-fire"), "l1": ("true", "half-true"), "l2": ("true", "true"),
    }  # fmt: skip
    # no registered map from liar6 to rumor: refused before any example runs
    with pytest.raises(EvalError, match="no label map") as err:
        prepare_run(config(tmp_path, dataset="toy_liar", labels="rumor"), tmp_path / "c")
    assert "--labels" in str(err.value)
    assert not (tmp_path / "c" / "predictions.jsonl").exists()


def test_unknown_method_dataset_and_split_fail_clearly(tmp_path):
    with pytest.raises(EvalError, match="unknown method 'no_such_method'"):
        prepare_run(config(tmp_path, method="no_such_method"), tmp_path / "a")
    with pytest.raises(EvalError, match="dataset 'nope' is not registered"):
        prepare_run(config(tmp_path, dataset="nope"), tmp_path / "b")
    with pytest.raises(EvalError, match="has splits"):
        prepare_run(config(tmp_path, split="train"), tmp_path / "c")


def test_resuming_with_a_different_config_is_refused(tmp_path):
    _run(config(tmp_path, limit=2), tmp_path / "run")
    with pytest.raises(EvalError, match="different method"):
        prepare_run(config(tmp_path, method="cot"), tmp_path / "run", llm=scripted_llm())
    # a larger limit is fine: the run grows
    _, m = _run(config(tmp_path, limit=4), tmp_path / "run")
    assert m.n == 4


def test_limit_takes_first_n_or_a_seeded_sample(tmp_path):
    first = prepare_run(config(tmp_path, limit=3), tmp_path / "a", llm=scripted_llm())
    assert [e.id for e in first.examples] == ["t0", "t1", "t2"]
    s1 = prepare_run(config(tmp_path, limit=3, sample=True, seed=7), tmp_path / "b")
    s2 = prepare_run(config(tmp_path, limit=3, sample=True, seed=7), tmp_path / "c")
    assert [e.id for e in s1.examples] == [e.id for e in s2.examples]
    assert [e.id for e in s1.examples] == sorted(e.id for e in s1.examples)  # dataset order


def test_torn_last_line_is_cut_and_that_example_redone(tmp_path):
    run, _ = _run(config(tmp_path, limit=3), tmp_path / "run")
    path = run.store.predictions_path
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][:40])  # a kill in the middle of a write
    assert len(run.store.read_predictions()) == 2  # a reader skips the torn line
    _, m = _run(config(tmp_path, limit=3), tmp_path / "run")
    assert m.n == 3 and len(path.read_text().splitlines()) == 3


def test_llm_cache_lives_in_the_run_directory(tmp_path, monkeypatch):
    inner = scripted_llm()

    def build(cfg, cache_path=None, progress=None, **_paths):
        return ManagedLLM(inner, cache=ResponseCache(cache_path, mode="record"))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build)
    run = prepare_run(config(tmp_path), tmp_path / "run")
    asyncio.run(run_session(run))
    cache = ResponseCache(run.store.llm_cache_path)
    assert run.store.llm_cache_path.is_file() and len(cache) == 8


def test_secrets_never_reach_the_run_record(tmp_path):
    cfg = config(
        tmp_path,
        method_config={"api_key": "sk-secret", "api_key_env": "MY_KEY"},
        llm={"base_url": "https://user:pw@llm.example/v1", "api_key_env": "OPENAI_API_KEY"},
    )
    RunStore(tmp_path / "run").write_record(cfg.model_dump(mode="json"))
    text = (tmp_path / "run" / "run.json").read_text()
    assert "sk-secret" not in text and "pw@" not in text
    saved = json.loads(text)["config"]
    assert saved["method_config"]["api_key_env"] == "MY_KEY"
    assert saved["llm"]["base_url"] == "https://llm.example/v1"


def test_guard_query_tightens_cutoff_and_exclusions():
    q = Query(text="x", before=dt.date(2021, 1, 1), exclude_domains=("a.org",))
    assert guard_query(q) is q  # outside an evaluation nothing changes
    with eval_guards(EvalGuards(before=dt.date(2020, 5, 1), exclude_domains=("www.B.org",))):
        g = guard_query(q)
        assert g.before == dt.date(2020, 5, 1)
        assert g.exclude_domains == ("a.org", "b.org")
        assert guard_query(g) == g  # idempotent
    with eval_guards(EvalGuards(before=dt.date(2022, 1, 1))):
        assert guard_query(q).before == dt.date(2021, 1, 1)  # the earlier cutoff wins


def test_runner_applies_guards_to_sources_it_builds(tmp_path):
    cfg = config(tmp_path, method="toy_search", sources={"mem": {"type": "toy_memory"}}, limit=2)
    SEARCH_SOURCE.queries.clear()
    run, _ = _run(cfg, tmp_path / "run")
    queries = SEARCH_SOURCE.queries
    assert {q.before for q in queries} == {dt.date(2020, 1, 1), dt.date(2020, 1, 2)}
    assert all(q.exclude_domains == ("factcheck.example",) for q in queries)
    for rec in run.store.read_predictions():
        # only the document published before the claim and not from the fact-check site
        assert rec.verdict.metadata["docs"] == ["old"]
        assert rec.usage.searches == 1  # recorded once, by the one managed layer


def test_finalize_without_predictions_is_an_error(tmp_path):
    with pytest.raises(RunStoreError, match="no predictions"):
        finalize(RunStore(tmp_path))


def test_gold_evidence_setting_hands_evidence_to_the_method_or_refuses(tmp_path):
    from _eval_fixtures import ToyDataset

    from veracity.core import registry
    from veracity.core.types import Claim, Document, Post
    from veracity.datasets.base import Example
    from veracity.evaluation.prepare import with_gold_evidence

    class WithEvidence(ToyDataset):
        def load(self, split=None, data_dir=None, **options):
            rows = super().load(split, data_dir)
            return [
                e.model_copy(update={"evidence": [Document(id=f"g{e.id}", text=f"gold {e.id}")]})
                for e in rows
            ]

    registry.datasets.register("toy_gold", WithEvidence(name="toy_gold"))
    llm = scripted_llm()
    run, m = _run(config(tmp_path, dataset="toy_gold", gold_evidence=True), tmp_path / "g", llm)
    assert m.n == 8
    assert all(e.input.evidence[0].text == f"gold {e.id}" for e in run.examples)
    # the toy dataset has no evidence texts: the setting is refused up front
    with pytest.raises(EvalError, match="no gold evidence"):
        prepare_run(config(tmp_path, gold_evidence=True), tmp_path / "n", llm=llm)
    post = Example(id="p", input=Post(text="p"), label="rumor", label_space="rumor")
    with pytest.raises(EvalError, match="goes with claims"):
        with_gold_evidence(post)
    assert (
        with_gold_evidence(
            Example(
                id="c",
                input=Claim(text="c"),
                label="true",
                label_space="true_false",
                evidence=[Document(id="d", text="t")],
            )
        )
        .input.evidence[0]
        .id
        == "d"
    )


def test_dataset_options_the_loader_does_not_take_fail_clearly(tmp_path):
    with pytest.raises(EvalError, match="dataset_options"):
        prepare_run(
            config(tmp_path, dataset_options={"nonsense": 1}), tmp_path / "o", llm=scripted_llm()
        )


def test_example_level_exclusions_join_the_dataset_guards():
    from veracity.core.types import Claim
    from veracity.datasets.base import DatasetInfo, Example
    from veracity.evaluation.runner import guards_for

    info = DatasetInfo(
        name="x",
        label_space="true_false",
        splits=("a",),
        input_kind="claim",
        folder="x",
        exclude_domains=("politifact.com",),
    )
    ex = Example(
        id="e",
        input=Claim(text="c", date=dt.date(2021, 3, 4)),
        label="true",
        label_space="true_false",
        metadata={"exclude_domains": ["fullfact.org"]},
    )
    guards = guards_for(ex, info)
    assert guards.exclude_domains == ("politifact.com", "fullfact.org")
    assert guards.before == dt.date(2021, 3, 4)
