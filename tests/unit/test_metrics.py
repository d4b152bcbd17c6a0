"""Metrics against values computed by hand (the arithmetic is in the comments)."""

from __future__ import annotations

import pytest

from veracity.core.labels import get_label_space
from veracity.core.types import Usage, Verdict
from veracity.evaluation.metrics import (
    MetricsError,
    accuracy,
    calibration,
    compute_metrics,
    confusion_matrix,
    macro_f1,
    per_class,
    percentile,
    usage_stats,
)
from veracity.evaluation.store import PredictionRecord

GOLD = ["A", "A", "A", "B", "B", "C"]
PRED = ["A", "A", "B", "B", None, "A"]
LABELS = ["A", "B", "C"]


def test_accuracy_counts_none_as_wrong():
    assert accuracy(GOLD, PRED) == pytest.approx(3 / 6)  # indices 0, 1, 3 are right


def test_per_class_precision_recall_f1():
    s = per_class(GOLD, PRED, LABELS)
    # A: tp 2, predicted 3 (0, 1, 5), gold 3 -> P = R = F1 = 2/3
    assert (s["A"].precision, s["A"].recall, s["A"].f1) == pytest.approx((2 / 3, 2 / 3, 2 / 3))
    # B: tp 1, predicted 2 (2, 3), gold 2 (the abstention on 4 is a miss) -> 1/2 each
    assert (s["B"].precision, s["B"].recall, s["B"].f1) == pytest.approx((0.5, 0.5, 0.5))
    assert (s["B"].support, s["B"].predicted) == (2, 2)
    # C: never predicted, one gold -> all 0
    assert (s["C"].precision, s["C"].recall, s["C"].f1) == (0.0, 0.0, 0.0)


def test_macro_f1_averages_classes_present_in_gold_or_predictions():
    assert macro_f1(GOLD, PRED, LABELS) == pytest.approx((2 / 3 + 0.5 + 0.0) / 3)
    # C is absent from both -> averaged over A and B only:
    # A: tp 1, predicted 1, gold 2 -> P 1, R 1/2, F1 2/3; B: tp 0 -> 0
    assert macro_f1(["A", "A"], ["A", "B"], LABELS) == pytest.approx((2 / 3 + 0) / 2)


def test_labels_outside_the_space_and_bad_lengths_are_errors():
    with pytest.raises(MetricsError, match="outside the label space"):
        macro_f1(["A"], ["Z"], LABELS)
    with pytest.raises(MetricsError, match="2 gold labels but 1"):
        accuracy(["A", "B"], ["A"])
    with pytest.raises(MetricsError, match="no examples"):
        accuracy([], [])


def test_confusion_matrix_separates_abstentions_and_errors():
    statuses = ["ok", "ok", "ok", "ok", "abstained", "ok"]
    assert confusion_matrix(GOLD, PRED, LABELS, statuses) == {
        "A": {"A": 2, "B": 1, "C": 0, "(abstained)": 0},
        "B": {"A": 0, "B": 1, "C": 0, "(abstained)": 1},
        "C": {"A": 1, "B": 0, "C": 0, "(abstained)": 0},
    }
    errored = confusion_matrix(["A"], [None], ["A"], ["exception"])
    assert errored == {"A": {"A": 0, "(error)": 1}}


def test_calibration_equal_width_bins():
    cal = calibration([0.05, 0.15, 0.12, 0.95, 1.0], [0, 0, 1, 1, 1], n_bins=10)
    # bin 0: {0.05} vs {0} -> gap 0.05, n 1
    # bin 1: {0.15, 0.12} mean 0.135 vs {0, 1} mean 0.5 -> gap 0.365, n 2
    # bin 9: {0.95, 1.0} (1.0 falls in the last bin) mean 0.975 vs 1 -> gap 0.025, n 2
    # ECE = (1·0.05 + 2·0.365 + 2·0.025) / 5 = 0.83 / 5 = 0.166
    assert cal.ece == pytest.approx(0.166)
    assert cal.n == 5 and len(cal.bins) == 10
    assert [b.count for b in cal.bins] == [1, 2, 0, 0, 0, 0, 0, 0, 0, 2]
    assert cal.bins[1].mean_score == pytest.approx(0.135)
    assert cal.bins[1].mean_target == pytest.approx(0.5)
    assert cal.bins[5].mean_score is None
    with pytest.raises(MetricsError):
        calibration([1.2], [1])


def test_percentiles_interpolate_linearly():
    assert percentile([4, 1, 3, 2], 50) == pytest.approx(2.5)
    # position 0.95 · 3 = 2.85 between 3 and 4 -> 3.85
    assert percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)
    assert percentile([], 50) is None


def test_usage_stats_per_example():
    u = usage_stats(
        [
            {"prompt_tokens": 10, "completion_tokens": 5, "llm_calls": 1, "cost_usd": 0.001},
            {
                "prompt_tokens": 20,
                "completion_tokens": 5,
                "llm_calls": 2,
                "searches": 3,
                "unpriced_llm_calls": 2,
            },
        ],
        [1.0, 3.0],
    )
    assert u.unpriced_llm_calls == 2
    assert u.tokens_per_example == pytest.approx(20.0)  # (15 + 25) / 2
    assert u.llm_calls_per_example == pytest.approx(1.5)
    assert u.searches_per_example == pytest.approx(1.5)
    assert u.cost_per_example_usd == pytest.approx(0.0005)
    assert (u.latency_p50_s, u.latency_mean_s) == pytest.approx((2.0, 2.0))
    assert u.latency_p95_s == pytest.approx(2.9)  # 1 + 0.95 · 2


def _rec(i, gold, pred, score=None, conf=None, status=None):
    verdict = Verdict(
        label=pred,
        label_space="true_half_false",
        method="m",
        abstained=pred is None,
        abstain_reason=None if pred else "unsure",
        usage=Usage(prompt_tokens=3, completion_tokens=1, llm_calls=1),
    )
    return PredictionRecord(
        id=str(i),
        gold=gold,
        gold_original=gold,
        predicted=pred,
        status=status or ("ok" if pred else "abstained"),
        score=score,
        confidence=conf,
        latency_s=1.0,
        verdict=verdict,
    )


def test_three_way_calibration_uses_gold_veracity_scores():
    space = get_label_space("true_half_false")  # TRUE 1.0, HALF-TRUE 0.5, FALSE 0.0
    rows = [
        _rec(0, "HALF-TRUE", "HALF-TRUE", score=0.55, conf=0.9),
        _rec(1, "TRUE", "HALF-TRUE", score=0.58, conf=0.6),
        _rec(2, "FALSE", "FALSE", score=0.1, conf=0.7),
        _rec(3, "FALSE", None),  # abstained: no score, no confidence
    ]
    m = compute_metrics(rows, space)
    # bin 5 holds 0.55 and 0.58 (mean 0.565) with gold veracity 0.5 and 1.0 (mean 0.75);
    # bin 1 holds 0.1 with gold 0.0. ECE = (2·|0.565−0.75| + 1·0.1) / 3 = 0.47 / 3
    assert m.calibration.n == 3
    assert m.calibration.ece == pytest.approx(0.47 / 3)
    # confidence vs correctness: bins 9 {0.9 right}, 6 {0.6 wrong}, 7 {0.7 right}
    # ECE = (0.1 + 0.6 + 0.3) / 3
    assert m.confidence_calibration.ece == pytest.approx(1.0 / 3)
    assert m.accuracy == pytest.approx(0.5) and m.abstention_rate == pytest.approx(0.25)
    # TRUE: gold 1, predicted 0 -> 0; HALF-TRUE: tp 1, pred 2, gold 1 -> P .5 R 1 F1 2/3;
    # FALSE: tp 1, pred 1, gold 2 -> P 1 R .5 F1 2/3; macro = (0 + 2/3 + 2/3) / 3
    assert m.macro_f1 == pytest.approx(4 / 9)
    assert m.usage.tokens_per_example == pytest.approx(4.0)
    assert m.counts == {"ok": 3, "abstained": 1, "error": 0, "exception": 0}
