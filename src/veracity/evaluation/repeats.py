"""Repeated runs: one run config evaluated over several seeds, with the spread of its metrics.

``veracity eval --repeats N`` (``repeats: N`` in a run config) runs the config N times,
with seeds seed, seed + 1, ..., seed + N − 1. Repeat K is a complete run directory of
its own, ``RUN_DIR/repeat-K``: resumable, with its own predictions, metrics and caches,
so a seeded example sample (``--sample``, ``--sample-per-class``) is drawn again and
sampled model calls are made afresh. ``RUN_DIR/run.json`` holds the parent config
(re-running the same command resumes every repeat; a larger N adds repeats), and
``RUN_DIR/repeats.json`` the median, minimum, maximum and interquartile range of each
metric over the repeats that finished.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from veracity.core.config import RunConfig
from veracity.core.errors import EvalError, RunStoreError
from veracity.evaluation.metrics import Metrics, percentile
from veracity.evaluation.prepare import check_resumable, prepare_run
from veracity.evaluation.runner import run_session
from veracity.evaluation.store import RunStore
from veracity.llm.base import LLM

SUMMARY_FILE = "repeats.json"


class Spread(BaseModel):
    """One metric over the repeats: median, range, quartiles and every value (by repeat)."""

    model_config = ConfigDict(extra="forbid")

    median: float
    min: float
    max: float
    q1: float
    q3: float
    iqr: float
    values: list[float]

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        q1, q3 = percentile(values, 25), percentile(values, 75)
        assert q1 is not None and q3 is not None  # values is not empty
        return cls(
            median=statistics.median(values), min=min(values), max=max(values),
            q1=q1, q3=q3, iqr=q3 - q1, values=values,
        )  # fmt: skip


class RepeatSummary(BaseModel):
    """What ``repeats.json`` holds.

    Attributes:
        repeats: repeats configured.
        finished: repeats whose last session finished (only these are aggregated).
        seeds: the seed of each finished repeat.
        runs: the run directory of each finished repeat.
        n: examples per finished repeat.
        metrics: metric name -> spread; names as paper tables use them (``accuracy``,
            ``macro_f1``, ``f1:<label>``) plus rates and per-example usage.
    """

    model_config = ConfigDict(extra="forbid")

    repeats: int
    finished: int
    seeds: list[int]
    runs: list[str]
    n: list[int]
    metrics: dict[str, Spread]


def is_repeated(path: str | Path) -> bool:
    """Whether `path` is the parent directory of a repeated run."""
    store = RunStore(path)
    return store.exists() and (store.read_config().get("repeats") or 1) > 1


def plan_repeats(cfg: RunConfig, out: str | Path) -> list[tuple[RunConfig, Path]]:
    """Check the parent directory, write its config, and return each repeat's config and
    run directory.

    Raises:
        EvalError: `out` holds a single run, or a repeated run of a different config.
    """
    if cfg.repeats < 2:
        raise EvalError("a repeated run needs repeats of at least 2")
    parent = RunStore(out)
    if parent.predictions_path.exists():
        raise EvalError(f"{parent.path} holds a single run; choose another --out for repeats")
    check_resumable(parent, cfg)
    parent.write_record(cfg.model_dump(mode="json"))  # no spec: the repeats hold the runs
    return [
        (cfg.with_overrides({"seed": cfg.seed + i, "repeats": 1}), parent.path / f"repeat-{i + 1}")
        for i in range(cfg.repeats)
    ]


def _values(metrics: Metrics) -> dict[str, float]:
    u = metrics.usage
    values = {
        "accuracy": metrics.accuracy,
        "macro_f1": metrics.macro_f1,
        **{f"f1:{label}": s.f1 for label, s in metrics.per_class.items()},
        "abstention_rate": metrics.abstention_rate,
        "error_rate": metrics.error_rate,
        "tokens_per_example": u.tokens_per_example,
        "llm_calls_per_example": u.llm_calls_per_example,
        "cost_per_example_usd": u.cost_per_example_usd,
    }
    if u.latency_p50_s is not None:
        values["latency_p50_s"] = u.latency_p50_s
    return values


def finished_repeats(out: str | Path, repeats: int | None = None) -> list[tuple[int, Path]]:
    """The finished repeats under a repeated run's parent `out`: (number, directory)."""
    parent = Path(out)
    if repeats is None:
        repeats = int(RunStore(parent).read_config().get("repeats") or 1)
    found = []
    for k in range(1, repeats + 1):
        store = RunStore(parent / f"repeat-{k}")
        sessions = store.read_sessions() if store.exists() else []
        if sessions and sessions[-1].get("status") == "finished":
            found.append((k, store.path))
    return found


def summarize_repeats(out: str | Path) -> RepeatSummary:
    """Aggregate the finished repeats under `out` and write ``repeats.json``.

    Raises:
        RunStoreError: `out` is not a repeated run, or no repeat has finished.
    """
    parent = RunStore(out)
    cfg = RunConfig.model_validate(parent.read_config())
    if cfg.repeats < 2:
        raise RunStoreError(f"{parent.path} is not a repeated run (repeats: {cfg.repeats})")
    seeds, runs, sizes, rows = [], [], [], []
    for k, path in finished_repeats(parent.path, cfg.repeats):
        store = RunStore(path)
        metrics = Metrics.model_validate(store.read_json(store.metrics_path))
        seeds.append(int(store.read_config().get("seed", cfg.seed + k - 1)))
        runs.append(store.path.name)
        sizes.append(metrics.n)
        rows.append(_values(metrics))
    if not rows:
        raise RunStoreError(f"{parent.path}: no repeat has finished yet; resume the run")
    names = [name for name in rows[0] if all(name in r for r in rows)]
    summary = RepeatSummary(
        repeats=cfg.repeats,
        finished=len(rows),
        seeds=seeds,
        runs=runs,
        n=sizes,
        metrics={name: Spread.of([r[name] for r in rows]) for name in names},
    )
    parent.write_json(parent.path / SUMMARY_FILE, summary.model_dump(mode="json"))
    return summary


async def run_repeats(
    cfg: RunConfig,
    out: str | Path,
    *,
    llm: LLM | None = None,
    concurrency: int | None = None,
) -> RepeatSummary:
    """Run (or resume) every repeat of `cfg` under `out`, then summarize them."""
    for sub_cfg, sub_dir in plan_repeats(cfg, out):
        await run_session(prepare_run(sub_cfg, sub_dir, llm=llm), concurrency)
    return summarize_repeats(out)
