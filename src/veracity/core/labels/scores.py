"""Scores of predicted labels against gold labels: accuracy, per-class precision, recall
and F1, macro-F1. Shared by the evaluation metrics and by methods that tune on a
development set (RADAR's threshold calibration).

A prediction of ``None`` (abstained, failed) counts as wrong and as a missed gold label;
macro-F1 averages the classes that occur among gold labels or predictions.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from veracity.core.errors import MetricsError


class ClassScores(BaseModel):
    """Precision, recall and F1 of one class, with its gold and predicted counts."""

    model_config = ConfigDict(extra="forbid")

    precision: float
    recall: float
    f1: float
    support: int  # gold examples of this class
    predicted: int  # examples predicted as this class


def check_pair(gold: Sequence[str], pred: Sequence[str | None]) -> None:
    """Raise MetricsError unless gold and predictions are non-empty and of one length."""
    if len(gold) != len(pred):
        raise MetricsError(f"{len(gold)} gold labels but {len(pred)} predictions")
    if not gold:
        raise MetricsError("no examples to score")


def accuracy(gold: Sequence[str], pred: Sequence[str | None]) -> float:
    """Share of examples whose prediction equals the gold label (None is wrong)."""
    check_pair(gold, pred)
    return sum(g == p for g, p in zip(gold, pred, strict=True)) / len(gold)


def classes_present(gold: Sequence[str], pred: Sequence[str | None], order: Sequence[str]) -> list:
    """Labels of `order` that occur in gold or predictions, in `order`'s order."""
    seen = set(gold) | {p for p in pred if p is not None}
    unknown = seen - set(order)
    if unknown:
        raise MetricsError(f"labels outside the label space: {sorted(unknown)}")
    return [c for c in order if c in seen]


def per_class(
    gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]
) -> dict[str, ClassScores]:
    """Precision, recall, F1, support and prediction count of every label in `labels`."""
    check_pair(gold, pred)
    out = {}
    for c in labels:
        tp = sum(g == c and p == c for g, p in zip(gold, pred, strict=True))
        n_pred = sum(p == c for p in pred)
        support = sum(g == c for g in gold)
        precision = tp / n_pred if n_pred else 0.0
        recall = tp / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        out[c] = ClassScores(
            precision=precision, recall=recall, f1=f1, support=support, predicted=n_pred
        )
    return out


def macro_f1(gold: Sequence[str], pred: Sequence[str | None], labels: Sequence[str]) -> float:
    """Mean F1 over the labels (of `labels`) present in gold or predictions."""
    present = classes_present(gold, pred, labels)
    scores = per_class(gold, pred, present)
    return sum(s.f1 for s in scores.values()) / len(present)
