"""`veracity compare`: side-by-side rows, paired differences, bootstrap interval."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from _eval_fixtures import TOY, ToyDataset, config, scripted_llm

from veracity.core import registry
from veracity.evaluation.compare import (
    compare_runs,
    macro_f1_batch,
    paired_bootstrap,
    to_markdown,
)
from veracity.evaluation.metrics import MetricsError, macro_f1
from veracity.evaluation.runner import prepare_run, run_session
from veracity.testing import ScriptedLLM

FLIPPED = [(i, "REFUTED" if g == "SUPPORTED" else "SUPPORTED", s) for i, g, s in TOY]
registry.datasets.register("toy_flipped", ToyDataset(FLIPPED, "toy_flipped"))


def _run(tmp_path, name, llm, **kw):
    run = prepare_run(config(tmp_path, **kw), tmp_path / name, llm=llm)
    asyncio.run(run_session(run))
    return run.store.path


def test_compare_two_runs_with_hand_computed_differences(tmp_path):
    a = _run(tmp_path, "a", scripted_llm())  # 6/8 right, macro-F1 0.75
    b = _run(tmp_path, "b", ScriptedLLM(default='{"label": "SUPPORTED"}'))
    c = compare_runs([a, b], n_boot=500, seed=3)
    assert [r.accuracy for r in c.runs] == pytest.approx([0.75, 0.5])
    # b: SUPPORTED P 4/8 R 4/4 F1 2/3, REFUTED never predicted F1 0 -> macro 1/3
    assert c.runs[1].macro_f1 == pytest.approx(1 / 3)
    p = c.paired[0]
    assert p.shared == 8 and p.reference == "a" and p.other == "b"
    assert p.accuracy_diff == pytest.approx(-0.25)
    assert p.macro_f1_diff == pytest.approx(1 / 3 - 0.75)
    assert p.ci_low < p.macro_f1_diff < p.ci_high and p.ci_high < 0.2
    again = compare_runs([a, b], n_boot=500, seed=3)
    assert again.paired[0].ci_low == p.ci_low  # seeded: reproducible
    md = to_markdown(c)
    assert "| b − a | 8 | -0.250 | -0.417 |" in md
    assert c.runs[0].wall_time_s >= 0 and "| wall time (s) |" in md


def test_pairs_use_only_shared_example_ids(tmp_path):
    a = _run(tmp_path, "a", scripted_llm())
    b = _run(tmp_path, "b", scripted_llm(), limit=3)  # t0 t1 t2: right, right, wrong
    p = compare_runs([a, b], n_boot=50).paired[0]
    assert p.shared == 3
    assert p.accuracy_diff == 0.0  # same predictions on the shared ids


def test_incomparable_runs_are_refused(tmp_path):
    a = _run(tmp_path, "a", scripted_llm())
    flipped = _run(tmp_path, "f", scripted_llm(), dataset="toy_flipped")
    with pytest.raises(MetricsError, match="disagree on the gold label of 8"):
        compare_runs([a, flipped])
    with pytest.raises(MetricsError, match="at least two"):
        compare_runs([a])


def test_vectorised_macro_f1_matches_the_reference_function():
    rng = np.random.default_rng(0)
    labels = ["x", "y", "z"]
    for _ in range(50):
        n = int(rng.integers(1, 12))
        g = rng.integers(0, 3, n)
        p = rng.integers(-1, 3, n)  # -1: no prediction
        gold = [labels[i] for i in g]
        pred = [labels[i] if i >= 0 else None for i in p]
        batch = macro_f1_batch(g[None, :], p[None, :], 3)[0]
        assert batch == pytest.approx(macro_f1(gold, pred, labels))


def test_bootstrap_of_identical_predictions_is_zero():
    gold = ["x", "y", "x", "y"]
    pred = ["x", "x", "y", "y"]
    assert paired_bootstrap(gold, pred, pred, ["x", "y"], n_boot=100) == (0.0, 0.0)
