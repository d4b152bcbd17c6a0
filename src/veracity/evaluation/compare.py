"""`veracity compare RUN_A RUN_B ...`: runs side by side, with paired differences.

The first run is the reference. Every other run is paired with it on the example ids
both hold: the differences in accuracy and macro-F1 are computed on those shared
examples only, and a paired bootstrap (resampling the shared ids with replacement,
seeded) gives a 95% percentile interval for the macro-F1 difference. Runs must agree on
the gold label of every shared example (same label space and mapping), or the
comparison is refused.

A repeated run's parent directory stands for its finished repeats (each a run of its
own). Runs are named by their folder, with as many parent folders as it takes to tell
two apart (``a/repeat-1`` and ``b/repeat-1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict

from veracity.core.errors import MetricsError
from veracity.core.types import cost_text
from veracity.evaluation.document_metrics import headline as document_headline
from veracity.evaluation.metrics import accuracy, macro_f1
from veracity.evaluation.repeats import finished_repeats, is_repeated
from veracity.evaluation.report import RunResult, load_run


class RunRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    run: str
    label: str = ""  # the run's name in tables: its folder, with parents where two clash
    method: str
    model: str
    dataset: str
    labels: str
    n: int
    accuracy: float
    macro_f1: float
    tokens_per_example: float
    latency_p50_s: float | None
    latency_p95_s: float | None
    cost_usd: float
    unpriced_llm_calls: int = 0
    wall_time_s: float  # summed over the run's sessions
    # the document task's headline figures (name, value; None: n/a); empty for other runs
    document: list[tuple[str, float | None]] = []


class Paired(BaseModel):
    """Run `other` minus the reference run on their shared examples."""

    model_config = ConfigDict(extra="forbid")

    reference: str
    other: str
    shared: int
    accuracy_diff: float
    macro_f1_diff: float
    ci_low: float
    ci_high: float
    n_boot: int
    seed: int


class Comparison(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runs: list[RunRow]
    paired: list[Paired]


def _row(run: RunResult, label: str) -> RunRow:
    m, u = run.metrics, run.metrics.usage
    return RunRow(
        run=str(run.path),
        label=label,
        method=run.config.method,
        model=run.model,
        dataset=f"{run.config.dataset}/{run.config.split}",
        labels=run.space.name,
        n=m.n,
        accuracy=m.accuracy,
        macro_f1=m.macro_f1,
        tokens_per_example=u.tokens_per_example,
        latency_p50_s=u.latency_p50_s,
        latency_p95_s=u.latency_p95_s,
        cost_usd=u.cost_usd,
        unpriced_llm_calls=u.unpriced_llm_calls,
        wall_time_s=run.wall_time_s,
        document=document_headline(m.extra),
    )


def macro_f1_batch(gold: np.ndarray, pred: np.ndarray, n_classes: int) -> np.ndarray:
    """Macro-F1 of each row of index-encoded resamples.

    Args:
        gold: (B, n) class indices.
        pred: (B, n) class indices, -1 for no prediction.
        n_classes: number of classes.

    Returns:
        (B,) macro-F1, averaging over the classes present in each row's gold or
        predictions, exactly as `metrics.macro_f1` does.
    """
    f1_sum = np.zeros(gold.shape[0])
    present_n = np.zeros(gold.shape[0])
    for c in range(n_classes):
        g, p = gold == c, pred == c
        tp = (g & p).sum(axis=1)
        support, n_pred = g.sum(axis=1), p.sum(axis=1)
        denom = support + n_pred  # F1 = 2·tp / (support + predicted)
        f1 = np.divide(2 * tp, denom, out=np.zeros(gold.shape[0]), where=denom > 0)
        f1_sum += f1
        present_n += denom > 0
    return f1_sum / np.maximum(present_n, 1)


def paired_bootstrap(
    gold: Sequence[str],
    pred_a: Sequence[str | None],
    pred_b: Sequence[str | None],
    labels: Sequence[str],
    n_boot: int = 1000,
    seed: int = 0,
) -> tuple[float, float]:
    """95% percentile interval of macro-F1(b) − macro-F1(a) over paired resamples."""
    if n_boot < 1:
        raise MetricsError("n_boot must be at least 1")
    index = {label: i for i, label in enumerate(labels)}
    g = np.array([index[x] for x in gold])
    a = np.array([index[x] if x is not None else -1 for x in pred_a])
    b = np.array([index[x] if x is not None else -1 for x in pred_b])
    rng = np.random.default_rng(seed)
    diffs = np.empty(n_boot)
    chunk = max(1, min(n_boot, 2_000_000 // max(len(g), 1)))  # bound memory per batch
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, len(g), size=(stop - start, len(g)))
        diffs[start:stop] = macro_f1_batch(g[idx], b[idx], len(labels)) - macro_f1_batch(
            g[idx], a[idx], len(labels)
        )
    low, high = np.percentile(diffs, [2.5, 97.5])
    return float(low), float(high)


def _pair(
    ref: RunResult, other: RunResult, n_boot: int, seed: int, names: tuple[str, str]
) -> Paired:
    a = {r.id: r for r in ref.records}
    b = {r.id: r for r in other.records}
    shared = sorted(set(a) & set(b))
    if not shared:
        raise MetricsError(f"{ref.name} and {other.name} share no example ids")
    if ref.space.name != other.space.name:
        raise MetricsError(
            f"{ref.name} uses labels {ref.space.name!r} and {other.name} {other.space.name!r}; "
            "compare runs in the same label space"
        )
    mismatch = [i for i in shared if a[i].gold != b[i].gold]
    if mismatch:
        raise MetricsError(
            f"{ref.name} and {other.name} disagree on the gold label of {len(mismatch)} shared "
            f"examples (e.g. {mismatch[0]!r}); they are not the same benchmark"
        )
    gold = [a[i].gold for i in shared]
    pa, pb = [a[i].predicted for i in shared], [b[i].predicted for i in shared]
    labels = list(ref.space.labels)
    low, high = paired_bootstrap(gold, pa, pb, labels, n_boot, seed)
    return Paired(
        reference=names[0],
        other=names[1],
        shared=len(shared),
        accuracy_diff=accuracy(gold, pb) - accuracy(gold, pa),
        macro_f1_diff=macro_f1(gold, pb, labels) - macro_f1(gold, pa, labels),
        ci_low=low,
        ci_high=high,
        n_boot=n_boot,
        seed=seed,
    )


def compare_runs(paths: Sequence[str | Path], n_boot: int = 1000, seed: int = 0) -> Comparison:
    """Load the runs and compare each with the first."""
    expanded = [run for p in paths for run in _runs_of(Path(p))]
    if len(expanded) < 2:
        raise MetricsError("give at least two run directories to compare")
    runs = [load_run(p) for p in expanded]
    labels = run_labels(expanded)
    return Comparison(
        runs=[_row(r, label) for r, label in zip(runs, labels, strict=True)],
        paired=[
            _pair(runs[0], r, n_boot, seed, (labels[0], label))
            for r, label in zip(runs[1:], labels[1:], strict=True)
        ],
    )


def _runs_of(path: Path) -> list[Path]:
    """`path`, or a repeated run's finished repeats in order (its parent holds none)."""

    if not is_repeated(path):
        return [path]
    found = [run for _, run in finished_repeats(path)]
    if not found:
        raise MetricsError(f"{path}: a repeated run with no finished repeat yet; resume it")
    return found


def run_labels(paths: Sequence[Path]) -> list[str]:
    """A distinct name per run: its folder, with parent folders added until no two runs
    share a name (the full path where even that does not tell them apart)."""
    parts = [Path(p).resolve().parts for p in paths]
    depth = 1
    while True:
        labels = ["/".join(ps[-depth:]) for ps in parts]
        if len(set(labels)) == len(labels) or depth >= max(len(ps) for ps in parts):
            return labels
        depth += 1


def to_markdown(c: Comparison) -> str:
    """The comparison as two Markdown tables."""
    lines = [
        "| run | method | model | n | accuracy | macro-F1 | tokens/example "
        "| latency p50 / p95 (s) | wall time (s) | cost (USD) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in c.runs:
        p50 = "–" if r.latency_p50_s is None else f"{r.latency_p50_s:.2f}"
        p95 = "–" if r.latency_p95_s is None else f"{r.latency_p95_s:.2f}"
        lines.append(
            f"| {r.label} | {r.method} | {r.model} | {r.n} | {r.accuracy:.3f} "
            f"| {r.macro_f1:.3f} | {r.tokens_per_example:,.1f} | {p50} / {p95} "
            f"| {r.wall_time_s:.0f} | {cost_text(r.cost_usd, r.unpriced_llm_calls)} |"
        )
    lines += _document_table(c.runs)
    lines += [
        "",
        "| run − reference | shared | Δ accuracy | Δ macro-F1 | 95% CI (paired bootstrap) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for p in c.paired:
        lines.append(
            f"| {p.other} − {p.reference} | {p.shared} | {p.accuracy_diff:+.3f} "
            f"| {p.macro_f1_diff:+.3f} | [{p.ci_low:+.3f}, {p.ci_high:+.3f}] "
            f"(n={p.n_boot}, seed {p.seed}) |"
        )
    return "\n".join(lines) + "\n"


def _document_table(runs: Sequence[RunRow]) -> list[str]:
    """The document task's figures, a column per run (none when no run has them)."""
    names = next((r.document for r in runs if r.document), [])
    if not names:
        return []
    head = " | ".join(r.label for r in runs)
    lines = ["", f"| document figure | {head} |", "| --- |" + " --- |" * len(runs)]
    for i, (name, _) in enumerate(names):
        cells = []
        for r in runs:
            value = r.document[i][1] if i < len(r.document) else None
            cells.append("n/a" if value is None else f"{value:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines
