"""`veracity report` and `veracity compare`: reading finished run directories."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from veracity.cli.app import app, console, fail, out, styled
from veracity.core.bounds import MAX_SEED
from veracity.core.errors import LabelError, MetricsError, RunStoreError

if TYPE_CHECKING:  # the rest is imported where it is used, so that --help starts fast
    from rich.table import Table

    from veracity.evaluation.compare import Comparison, Paired, RunRow


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
    console.print(styled("[green]written:[/] {}\n[green]written:[/] {}", md, html))


@app.command()
def compare(
    runs: list[Path] = typer.Argument(
        ..., help="two or more run directories; the first is the reference"
    ),
    n_boot: int = typer.Option(
        1000, min=1, max=100_000, help="bootstrap resamples for the macro-F1 interval"
    ),
    seed: int = typer.Option(0, min=0, max=MAX_SEED, help="bootstrap seed"),
    as_json: bool = typer.Option(False, "--json", help="print JSON instead of tables"),
    markdown: bool = typer.Option(False, "--markdown", help="print Markdown tables"),
) -> None:
    """Compare runs side by side, with paired differences and a bootstrap CI on macro-F1."""
    from veracity.evaluation.compare import compare_runs, to_markdown

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
    for table in comparison_tables(result, out.width):
        out.print(table)


def comparison_tables(result: Comparison, width: int) -> list[Table]:
    """The runs and their paired differences as tables no wider than `width`: one row
    per run with its name when that fits, else the runs numbered in a table of their own
    (names wrap) and the figures under short headers (never cut to "accur…")."""
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    from veracity.core.types import cost_text

    def latency(r: RunRow) -> str:
        return "–" if r.latency_p50_s is None else f"{r.latency_p50_s:.2f} / {r.latency_p95_s:.2f}"

    def figures(r: RunRow) -> list[str]:
        return [str(r.n), f"{r.accuracy:.3f}", f"{r.macro_f1:.3f}",
                f"{r.tokens_per_example:,.1f}", latency(r), f"{r.wall_time_s:.0f}",
                cost_text(r.cost_usd, r.unpriced_llm_calls)]  # fmt: skip

    def ci(p: Paired) -> list[str]:
        return [str(p.shared), f"{p.accuracy_diff:+.3f}", f"{p.macro_f1_diff:+.3f}",
                f"[{p.ci_low:+.3f}, {p.ci_high:+.3f}]"]  # fmt: skip

    wide = Table("run", "method", "model", "n", "accuracy", "macro-F1", "tokens/ex",
                 "p50 / p95 (s)", "wall (s)", "cost (USD)")  # fmt: skip
    for r in result.runs:
        wide.add_row(r.label, r.method, r.model, *figures(r))
    paired = Table("run − reference", "shared", "Δ accuracy", "Δ macro-F1", "95% CI (bootstrap)")
    for p in result.paired:
        paired.add_row(f"{p.other} − {p.reference}", *ci(p))
    measure = Console(width=10_000, markup=False, emoji=False)  # measured as `out` prints
    needed = max(Measurement.get(measure, measure.options, t).maximum for t in (wide, paired))
    if needed <= width:
        return [wide, *document_table(result, lambda i, r: r.label), paired]
    number = {r.label: f"#{i}" for i, r in enumerate(result.runs, 1)}  # labels are distinct
    names = Table("#", "run", "method", "model", title="runs (#1 is the reference)")
    for i, r in enumerate(result.runs, 1):
        names.add_row(f"#{i}", r.label, r.method, r.model)
    for column in names.columns[1:]:
        column.overflow = "fold"
    short = Table("#", "n", "acc", "F1", "tok/ex", "p50/p95 s", "wall s", "USD",
                  title="acc: accuracy · F1: macro-F1 · tok/ex: tokens per example")  # fmt: skip
    for i, r in enumerate(result.runs, 1):
        short.add_row(f"#{i}", *figures(r))
    diffs = Table("runs", "shared", "Δ acc", "Δ F1", "95% CI of Δ F1")
    for p in result.paired:
        diffs.add_row(f"{number.get(p.other, p.other)} − {number.get(p.reference, p.reference)}",
                      *ci(p))  # fmt: skip
    return [names, short, *document_table(result, lambda i, r: f"#{i}"), diffs]


def document_table(result: Comparison, header: Any) -> list[Table]:
    """The document task's figures, a column per run headed `header(i, run)` (no table
    when no run has them; "n/a" where a run has none)."""
    from rich.table import Table

    names = next((r.document for r in result.runs if r.document), [])
    if not names:
        return []
    table = Table("document figure", *(header(i, r) for i, r in enumerate(result.runs, 1)))
    for k, (name, _) in enumerate(names):
        values = [r.document[k][1] if k < len(r.document) else None for r in result.runs]
        table.add_row(name, *("n/a" if v is None else f"{v:.3f}" for v in values))
    return [table]
