"""`veracity eval` (`datasets` is in `cli.datasets`; `report` and `compare` in `cli.runs`)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from veracity.cli.app import app, console, fail, leave_interrupted, out, styled
from veracity.cli.common import (
    BASE_URL_OPTION,
    ENGINE_HELP,
    LLM_LIMIT_HELP,
    MODEL_OPTION,
    PROVIDER_OPTION,
    RAY_ADDRESS_HELP,
    SOURCE_OPTION,
    WORKERS_HELP,
    engine_for,
    ensure_model,
    parse_set_options,
    parse_source_options,
)
from veracity.cli.plugins import given_run_options, with_run_options
from veracity.core.errors import (
    ConfigError,
    EngineError,
    EvalError,
    LabelError,
    MetricsError,
    RunStoreError,
)

if TYPE_CHECKING:  # the rest is imported where it is used, so that --help starts fast
    from rich.table import Table

    from veracity.core.config import RunConfig
    from veracity.evaluation.metrics import Metrics
    from veracity.evaluation.runner import PreparedRun


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "run"


def default_out(cfg: RunConfig) -> Path:
    """``runs/<experiment or method>[-variant]-<dataset>-<split>-<model>`` (stable, so a
    re-run of the same command resumes)."""
    from veracity.evaluation.runner import open_dataset

    parts = [cfg.name or cfg.method]
    if cfg.variant:
        parts.append(cfg.variant)
    split = cfg.split
    if split is None and cfg.dataset:
        try:
            split = open_dataset(cfg.dataset).info.splits[0]
        except EvalError:
            split = None  # prepare_run reports the unknown dataset
    model = cfg.llm.model.rsplit("/", 1)[-1].removesuffix(".gguf")
    parts += [cfg.dataset or "", split or "", model]
    return Path("runs") / _slug("-".join(p for p in parts if p))


def _run_with_progress(
    run: PreparedRun, concurrency: int | None, show: bool, engine: Any = None
) -> Metrics:

    from veracity.cli.progress import JobProgress, run_stats_parts
    from veracity.cli.progress_view import ProgressView
    from veracity.core.infra import run_interruptible
    from veracity.evaluation.runner import RunningStats, run_session

    stats = RunningStats()
    for rec in run.store.read_predictions():
        stats.add(rec)
    job = JobProgress(f"{run.config.method} · {run.info.name}", total=len(run.examples))
    job.advance(len(run.examples) - len(run.todo), earlier=True)  # resumed: not in the pace
    job.stats = run_stats_parts(stats)
    with ProgressView(job, console, enabled=show) as view, view.watching():

        def on_record(rec) -> None:
            stats.add(rec)
            view.item_done(stats=run_stats_parts(stats), usage=rec.usage)

        return run_interruptible(run_session(run, concurrency, on_record, engine))


def _summary(run: PreparedRun, m: Metrics) -> Table:
    from rich.table import Table

    from veracity.core.types import cost_text

    u = m.usage
    table = Table(
        "metric", "value", title=f"{run.config.method} on {run.info.name}/{run.config.split}"
    )
    rows = [
        ("examples", str(m.n)),
        ("label space", m.label_space),
        ("accuracy", f"{m.accuracy:.3f}"),
        ("macro-F1", f"{m.macro_f1:.3f}"),
        (
            "abstained / error / crashed",
            " / ".join(str(m.counts[k]) for k in ("abstained", "error", "exception")),
        ),
        ("tokens / example", f"{u.tokens_per_example:,.1f}"),
        ("LLM calls / example", f"{u.llm_calls_per_example:.2f}"),
        ("latency p50 / p95 (s)", f"{u.latency_p50_s:.2f} / {u.latency_p95_s:.2f}"),
        ("cost (USD)", cost_text(u.cost_usd, u.unpriced_llm_calls)),
    ]
    if m.calibration is not None:
        rows.append(("ECE (veracity)", f"{m.calibration.ece:.3f}"))
    from veracity.evaluation.document_metrics import headline

    rows += [(name, "n/a" if v is None else f"{v:.3f}") for name, v in headline(m.extra)]
    for k, v in rows:
        table.add_row(k, v)
    return table


@app.command("eval")
def eval_(
    ctx: typer.Context,
    method: str = typer.Option(
        None, "--method", "-m", help="registered method (see `veracity methods`)"
    ),
    dataset: str = typer.Option(None, "--dataset", "-d", help="registered dataset name"),
    split: str = typer.Option(None, help="dataset split (default: the dataset's first)"),
    limit: int = typer.Option(None, help="check at most N examples"),
    sample: bool = typer.Option(
        None, "--sample/--first", help="with --limit: a seeded random sample, or the first N"
    ),
    seed: int = typer.Option(None, help="seed for --sample and --sample-per-class"),
    sample_per_class: int = typer.Option(
        None, "--sample-per-class", help="a balanced, seeded sample: N examples of each class"
    ),
    repeats: int = typer.Option(
        None, help="run N times with seeds seed..seed+N-1 (RUN_DIR/repeat-K), report the spread"
    ),
    concurrency: int = typer.Option(None, help="examples checked at once (default: cores, 2-8)"),
    config: Path = typer.Option(None, help="run or experiment YAML (configs/experiments/)"),
    variant: str = typer.Option(None, help="variant of the experiment config"),
    spec: Path = typer.Option(
        None,
        "--spec",
        help="run again the effective spec a run directory recorded (RUN_DIR/run.json); "
        "flags still win. A spec that names an endpoint, a key variable, a command or files "
        "outside its run directory is shown and refused without --trust-spec",
    ),
    trust_spec: bool = typer.Option(
        False,
        "--trust-spec",
        help="with --spec: run a spec that reaches outside its run directory (endpoint, "
        "API-key variable, commands, files elsewhere) as it is; only for specs you trust",
    ),
    out_dir: Path = typer.Option(None, "--out", "-o", help="run directory (re-run to resume)"),
    labels: str = typer.Option(None, help="the method's label space (gold labels are mapped)"),
    model: str = MODEL_OPTION,
    base_url: str = BASE_URL_OPTION,
    provider: str = PROVIDER_OPTION,
    threads: int = typer.Option(
        None,
        "--threads",
        min=1,
        help="CPU threads of the embedded model (default: VERACITY_THREADS, else half the cores)",
    ),
    data_dir: Path = typer.Option(
        None, help="benchmark data directory (default VERACITY_DATA_DIR)"
    ),
    retry_errors: bool = typer.Option(
        False, help="check again the examples that errored or crashed"
    ),
    replay_from: Path = typer.Option(
        None, help="replay the LLM responses recorded in this run directory"
    ),
    progress: bool = typer.Option(True, help="show the progress bar"),
    source: list[str] = SOURCE_OPTION,
    settings: list[str] = typer.Option(
        None,
        "--set",
        metavar="KEY=VALUE",
        help="a method setting KEY=VALUE as for `veracity check` (repeatable)",
    ),
    gold_evidence: bool = typer.Option(
        None,
        "--gold-evidence/--retrieved-evidence",
        help="give each claim its gold evidence (full-evidence settings) or let the method "
        "retrieve (default)",
    ),
    engine: str = typer.Option("local", help=ENGINE_HELP),
    ray_address: str = typer.Option(None, help=RAY_ADDRESS_HELP),
    workers: int = typer.Option(None, help=WORKERS_HELP),
    llm_limit: int = typer.Option(None, help=LLM_LIMIT_HELP),
) -> None:
    """Evaluate a method on a benchmark; resumable, writes a run directory."""
    from veracity.evaluation.runner import FATAL

    try:
        flags = {
            "method": method, "dataset": dataset, "split": split, "limit": limit,
            "sample": sample, "seed": seed, "concurrency": concurrency, "labels": labels,
            "sample_per_class": sample_per_class, "repeats": repeats,
            "data_dir": str(data_dir) if data_dir else None, "gold_evidence": gold_evidence,
            "llm": {"model": model, "base_url": base_url, "provider": provider,
                    "n_threads": threads},
            "sources": parse_source_options(source or []) or None,
            "method_config": parse_set_options(settings or []) or None,
        }  # fmt: skip
        runner = engine_for(engine, ray_address, workers, llm_limit)
        from veracity.runtime import evaluation_config

        cfg = evaluation_config(
            config, out_dir, variant, flags, spec, trust_spec, replay=replay_from is not None
        )
        plugged = given_run_options(ctx)  # the options methods add (MERMAID's --memory)
        cfg = with_run_options(cfg, plugged) if plugged else cfg
        if cfg.repeats > 1:
            _eval_repeats(cfg, out_dir or default_out(cfg), replay_from, retry_errors,
                          concurrency, progress, runner)  # fmt: skip
            return
        run = _prepare(cfg, out_dir, replay_from, retry_errors)
    except (EvalError, ConfigError, RunStoreError, LabelError) as exc:
        fail(str(exc))
    except FATAL as exc:  # a missing model or rejected credentials
        fail(str(exc), code=3)
    _announce(run)
    if _execute(run, concurrency, progress, engine=runner):
        raise typer.Exit(FAILED_RUN_EXIT)


def _announce(run: PreparedRun, prefix: str = "") -> None:
    for note in run.notes:
        console.print(styled("{}[yellow]{}[/]", prefix, note), soft_wrap=True)
    done = len(run.examples) - len(run.todo)
    console.print(
        styled(
            "{}[bold]{}[/] on [bold]{}/{}[/]: {} examples ({} already done), labels {}, "
            "model {}, run directory {}",
            prefix, run.config.method, run.info.name, run.config.split, len(run.examples),
            done, run.space.name, run.config.llm.model, run.store.path,
        )
    )  # fmt: skip


def repeats_notice(cfg: RunConfig) -> str:
    """What a repeated run will do, said before it starts (a paper config that repeats
    ten samples runs ten times the checks of one)."""
    each = f"{cfg.limit} examples" if cfg.limit is not None else "every selected example"
    total = f" ({cfg.repeats * cfg.limit} checks in all)" if cfg.limit is not None else ""
    return (
        f"This run repeats {cfg.repeats} times, seeds {cfg.seed} to "
        f"{cfg.seed + cfg.repeats - 1}, {each} each{total}; --repeats 1 runs one sample."
    )


def _eval_repeats(
    cfg: RunConfig,
    out_dir: Path,
    replay_from: Path | None,
    retry_errors: bool,
    concurrency: int | None,
    progress: bool,
    engine: Any = None,
) -> None:
    """Every repeat in turn (resuming those begun), then the spread over the repeats."""
    from rich.table import Table

    from veracity.evaluation.repeats import plan_repeats, summarize_repeats

    plan = plan_repeats(cfg, out_dir)
    console.print(repeats_notice(cfg), soft_wrap=True)
    failed = []  # a repeat where most examples failed does not stop the others
    for k, (sub_cfg, sub_dir) in enumerate(plan, 1):
        replay = replay_from / sub_dir.name if replay_from is not None else None
        run = _prepare(sub_cfg, sub_dir, replay, retry_errors)
        _announce(run, f"repeat {k}/{cfg.repeats} (seed {sub_cfg.seed}): ")
        if _execute(run, concurrency, progress, resume_dir=out_dir, engine=engine):
            failed.append(f"{k} (seed {sub_cfg.seed}, {sub_dir})")
    summary = summarize_repeats(out_dir)
    title = f"{cfg.method}: {summary.finished} repeats, seeds {summary.seeds}"
    table = Table("metric", "median", "min", "max", "IQR", title=title)
    for name, s in summary.metrics.items():
        table.add_row(name, *(f"{v:.3f}" for v in (s.median, s.min, s.max, s.iqr)))
    out.print(table)
    console.print(f"report: veracity report {out_dir}", soft_wrap=True)
    if failed:
        console.print(
            styled(
                "[red bold]{} of {} repeats failed[/] (most of their examples errored): "
                "repeat {}; the spread above includes them. Fix and re-run with --retry-errors",
                len(failed), cfg.repeats, ", ".join(failed),
            ),
            soft_wrap=True,
        )  # fmt: skip
        raise typer.Exit(FAILED_RUN_EXIT)


def _prepare(
    cfg: RunConfig, out_dir: Path | None, replay_from: Path | None, retry_errors: bool
) -> PreparedRun:
    from veracity.evaluation.runner import prepare_run

    run = prepare_run(
        cfg, out_dir or default_out(cfg), replay_from=replay_from,
        ready=lambda spec: ensure_model(spec.llm),  # pulled before its backend is built
    )  # fmt: skip
    if retry_errors:
        keep = [r for r in run.store.read_predictions() if r.status not in ("error", "exception")]
        run.store.rewrite_predictions(keep)
    return run


def _execute(
    run: PreparedRun,
    concurrency: int | None,
    progress: bool,
    resume_dir: Path | None = None,
    engine: Any = None,
) -> bool:
    """Run, print the summary; whether most examples failed (the command then exits 2)."""
    from veracity.evaluation.runner import FATAL

    try:
        metrics = _run_with_progress(run, concurrency, progress, engine)
    except KeyboardInterrupt:
        saved = len(run.store.read_predictions())
        console.print(
            styled(
                "\n[yellow]interrupted[/]: {} of {} examples are saved in {}. Resume with:\n"
                "  veracity eval --out {}",
                saved, len(run.examples), run.store.predictions_path,
                resume_dir or run.store.path,
            ),
            soft_wrap=True,  # keep the command on one line, ready to copy
        )  # fmt: skip
        leave_interrupted()
    except (*FATAL, EngineError) as exc:
        fail(str(exc), code=3)
    except (EvalError, RunStoreError, MetricsError) as exc:
        fail(str(exc))
    out.print(_summary(run, metrics))
    crashed = metrics.counts["exception"]
    if crashed:
        console.print(
            styled(
                "[red]{} example(s) crashed[/]: tracebacks are in the `exception` field of {}; "
                "fix and re-run with --retry-errors",
                crashed, run.store.predictions_path,
            )
        )  # fmt: skip
    console.print(f"report: veracity report {run.store.path}", soft_wrap=True)
    return failing_run(run, metrics)


FAILED_RUN_EXIT = 2  # exit status of a run where most examples failed
FAILED_SHARE = 0.5  # more than this share of errors and crashes fails the run


def _first_line(rec) -> str:
    text = rec.exception or (rec.verdict.error if rec.verdict is not None else None) or "?"
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return (lines[-1] if rec.exception else lines[0])[:300] if lines else "?"


def failing_run(run: PreparedRun, metrics: Metrics) -> bool:
    """Say on the console when most examples errored or crashed, with the commonest
    reasons; True then (the command exits non-zero)."""
    failed = metrics.counts["error"] + metrics.counts["exception"]
    if not metrics.n or failed / metrics.n <= FAILED_SHARE:
        return False
    reasons = Counter(
        _first_line(r) for r in run.store.read_predictions() if r.status in ("error", "exception")
    )
    console.print(
        styled(
            "[red bold]{} of {} examples failed[/] (error or crash); the run's metrics mean "
            "little. Most common reasons:",
            failed, metrics.n,
        ),
        soft_wrap=True,
    )  # fmt: skip
    for reason, n in reasons.most_common(3):
        console.print(f"  {n} × {reason}", soft_wrap=True, markup=False, highlight=False)
    console.print(
        f"details: the `verdict.error` / `exception` fields of {run.store.predictions_path}; "
        "after fixing, re-run with --retry-errors",
        soft_wrap=True,
    )
    return True
