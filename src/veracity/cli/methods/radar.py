"""`veracity calibrate radar`: tune RADAR's stopping thresholds on a development set.

RADAR's front end on the command line, added through the ``veracity.commands`` entry point
``calibrate.radar`` (see `veracity.cli.plugins`); nothing imports it.

One inference pass (the evaluation runner, resumable) runs every debate to its last
round with the per-round signals recorded; the signals are cached as JSONL next to the
output file, so re-running the command only redoes the offline grid search. The chosen
thresholds are written into a run YAML that ``veracity check --config`` and
``veracity eval --config`` load.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from veracity.cli.app import console, fail, out, styled
from veracity.cli.common import BASE_URL_OPTION, MODEL_OPTION, PROVIDER_OPTION, ensure_model
from veracity.core.errors import ConfigError, EvalError, LabelError, RunStoreError

if TYPE_CHECKING:  # the rest is imported where it is used, so that --help starts fast
    from rich.table import Table

    from veracity.core.config import RunConfig
    from veracity.methods.radar.calibration import CalibrationResult, Objective, SignalRecord

_RECORDING = {"early_stop": False, "record_signals": True}


def signals_path(out_file: Path) -> Path:
    """The signal cache beside the output YAML (``NAME.signals.jsonl``)."""
    return out_file.with_name(out_file.stem + ".signals.jsonl")


def run_dir(out_file: Path) -> Path:
    """The run directory of the inference pass (``NAME.run/``)."""
    return out_file.with_name(out_file.stem + ".run")


def write_signals(path: Path, header: dict[str, Any], records: list[SignalRecord]) -> None:
    lines = [json.dumps({"header": header})]
    lines += [r.model_dump_json() for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_signals(path: Path) -> tuple[dict[str, Any], list[SignalRecord]]:
    """The cached header and records.

    Raises:
        CalibrationError: the file is not a signal cache written by this command.
    """
    from veracity.methods.radar.calibration import CalibrationError, SignalRecord

    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    try:
        header = json.loads(lines[0])["header"]
        records = [SignalRecord.model_validate_json(ln) for ln in lines[1:]]
    except (IndexError, KeyError, ValueError) as exc:
        raise CalibrationError(f"{path} is not a RADAR signal cache: {exc}") from exc
    return header, records


def _experiment(config: Path | None, flags: dict[str, Any]) -> RunConfig:
    """The inference pass's config: the base YAML, the flags, then RADAR recording every
    round's signals (early stopping off)."""
    from veracity import runtime
    from veracity.core.config import load_yaml

    named = load_yaml(config).get("method") if config is not None else None
    if named not in (None, "radar"):
        raise ConfigError(f"{config} configures {named!r}; calibration is for radar")
    base = runtime.layered_config(config, flags=flags)
    update: dict[str, Any] = {"method": "radar", "method_config": _RECORDING}
    if base.method_config.get("evidence") == "given":
        update["gold_evidence"] = True  # the given-evidence setting hands claims theirs
    if base.llm.cache_mode == "auto":
        update["llm"] = {"cache_mode": "record"}  # keep sampled replies too
    return base.with_overrides(update)


def _infer(cfg: RunConfig, directory: Path, concurrency: int | None) -> list[SignalRecord]:
    import asyncio

    from veracity.cli.progress import JobProgress, run_stats_parts
    from veracity.cli.progress_view import ProgressView
    from veracity.evaluation.runner import RunningStats, prepare_run, run_session
    from veracity.methods.radar.calibration import record_from_verdict

    run = prepare_run(cfg, directory)
    ensure_model(run.spec.llm)
    console.print(
        styled(
            "[bold]radar[/] (signals recorded every round) on [bold]{}/{}[/]: {} examples "
            "({} already done), run directory {}",
            run.info.name, run.config.split, len(run.examples),
            len(run.examples) - len(run.todo), run.store.path,
        )
    )  # fmt: skip
    stats = RunningStats()
    for rec in run.store.read_predictions():
        stats.add(rec)
    job = JobProgress("radar · every round", total=len(run.examples))
    job.advance(len(run.examples) - len(run.todo), earlier=True)  # resumed: not in the pace
    with ProgressView(job, console) as view, view.watching():

        def on_record(rec) -> None:
            stats.add(rec)
            view.item_done(stats=run_stats_parts(stats), usage=rec.usage)

        asyncio.run(run_session(run, concurrency, on_record))
    records, skipped = [], 0
    for rec in run.store.read_predictions():
        if rec.status != "ok" or rec.verdict is None:
            skipped += 1
            continue
        records.append(record_from_verdict(rec.id, rec.gold, rec.verdict))
    if skipped:
        console.print(styled("[yellow]{} example(s) without a verdict are left out[/]", skipped))
    return records


def _calibrated_config(cfg: RunConfig, result: CalibrationResult) -> dict[str, Any]:
    method_config = {k: v for k, v in cfg.method_config.items() if k not in _RECORDING}
    method_config.update(early_stop=True, tau_s=result.best.tau_s, tau_v=result.best.tau_v)
    data: dict[str, Any] = {"method": "radar", "method_config": method_config}
    data["llm"] = cfg.llm.model_dump(mode="json", exclude={"cache_mode"})
    if cfg.sources:
        data["sources"] = cfg.sources
    return data


def _yaml_text(data: dict[str, Any], header: dict[str, Any], result: CalibrationResult) -> str:
    import yaml

    b, f = result.best, result.fixed
    notes = [
        "RADAR stopping thresholds from `veracity calibrate radar`",
        f"calibrated on {header['dataset']}/{header['split']}, {result.n} claims, "
        f"model {header['model']}",
        f"chosen for {result.objective}: macro-F1 {b.macro_f1:.4f}, accuracy {b.accuracy:.4f}, "
        f"{b.mean_tokens:.1f} tokens/claim, {b.mean_rounds:.2f} rounds/claim",
        f"every round, no stopping: macro-F1 {f.macro_f1:.4f}, accuracy {f.accuracy:.4f}, "
        f"{f.mean_tokens:.1f} tokens/claim",
        f"tokens saved: {100 * result.tokens_saved:.1f}%",
    ]
    head = "".join(f"# {line}\n" for line in notes)
    return head + yaml.safe_dump(data, sort_keys=False)


def _table(result: CalibrationResult) -> Table:
    from rich.table import Table

    t = Table(
        "", "τ_s", "τ_v", "macro-F1", "accuracy", "tokens/claim", "rounds/claim", "stopped at"
    )
    for name, p in (("chosen", result.best), ("every round", result.fixed)):
        t.add_row(
            name,
            "–" if p.tau_s is None else f"{p.tau_s:+.2f}",
            "–" if p.tau_v is None else f"{p.tau_v:.2f}",
            f"{p.macro_f1:.4f}",
            f"{p.accuracy:.4f}",
            f"{p.mean_tokens:,.1f}",
            f"{p.mean_rounds:.2f}",
            ", ".join(f"r{k}: {v}" for k, v in p.stopped_at.items()),
        )
    return t


def _sensitivity_table(result: CalibrationResult, vary: str) -> Table:
    """The paper's Table 12 (τ_s) or 13 (τ_v): the other threshold held at its chosen
    value, on the paper's coarse steps."""
    from rich.table import Table

    from veracity.methods.radar.calibration import grid, sensitivity

    held = "τ_v" if vary == "tau_s" else "τ_s"
    value = result.best.tau_v if vary == "tau_s" else result.best.tau_s
    steps = grid(-1.0, 1.0, 0.2) if vary == "tau_s" else grid(0.0, 0.8, 0.2)
    t = Table(
        "τ_s" if vary == "tau_s" else "τ_v",
        "accuracy",
        "macro-F1",
        "tokens/claim",
        title=f"sensitivity ({held} held at {value:g})",
    )
    for p in sensitivity(result, vary, steps):  # type: ignore[arg-type]
        x = p.tau_s if vary == "tau_s" else p.tau_v
        t.add_row(f"{x:+.1f}", f"{p.accuracy:.4f}", f"{p.macro_f1:.4f}", f"{p.mean_tokens:,.1f}")
    return t


def write_grid(out_file: Path, result: CalibrationResult) -> tuple[Path, Path]:
    """The full τ_s × τ_v grid as CSV (every metric) and a heat map of the objective."""
    from veracity.evaluation.plots import grid_heatmap_png

    csv_path = out_file.with_name(out_file.stem + ".grid.csv")
    lines = ["tau_s,tau_v,accuracy,macro_f1,mean_tokens,mean_rounds"]
    lines += [
        f"{p.tau_s},{p.tau_v},{p.accuracy:.6f},{p.macro_f1:.6f},{p.mean_tokens:.2f},"
        f"{p.mean_rounds:.4f}"
        for p in result.points
    ]
    csv_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows, cols, values = result.matrix(result.objective)
    png = grid_heatmap_png(
        rows,
        cols,
        values,
        title=f"RADAR calibration: {result.objective} over τ_s × τ_v ({result.n} claims)",
        xlabel="τ_v (verdict confidence)",
        ylabel="τ_s (stop margin)",
        mark=(result.best.tau_s or 0.0, result.best.tau_v or 0.0),
    )
    png_path = out_file.with_name(out_file.stem + ".grid.png")
    png_path.write_bytes(png)
    return csv_path, png_path


def calibrate_radar(
    dataset: str = typer.Option(None, "--dataset", "-d", help="registered dataset name"),
    split: str = typer.Option("dev", help="development split (keep the test split for testing)"),
    limit: int = typer.Option(None, help="use at most N examples"),
    sample: bool = typer.Option(None, "--sample/--first", help="with --limit: random or first N"),
    out_file: Path = typer.Option(
        Path("radar-calibrated.yaml"), "--out", "-o", help="the run YAML to write"
    ),
    config: Path = typer.Option(None, help="base run YAML (method_config, llm, sources)"),
    model: str = MODEL_OPTION,
    base_url: str = BASE_URL_OPTION,
    provider: str = PROVIDER_OPTION,
    concurrency: int = typer.Option(None, help="examples in flight at once"),
    step_s: float = typer.Option(0.05, min=0.001, max=1.0, help="grid step for τ_s over [-1, 1]"),
    step_v: float = typer.Option(0.05, min=0.001, max=1.0, help="grid step for τ_v over [0, 1]"),
    rerun: bool = typer.Option(False, help="ignore the cached signals and run inference again"),
    objective: str = typer.Option(
        "accuracy", help="what the thresholds maximise: accuracy (the paper's) or macro-f1"
    ),
) -> None:
    """Tune τ_s and τ_v: one inference pass, then an offline grid search for accuracy."""
    from veracity.evaluation.runner import FATAL
    from veracity.methods.radar.calibration import CalibrationError, grid, grid_search

    goal: Objective = "macro_f1" if objective.replace("-", "_") == "macro_f1" else "accuracy"
    if objective.replace("-", "_") not in ("accuracy", "macro_f1"):
        fail(f"--objective must be accuracy or macro-f1, not {objective!r}")
    cache = signals_path(out_file)
    try:
        cfg = _experiment(
            config,
            {
                "dataset": dataset, "split": split, "limit": limit, "sample": sample,
                "concurrency": concurrency,
                "llm": {"model": model, "base_url": base_url, "provider": provider},
            },
        )  # fmt: skip
        if not cfg.dataset:
            fail("give the development set with --dataset NAME")
        header = {"dataset": cfg.dataset, "split": cfg.split, "model": cfg.llm.model}
        if cache.is_file() and not rerun:
            cached, records = read_signals(cache)
            if any(cached.get(k) != v for k, v in header.items()):
                fail(f"{cache} holds signals for {cached}; use --rerun or another --out")
            console.print(f"using {len(records)} cached records from {cache} (no inference)")
        else:
            records = _infer(cfg, run_dir(out_file), concurrency)
            write_signals(cache, {**header, "limit": cfg.limit}, records)
        from veracity.core.labels import get_label_space
        from veracity.methods.radar import RadarMethod

        labels = get_label_space(cfg.labels or RadarMethod.default_labels).labels
        result = grid_search(
            records,
            labels,
            tau_s_values=grid(-1.0, 1.0, step_s),
            tau_v_values=grid(0.0, 1.0, step_v),
            lazy=bool(cfg.method_config.get("lazy_judge", True)),
            objective=goal,
        )
    except FATAL as exc:
        fail(str(exc), code=3)
    except (EvalError, ConfigError, RunStoreError, LabelError, CalibrationError) as exc:
        fail(str(exc))
    except ValueError as exc:
        fail(str(exc))
    out_file.write_text(
        _yaml_text(_calibrated_config(cfg, result), header, result), encoding="utf-8"
    )
    out.print(_table(result))
    out.print(_sensitivity_table(result, "tau_s"))
    out.print(_sensitivity_table(result, "tau_v"))
    grid_csv, grid_png = write_grid(out_file, result)
    console.print(f"full τ_s × τ_v grid: {grid_csv} (every metric), {grid_png} (heat map)")
    console.print(
        styled(
            "tokens saved vs. every round: {}% ({} claims, {} threshold pairs)\n"
            "[green]written:[/] {} (signals cached in {})\n"
            'use it: veracity check --config {} "..."  |  veracity eval --config {} --dataset NAME',
            f"{100 * result.tokens_saved:.1f}", result.n, result.grid_size, out_file, cache,
            out_file, out_file,
        )
    )  # fmt: skip
