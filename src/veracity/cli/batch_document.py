"""`veracity batch --kind document`: a document per row, each checked claim by claim.

The command maps its options into `veracity.evaluation.document_batch` (which plans the
check through `Veracity.plan`, so every rule of a document check applies) and
writes one JSON line per row: its id, status, error and `DocumentReport`. With ``--html
DIR`` it also writes one standalone HTML report per checked row and an ``index.html``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from veracity.cli.app import console, fail, leave_interrupted, styled
from veracity.core.errors import (
    ConfigError,
    DatasetError,
    EngineError,
    EvalError,
    InputError,
    RunStoreError,
)

STDIN = "-"


@dataclass
class DocumentBatchArgs:
    """What `veracity batch --kind document` was given."""

    input_path: str
    out_path: str
    run_dir: Path
    columns: dict[str, Any]
    input_format: str | None
    concurrency: int | None
    retry_errors: bool
    progress: bool
    corrections: bool
    extraction: dict[str, Any]
    html: Path | None
    engine: tuple[str, str | None, int | None, int | None] = ("local", None, None, None)


def refuse(options: dict[str, Any]) -> None:
    """Exit 2 naming the claim, article and post options given to a document batch."""
    given = [name for name, value in options.items() if value not in (None, False)]
    if given:
        verb = "does not" if len(given) == 1 else "do not"
        fail(
            f"{', '.join(given)} {verb} apply to documents (each row is a document, checked "
            "claim by claim)"
        )


def batch_documents(cfg_for: Any, args: DocumentBatchArgs) -> None:
    """Check a document per row; `cfg_for(run_dir)` resolves the run's config there."""
    from veracity.cli.common import engine_for
    from veracity.cli.document_options import checked_extraction
    from veracity.evaluation.document_batch import DocumentColumns, prepare_document_batch
    from veracity.runtime.rules import CheckRefused

    extraction = checked_extraction(args.extraction)
    if args.html is not None and args.html.expanduser().exists() and not args.html.is_dir():
        fail(f"--html {args.html} is a file; give a folder for the reports")
    concurrency = args.concurrency or 1
    if concurrency < 1:
        fail("--concurrency must be at least 1")
    try:
        runner = engine_for(*args.engine)
        columns = DocumentColumns(**args.columns)
        rows = _read(args, columns)
        batch = prepare_document_batch(
            cfg_for(args.run_dir), columns, args.run_dir,
            extraction=extraction, corrections=args.corrections,
        )  # fmt: skip
    except CheckRefused as exc:
        fail(str(exc))
    except (EvalError, ConfigError, RunStoreError, DatasetError, InputError) as exc:
        fail(str(exc))
    try:
        _check(batch, args, rows, concurrency, runner)
    finally:
        batch.service.close()


def _read(args: DocumentBatchArgs, columns: Any) -> list:
    from pydantic import ValidationError

    from veracity.datasets.generic import ColumnSpec
    from veracity.evaluation.batch import read_rows
    from veracity.evaluation.document_batch import document_rows

    try:
        spec = ColumnSpec(text=columns.text, format=args.input_format)
    except ValidationError as exc:
        fail(f"--format: {exc.errors()[0]['msg']}")
    order: list[str] = []
    notice = lambda m: console.print(m, markup=False)  # noqa: E731
    rows = list(document_rows(read_rows(args.input_path, spec), columns, order, notice))
    return rows


def _check(batch: Any, args: DocumentBatchArgs, rows: list, concurrency: int, runner: Any) -> None:
    from veracity.cli.common import ensure_model
    from veracity.evaluation.document_batch import drop_errors, write_document_results

    ensure_model(batch.plan.run.spec.llm)
    if args.retry_errors:
        drop_errors(batch.store)
    where = "standard input" if args.input_path == STDIN else args.input_path
    console.print(
        styled("[bold]{}[/] on each document of {}, run directory {}",
               batch.method, where, batch.store.path),
        soft_wrap=True,
    )  # fmt: skip
    summary = _run(batch, rows, concurrency, args.progress, args.out_path == STDIN, runner)
    if args.out_path != STDIN:
        try:
            n = write_document_results(Path(args.out_path), batch.store, [r.id for r in rows])
        except EvalError as exc:
            fail(str(exc))
        console.print(styled("[green]written:[/] {} results to {}", n, args.out_path))
    if args.html is not None:
        from veracity.cli.html_reports import write_batch_html

        index = write_batch_html(args.html, batch.store, [r.id for r in rows])
        console.print(styled("[green]written:[/] HTML reports, index {}", index))
    console.print(_summary_table(batch.method, summary))


def _run(batch: Any, rows: list, concurrency: int, show: bool, streaming: bool, runner: Any) -> Any:
    from veracity.cli.progress import JobProgress
    from veracity.cli.progress_line import Part
    from veracity.cli.progress_view import ProgressView
    from veracity.core.infra import run_interruptible
    from veracity.evaluation.document_batch import output_line, run_document_batch
    from veracity.evaluation.engines import FATAL

    job = JobProgress(batch.method, total=len(rows), unit="documents")
    errors = 0
    with ProgressView(job, console, enabled=show, live=False if streaming else None) as view:

        def emit(record: Any, earlier: bool) -> None:
            nonlocal errors
            errors += record.status == "error"
            usage = record.report.usage if record.report is not None else None
            stats = [Part(f"{errors} error", 6, "yellow")] if errors else []
            view.item_done(stats=stats, usage=usage, earlier=earlier)
            if streaming:
                sys.stdout.write(output_line(record) + "\n")
                sys.stdout.flush()

        try:
            return run_interruptible(
                run_document_batch(batch, rows, concurrency=concurrency, emit=emit, engine=runner)
            )
        except KeyboardInterrupt:
            console.print(
                styled("\n[yellow]interrupted[/]: finished rows are saved in {}; re-run the "
                       "same command to resume", batch.store.path),
                soft_wrap=True,
            )  # fmt: skip
            leave_interrupted()
        except (*FATAL, EngineError) as exc:
            fail(str(exc), code=3)
        except (EvalError, RunStoreError) as exc:
            fail(str(exc))


def _summary_table(method: str, s: Any) -> Any:
    from rich.table import Table

    table = Table("", "", title=f"batch of documents: {method}, {s.rows} rows")
    factuality = "n/a" if s.factuality is None else f"{s.factuality:.0%}"
    penalised, ratio, decided = (
        "n/a" if v is None else f"{v:.0%}"
        for v in (s.factuality_penalised, s.respond_ratio, s.supported_share_of_decided)
    )
    rows = [
        ("rows ok / error", f"{s.ok} / {s.errors}"),
        ("claims", f"{s.claims} ({s.not_checkworthy} not check-worthy)"),
        ("supported / refuted / mixed", f"{s.supported} / {s.refuted} / {s.mixed}"),
        ("abstained / errors", f"{s.abstained} / {s.claim_errors}"),
        ("claims that recurred (verdict reused)", f"{s.reused}"),
        ("factuality (FActScore, mean over documents)", factuality),
        ("  length-penalised (γ = 10) / respond ratio", f"{penalised} / {ratio}"),
        ("supported of the claims with a label", f"{decided} of {s.checked}"),
        ("LLM calls, searches", f"{s.llm_calls:,}, {s.searches:,}"),
        ("this session", f"{s.wall_time_s:.1f} s"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    return table
