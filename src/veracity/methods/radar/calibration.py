"""Offline calibration of RADAR's stopping thresholds τ_s and τ_v (paper, Appendix C).

One inference pass over a development set runs every debate to its last round while
recording, after each round, the stop margin s, the round judge's label and confidence
c, and the tokens each part of the round cost (``record_signals``). From those records
the outcome of any threshold pair can be replayed without the model: a claim stops after
the first round r (before the last) with s_r ≥ τ_s and c_r ≥ τ_v, takes the round
judge's label of that round, and costs the tokens spent up to it (with RADAR's lazy round
judge, judge tokens count only in rounds where s ≥ τ_s). `grid_search` scans
τ_s ∈ [−1, 1] and τ_v ∈ [0, 1] for the best accuracy — the paper calibrates for final
classification accuracy; macro-F1 is an option (`objective`) — ties going to fewer
tokens, keeps every grid point (the sensitivity tables 12–13 and a heat map are read
from them, `sensitivity`) and compares the best with always running every round.

Everything here is pure: records in, numbers out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from veracity.core.labels.scores import accuracy, macro_f1
from veracity.core.types import Verdict


class CalibrationError(ValueError):
    """Records that cannot be calibrated on (missing signals, nothing usable)."""


class RoundSignal(BaseModel):
    """The signals of one round of a recorded debate, and what the round cost.

    Attributes:
        round: the round number (1 = opening).
        stop_margin: s = p(STOP) − p(CONTINUE); None after the last round (not asked).
        confidence: c, the round judge's largest label probability.
        label: the round judge's verdict.
        debate_tokens: tokens of the agents' turns in this round.
        stop_tokens: tokens of the stop agent's call(s) after this round.
        judge_tokens: tokens of the round judge's call(s) after this round.
    """

    model_config = ConfigDict(extra="forbid")

    round: int
    stop_margin: float | None
    confidence: float
    label: str
    debate_tokens: int = Field(default=0, ge=0)
    stop_tokens: int = Field(default=0, ge=0)
    judge_tokens: int = Field(default=0, ge=0)


class SignalRecord(BaseModel):
    """One development claim: gold label, per-round signals and token costs.

    Attributes:
        id: the example id.
        gold: the gold label in RADAR's label space.
        rounds: signals of every round, in order; the last one is the full debate.
        before_tokens: tokens spent before the first round (domain inference).
        final_judge_tokens: one greedy judge call after the last round — the only judge
            call of a debate run without stopping checks.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    gold: str
    rounds: list[RoundSignal] = Field(min_length=1)
    before_tokens: int = Field(default=0, ge=0)
    final_judge_tokens: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> SignalRecord:
        numbers = [r.round for r in self.rounds]
        if numbers != sorted(set(numbers)):
            raise ValueError(f"{self.id}: rounds must be distinct and in order, got {numbers}")
        return self

    def outcome(self, tau_s: float, tau_v: float, *, lazy: bool = True) -> tuple[RoundSignal, int]:
        """The round a debate with these thresholds stops after, and its tokens.

        Args:
            lazy: the round judge is asked only when s ≥ τ_s (RADAR's `lazy_judge`);
                otherwise after every round.
        """
        spent = self.before_tokens
        for signal in self.rounds[:-1]:
            spent += signal.debate_tokens + signal.stop_tokens
            s = signal.stop_margin
            reached = s is not None and s >= tau_s
            if reached or not lazy:
                spent += signal.judge_tokens
            if reached and signal.confidence >= tau_v:
                return signal, spent
        last = self.rounds[-1]
        return last, spent + last.debate_tokens + last.stop_tokens + last.judge_tokens

    @property
    def fixed_tokens(self) -> int:
        """Every round, no stopping checks, one final judge call."""
        debate = sum(r.debate_tokens for r in self.rounds)
        return self.before_tokens + debate + self.final_judge_tokens


def record_from_verdict(
    example_id: str, gold: str, verdict: Verdict | Mapping[str, Any]
) -> SignalRecord:
    """A `SignalRecord` from a RADAR verdict (or its JSON form) run with ``record_signals``.

    Raises:
        CalibrationError: the verdict has no label or lacks the per-round signals.
    """
    if isinstance(verdict, Verdict):
        verdict = verdict.model_dump(mode="json")
    if verdict.get("label") is None:
        raise CalibrationError(f"{example_id}: the verdict has no label")
    meta = verdict.get("metadata") or {}
    signals = meta.get("signals") or []
    usage = meta.get("tokens_by_round") or {}
    by_round = {row["round"]: row for row in usage.get("rounds", [])}
    if not signals or not by_round:
        raise CalibrationError(
            f"{example_id}: no per-round signals in the verdict; run RADAR with "
            "record_signals: true"
        )
    rounds = []
    for check in signals:
        n = check["round"]
        if check.get("label") is None or check.get("confidence") is None:
            raise CalibrationError(
                f"{example_id}: round {n} has no round-judge verdict; calibration needs a "
                "run with record_signals: true and early_stop: false"
            )
        row = by_round.get(n, {})
        rounds.append(
            RoundSignal(
                round=n,
                stop_margin=check.get("stop_margin"),
                confidence=float(check["confidence"]),
                label=check["label"],
                debate_tokens=int(row.get("debate", 0)),
                stop_tokens=int(row.get("stop", 0)),
                judge_tokens=int(row.get("judge", 0)) + int(row.get("judge_samples", 0)),
            )
        )
    return SignalRecord(
        id=example_id,
        gold=gold,
        rounds=rounds,
        before_tokens=int(usage.get("before", 0)),
        final_judge_tokens=int(by_round[rounds[-1].round].get("judge", 0)),
    )


# --------------------------------------------------------------------------- metrics


class GridPoint(BaseModel):
    """The replayed outcome of one threshold pair (None: always every round).

    Attributes:
        mean_tokens: average tokens per claim.
        stopped_at: how many claims stopped after each round.
    """

    model_config = ConfigDict(extra="forbid")

    tau_s: float | None
    tau_v: float | None
    macro_f1: float
    accuracy: float
    mean_tokens: float
    mean_rounds: float
    stopped_at: dict[int, int]


def evaluate(
    records: Sequence[SignalRecord],
    tau_s: float,
    tau_v: float,
    labels: Sequence[str],
    *,
    lazy: bool = True,
) -> GridPoint:
    """Replay thresholds (τ_s, τ_v) over the records."""
    if not records:
        raise CalibrationError("no records to calibrate on")
    outcomes = [r.outcome(tau_s, tau_v, lazy=lazy) for r in records]
    return _point(records, [o for o, _ in outcomes], [t for _, t in outcomes], labels, tau_s, tau_v)


def evaluate_fixed(records: Sequence[SignalRecord], labels: Sequence[str]) -> GridPoint:
    """Always every round, no stopping checks: the reference early stopping must beat."""
    if not records:
        raise CalibrationError("no records to calibrate on")
    outcomes = [r.rounds[-1] for r in records]
    return _point(records, outcomes, [r.fixed_tokens for r in records], labels, None, None)


def _point(
    records: Sequence[SignalRecord],
    outcomes: Sequence[RoundSignal],
    tokens: Sequence[int],
    labels: Sequence[str],
    tau_s: float | None,
    tau_v: float | None,
) -> GridPoint:
    gold = [r.gold for r in records]
    pred = [o.label for o in outcomes]
    n = len(records)
    return GridPoint(
        tau_s=tau_s,
        tau_v=tau_v,
        macro_f1=macro_f1(gold, pred, labels),
        accuracy=accuracy(gold, pred),
        mean_tokens=sum(tokens) / n,
        mean_rounds=sum(o.round for o in outcomes) / n,
        stopped_at=dict(sorted(Counter(o.round for o in outcomes).items())),
    )


# --------------------------------------------------------------------------- search


def grid(low: float, high: float, step: float) -> list[float]:
    """Evenly spaced values from `low` to `high` inclusive (rounded to 6 decimals)."""
    if step <= 0 or high < low:
        raise ValueError("need step > 0 and high >= low")
    count = round((high - low) / step)
    return [round(low + i * step, 6) for i in range(count + 1)]


Objective = Literal["accuracy", "macro_f1"]


class CalibrationResult(BaseModel):
    """The chosen thresholds, their replayed figures, and the fixed-rounds reference.

    Attributes:
        objective: the metric the thresholds were chosen for.
        best: the best threshold pair.
        fixed: every claim runs every round, no stopping checks.
        tokens_saved: 1 − best.mean_tokens / fixed.mean_tokens (negative: early stopping
            cost more than it saved on this set).
        n: records used.
        grid_size: threshold pairs tried.
        points: every threshold pair's replayed outcome (τ_s ascending, then τ_v).
    """

    model_config = ConfigDict(extra="forbid")

    objective: Objective = "accuracy"
    best: GridPoint
    fixed: GridPoint
    tokens_saved: float
    n: int
    grid_size: int
    points: list[GridPoint] = Field(default_factory=list)

    def matrix(self, metric: Objective) -> tuple[list[float], list[float], list[list[float]]]:
        """(τ_s values, τ_v values, metric[τ_s][τ_v]) over the whole grid."""
        s_values = sorted({p.tau_s for p in self.points if p.tau_s is not None})
        v_values = sorted({p.tau_v for p in self.points if p.tau_v is not None})
        at = {(p.tau_s, p.tau_v): getattr(p, metric) for p in self.points}
        return s_values, v_values, [[at[(s, v)] for v in v_values] for s in s_values]


def sensitivity(
    result: CalibrationResult, vary: Literal["tau_s", "tau_v"], values: Iterable[float]
) -> list[GridPoint]:
    """The grid points along one threshold with the other held at its chosen value (the
    paper's Tables 12 and 13); values not on the grid are skipped."""
    fixed_name = "tau_v" if vary == "tau_s" else "tau_s"
    held = getattr(result.best, fixed_name)
    index = {(p.tau_s, p.tau_v): p for p in result.points}
    out = []
    for value in values:
        key = (round(value, 6), held) if vary == "tau_s" else (held, round(value, 6))
        if key in index:
            out.append(index[key])
    return out


def grid_search(
    records: Sequence[SignalRecord],
    labels: Sequence[str],
    *,
    tau_s_values: Iterable[float] | None = None,
    tau_v_values: Iterable[float] | None = None,
    lazy: bool = True,
    objective: Objective = "accuracy",
) -> CalibrationResult:
    """The threshold pair with the best `objective`; ties go to fewer tokens, then to the
    pair met first in grid order (τ_s ascending, then τ_v ascending).

    Args:
        records: recorded development claims.
        labels: the label space's labels (macro-F1 order).
        tau_s_values: τ_s candidates (default −1 to 1 in steps of 0.05).
        tau_v_values: τ_v candidates (default 0 to 1 in steps of 0.05).
        lazy: costs as with RADAR's `lazy_judge` (the round judge only when s ≥ τ_s).
        objective: ``accuracy`` (the paper's) or ``macro_f1``.
    """
    s_values = sorted(set(tau_s_values if tau_s_values is not None else grid(-1.0, 1.0, 0.05)))
    v_values = sorted(set(tau_v_values if tau_v_values is not None else grid(0.0, 1.0, 0.05)))
    if not s_values or not v_values:
        raise CalibrationError("the threshold grid is empty")
    best: GridPoint | None = None
    points = []
    for tau_s in s_values:
        for tau_v in v_values:
            point = evaluate(records, tau_s, tau_v, labels, lazy=lazy)
            points.append(point)
            if best is None or _better(point, best, objective):
                best = point
    assert best is not None
    fixed = evaluate_fixed(records, labels)
    saved = 1.0 - best.mean_tokens / fixed.mean_tokens if fixed.mean_tokens else 0.0
    return CalibrationResult(
        objective=objective,
        points=points,
        best=best,
        fixed=fixed,
        tokens_saved=saved,
        n=len(records),
        grid_size=len(s_values) * len(v_values),
    )


def _better(a: GridPoint, b: GridPoint, objective: Objective) -> bool:
    x, y = getattr(a, objective), getattr(b, objective)
    if abs(x - y) > 1e-12:
        return x > y
    return a.mean_tokens < b.mean_tokens - 1e-9
