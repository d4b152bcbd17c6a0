"""`veracity report` and `veracity compare`: reading finished run directories."""

from __future__ import annotations

from pathlib import Path

import typer

from veracity.cli.app import app, console, fail, out
from veracity.errors import LabelError, MetricsError, RunStoreError


@app.command()
def report(
    run_dir: Path = typer.Argument(..., help="a run directory written by `veracity eval`"),
    out_dir: Path = typer.Option(None, "--out", help="write the report here (default: RUN_DIR)"),
) -> None:
    """Write report.md and a self-contained report.html for a run."""
    from veracity.evaluation.report import write_report

    try:
        md, html = write_report(run_dir, out_dir)
    except (RunStoreError, MetricsError, LabelError) as exc:
        fail(str(exc))
    console.print(f"[green]written:[/] {md}\n[green]written:[/] {html}")


@app.command()
def compare(
    runs: list[Path] = typer.Argument(
        ..., help="two or more run directories; the first is the reference"
    ),
    n_boot: int = typer.Option(1000, help="bootstrap resamples for the macro-F1 interval"),
    seed: int = typer.Option(0, help="bootstrap seed"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of tables"),
    markdown: bool = typer.Option(False, "--markdown", help="print Markdown tables"),
) -> None:
    """Compare runs side by side, with paired differences and a bootstrap CI on macro-F1."""
    from rich.table import Table

    from veracity.evaluation.compare import compare_runs, to_markdown
    from veracity.types import cost_text

    try:
        result = compare_runs(runs, n_boot=n_boot, seed=seed)
    except (RunStoreError, MetricsError, LabelError) as exc:
        fail(str(exc))
    if as_json:
        out.print_json(result.model_dump_json())
        return
    if markdown:
        out.print(to_markdown(result), markup=False, highlight=False, soft_wrap=True)
        return
    table = Table("run", "method", "model", "n", "accuracy", "macro-F1", "tokens/ex",
                  "p50 / p95 (s)", "wall (s)", "cost (USD)")  # fmt: skip
    for r in result.runs:
        lat = "–" if r.latency_p50_s is None else f"{r.latency_p50_s:.2f} / {r.latency_p95_s:.2f}"
        cost = cost_text(r.cost_usd, r.unpriced_llm_calls)
        table.add_row(Path(r.run).name, r.method, r.model, str(r.n), f"{r.accuracy:.3f}",
                      f"{r.macro_f1:.3f}", f"{r.tokens_per_example:,.1f}", lat,
                      f"{r.wall_time_s:.0f}", cost)  # fmt: skip
    out.print(table)
    paired = Table("run − reference", "shared", "Δ accuracy", "Δ macro-F1", "95% CI (bootstrap)")
    for p in result.paired:
        ci = f"[{p.ci_low:+.3f}, {p.ci_high:+.3f}]"
        paired.add_row(f"{p.other} − {p.reference}", str(p.shared), f"{p.accuracy_diff:+.3f}",
                       f"{p.macro_f1_diff:+.3f}", ci)  # fmt: skip
    out.print(paired)
