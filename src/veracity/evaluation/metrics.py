"""Evaluation metrics as pure functions.

Conventions used throughout:

- A prediction of ``None`` is an abstention, a recorded error or a crashed example. It
  counts as wrong for accuracy, and as a missed gold label (a false negative of the gold
  class) for per-class recall; it is never a prediction *of* any class, so it does not
  change any class's precision.
- Macro-F1 averages the F1 of the classes that occur among the gold labels or the
  predictions (as scikit-learn does by default); a class with no predictions has
  precision 0, a class with no gold examples has recall 0.
- Calibration compares the method's veracity score (1 = true) with the gold label's
  veracity score in the same label space. In a binary space the gold score is 0 or 1,
  so this is the usual expected calibration error of P(true side). In a space with a
  middle label (e.g. HALF-TRUE = 0.5) each bin compares the mean predicted veracity with
  the mean gold veracity of the examples in it. A separate confidence ECE compares a
  verdict's confidence with whether its label was right.
- Percentiles interpolate linearly between order statistics (numpy's default).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from veracity.core.errors import MetricsError
from veracity.core.labels import LabelSpace
from veracity.core.labels.scores import (
    ClassScores,
    accuracy,
    check_pair,
    classes_present,
    macro_f1,
    per_class,
)
from veracity.core.types import Usage


class ReliabilityBin(BaseModel):
    model_config = ConfigDict(extra="forbid")

    lower: float
    upper: float
    count: int
    mean_score: float | None  # mean predicted value in the bin (None when empty)
    mean_target: float | None  # mean gold value in the bin (None when empty)


class Calibration(BaseModel):
    """Expected calibration error and the data of a reliability diagram."""

    model_config = ConfigDict(extra="forbid")

    ece: float
    n: int  # examples that had a score
    bins: list[ReliabilityBin]


ABSTAIN = "(abstained)"
ERROR = "(error)"


def confusion_matrix(
    gold: Sequence[str],
    pred: Sequence[str | None],
    labels: Sequence[str],
    statuses: Sequence[str] | None = None,
) -> dict[str, dict[str, int]]:
    """Counts by gold label (rows) and predicted label (columns).

    A None prediction goes to the column ``(abstained)`` when its status is "abstained",
    else to ``(error)`` (recorded errors and crashed examples). Those columns are present
    only when used.
    """
    check_pair(gold, pred)
    statuses = statuses or ["abstained" if p is None else "ok" for p in pred]
    columns = list(labels)
    extra = []
    for p, s in zip(pred, statuses, strict=True):
        if p is None:
            col = ABSTAIN if s == "abstained" else ERROR
            if col not in extra:
                extra.append(col)
    columns += sorted(extra)
    matrix = {g: dict.fromkeys(columns, 0) for g in labels}
    for g, p, s in zip(gold, pred, statuses, strict=True):
        if g not in matrix:
            raise MetricsError(f"gold label {g!r} is outside the label space {list(labels)}")
        col = p if p is not None else (ABSTAIN if s == "abstained" else ERROR)
        if col not in matrix[g]:
            raise MetricsError(f"predicted label {p!r} is outside the label space {list(labels)}")
        matrix[g][col] += 1
    return matrix


def calibration(scores: Sequence[float], targets: Sequence[float], n_bins: int = 10) -> Calibration:
    """Expected calibration error over equal-width bins of [0, 1].

    ECE = Σ_b (n_b / N) · |mean score in b − mean target in b|. A score of exactly 1.0
    falls in the last bin.

    Args:
        scores: predicted values in [0, 1] (veracity scores or confidences).
        targets: the matching observed values in [0, 1] (gold veracity, or 1/0 correct).
        n_bins: number of equal-width bins.
    """
    if len(scores) != len(targets):
        raise MetricsError(f"{len(scores)} scores but {len(targets)} targets")
    if n_bins < 1:
        raise MetricsError("n_bins must be at least 1")
    s = np.asarray(scores, dtype=float)
    t = np.asarray(targets, dtype=float)
    if s.size and (s.min() < 0 or s.max() > 1):
        raise MetricsError("scores must lie in [0, 1]")
    idx = np.minimum((s * n_bins).astype(int), n_bins - 1)
    bins, ece = [], 0.0
    for b in range(n_bins):
        mask = idx == b
        count = int(mask.sum())
        mean_s = float(s[mask].mean()) if count else None
        mean_t = float(t[mask].mean()) if count else None
        if count:
            ece += count / s.size * abs(mean_s - mean_t)  # type: ignore[operator]
        bins.append(
            ReliabilityBin(
                lower=b / n_bins,
                upper=(b + 1) / n_bins,
                count=count,
                mean_score=mean_s,
                mean_target=mean_t,
            )
        )
    return Calibration(ece=ece, n=int(s.size), bins=bins)


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0–100) with linear interpolation; None for no values."""
    if not values:
        return None
    if not 0 <= q <= 100:
        raise MetricsError(f"percentile {q} is outside [0, 100]")
    return float(np.percentile(np.asarray(values, dtype=float), q))


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


class UsageStats(BaseModel):
    """Totals and per-example means of what the run consumed."""

    model_config = ConfigDict(extra="forbid")

    examples: int
    prompt_tokens: int
    completion_tokens: int
    llm_calls: int
    cached_llm_calls: int
    searches: int
    cost_usd: float
    unpriced_llm_calls: int = 0  # calls to a model with no known price (not in cost_usd)
    # prompt tokens the server reused from its prefix cache (0 in runs made before it counted)
    cached_prompt_tokens: int = 0
    tokens_per_example: float
    llm_calls_per_example: float
    searches_per_example: float
    cost_per_example_usd: float
    latency_p50_s: float | None
    latency_p95_s: float | None
    latency_mean_s: float | None


def usage_stats(usages: Sequence[Usage | dict], latencies: Sequence[float]) -> UsageStats:
    """Aggregate per-example usage (`veracity.core.types.Usage`, or its fields as dicts) and
    latencies."""
    n = len(usages)
    if n == 0:
        raise MetricsError("no examples to aggregate")
    rows = [u if isinstance(u, Usage) else Usage.model_validate(u) for u in usages]

    def total(name: str) -> float:
        return sum(getattr(u, name) for u in rows)

    tokens = total("prompt_tokens") + total("completion_tokens")
    return UsageStats(
        examples=n,
        prompt_tokens=int(total("prompt_tokens")),
        completion_tokens=int(total("completion_tokens")),
        llm_calls=int(total("llm_calls")),
        cached_llm_calls=int(total("cached_llm_calls")),
        searches=int(total("searches")),
        cost_usd=total("cost_usd"),
        unpriced_llm_calls=int(total("unpriced_llm_calls")),
        cached_prompt_tokens=int(total("cached_prompt_tokens")),
        tokens_per_example=tokens / n,
        llm_calls_per_example=total("llm_calls") / n,
        searches_per_example=total("searches") / n,
        cost_per_example_usd=total("cost_usd") / n,
        latency_p50_s=percentile(latencies, 50),
        latency_p95_s=percentile(latencies, 95),
        latency_mean_s=mean(latencies),
    )


class Metrics(BaseModel):
    """Everything `metrics.json` holds."""

    model_config = ConfigDict(extra="forbid")

    label_space: str
    labels: list[str]
    n: int
    accuracy: float
    macro_f1: float
    macro_f1_classes: list[str]  # the classes averaged
    per_class: dict[str, ClassScores]
    confusion: dict[str, dict[str, int]]
    abstention_rate: float
    error_rate: float  # verdicts that carry an error (faults after retries)
    exception_rate: float  # examples where the method crashed (bugs)
    counts: dict[str, int]  # by status
    calibration: Calibration | None = None  # veracity score vs gold veracity
    confidence_calibration: Calibration | None = None  # confidence vs correctness
    usage: UsageStats
    extra: dict[str, float] = Field(default_factory=dict)


class Scored(Protocol):
    """What `compute_metrics` reads from one prediction record."""

    gold: str | None  # None: an unlabelled input (batch); such records are not scored
    predicted: str | None
    status: str  # "ok", "abstained", "error" or "exception"
    score: float | None
    confidence: float | None
    latency_s: float

    @property
    def usage(self) -> Usage: ...


def compute_metrics(rows: Sequence[Scored], space: LabelSpace, n_bins: int = 10) -> Metrics:
    """All metrics of a run from its prediction records, gold already in `space`."""
    if not rows:
        raise MetricsError("no predictions to score")
    if any(r.gold is None for r in rows):
        raise MetricsError(
            "some predictions have no gold label (a `veracity batch` run): nothing to score"
        )
    gold = [r.gold for r in rows]
    pred = [r.predicted for r in rows]
    statuses = [r.status for r in rows]
    labels = list(space.labels)
    present = classes_present(gold, pred, labels)
    counts = {s: statuses.count(s) for s in ("ok", "abstained", "error", "exception")}
    scored = [r for r in rows if r.score is not None]
    cal = None
    if scored:
        cal = calibration([r.score for r in scored], [space.score(r.gold) for r in scored], n_bins)
    confident = [r for r in rows if r.confidence is not None and r.predicted is not None]
    conf_cal = None
    if confident:
        conf_cal = calibration(
            [r.confidence for r in confident],
            [float(r.predicted == r.gold) for r in confident],
            n_bins,
        )
    n = len(rows)
    return Metrics(
        label_space=space.name,
        labels=labels,
        n=n,
        accuracy=accuracy(gold, pred),
        macro_f1=macro_f1(gold, pred, labels),
        macro_f1_classes=present,
        per_class=per_class(gold, pred, labels),
        confusion=confusion_matrix(gold, pred, labels, statuses),
        abstention_rate=counts["abstained"] / n,
        error_rate=counts["error"] / n,
        exception_rate=counts["exception"] / n,
        counts=counts,
        calibration=cal,
        confidence_calibration=conf_cal,
        usage=usage_stats([r.usage for r in rows], [r.latency_s for r in rows]),
    )
