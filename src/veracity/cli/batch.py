"""`veracity batch`: check every row of a file, or of standard input."""

from __future__ import annotations

import re
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from pydantic import ValidationError

from veracity.cli.app import app, console, fail, leave_interrupted, styled
from veracity.cli.common import (
    BASE_URL_OPTION,
    ENGINE_HELP,
    LLM_LIMIT_HELP,
    MODEL_OPTION,
    PROVIDER_OPTION,
    RAY_ADDRESS_HELP,
    SOURCE_OPTION,
    WORKERS_HELP,
    check_flag,
    engine_for,
    ensure_model,
    parse_source_options,
)
from veracity.cli.document_options import (
    CORRECTIONS,
    DEDUPE_THRESHOLD,
    MAX_SENTENCES,
    NO_CHECKWORTHINESS,
    NO_DECOMPOSE,
    NO_DECONTEXTUALISE,
    documents_only,
    extraction_flags,
    flag_names,
)
from veracity.core.errors import (
    ConfigError,
    DatasetError,
    EngineError,
    EvalError,
    LabelError,
    RunStoreError,
)

if TYPE_CHECKING:  # the rest is imported where it is used, so that --help starts fast
    from rich.table import Table

    from veracity.evaluation.batch import BatchRun, BatchSummary, DocumentTotals, Rows

STDIN = "-"
KIND_HELP = (
    "what each row's text is: claim, article or post; or document: find each row's claims "
    "and check each (--method default rag)"
)


@app.command("batch")
def batch_(
    input_path: str = typer.Argument(..., metavar="INPUT", help="JSONL/JSON/CSV/TSV file, or -"),
    out_path: str = typer.Option(
        None, "--out", "-o", help="results JSONL file, or - for standard output (default for -)"
    ),
    run_dir: Path = typer.Option(
        None, help="run directory (resume by re-running; default: OUT with .run for a file)"
    ),
    method: str = typer.Option(None, "--method", "-m", help="registered method"),
    labels: str = typer.Option(None, help="the method's label space"),
    source: list[str] = SOURCE_OPTION,
    config: Path = typer.Option(None, help="run or experiment YAML"),
    model: str = MODEL_OPTION,
    base_url: str = BASE_URL_OPTION,
    provider: str = PROVIDER_OPTION,
    concurrency: int = typer.Option(
        None, help="rows checked at once (per worker; default 4, documents 1)"
    ),
    text: str = typer.Option("text", help="column with the text to check"),
    kind: str = typer.Option("claim", help=KIND_HELP),
    id_column: str = typer.Option(None, "--id", help="column with each row's id"),
    date: str = typer.Option(None, help="column with the claim's or post's date"),
    date_format: str = typer.Option(None, help="strptime format of --date (default ISO 8601)"),
    speaker: str = typer.Option(None, help="column with the speaker (a post's author)"),
    title: str = typer.Option(None, help="column with an article's title"),
    context: str = typer.Option(None, help="column with a claim's context"),
    replies: str = typer.Option(None, help="column with a post's replies (a JSON list)"),
    input_format: str = typer.Option(
        None, "--format", help="jsonl, json, csv or tsv (default: from the suffix; - is jsonl)"
    ),
    retry_errors: bool = typer.Option(False, help="check again the rows that errored or crashed"),
    progress: bool = typer.Option(True, help="show the progress bar (on standard error)"),
    engine: str = typer.Option("local", help=ENGINE_HELP),
    ray_address: str = typer.Option(None, help=RAY_ADDRESS_HELP),
    workers: int = typer.Option(None, help=WORKERS_HELP),
    llm_limit: int = typer.Option(None, help=LLM_LIMIT_HELP),
    url_column: str = typer.Option(
        None, "--url", help="documents: column with a web page's address (fetched, guarded)"
    ),
    corrections: bool = CORRECTIONS,
    no_decompose: bool = NO_DECOMPOSE,
    no_decontextualise: bool = NO_DECONTEXTUALISE,
    no_checkworthiness: bool = NO_CHECKWORTHINESS,
    max_sentences: int = MAX_SENTENCES,
    dedupe_threshold: float = DEDUPE_THRESHOLD,
    html: Path = typer.Option(
        None, "--html", help="documents: a folder for an HTML report per row and index.html"
    ),
) -> None:
    """Check every row of a file (or of standard input, -) and write one result per row;
    resumable through its run directory, like `veracity eval`."""
    from veracity.datasets.generic import ColumnSpec
    from veracity.evaluation.batch import (
        DocumentColumns,
        Rows,
        prepare_batch,
        read_rows,
    )

    flags = {
        "method": method, "labels": labels, "concurrency": concurrency,
        "llm": {"model": model, "base_url": base_url, "provider": provider},
        "sources": parse_source_options(source or []) or None,
    }  # fmt: skip
    extraction = extraction_flags(no_decompose, no_decontextualise, no_checkworthiness,
                                  max_sentences, dedupe_threshold)  # fmt: skip
    if kind not in ("claim", "article", "post", "document"):
        fail(f"--kind: use one of claim, article, post, document, not {kind!r}")
    documents = kind == "document"
    try:
        if documents:
            _not_for_documents({"--speaker": speaker, "--context": context,
                                "--replies": replies})  # fmt: skip
            extraction = _document_flags(flags, config, concurrency, extraction, html)
            columns: Any = DocumentColumns(text=text, url=url_column, id=id_column, title=title,
                                           date=date, date_format=date_format)  # fmt: skip
            reading = ColumnSpec(text=text, format=input_format)
        else:
            documents_only([*flag_names(extraction), *(f for f, v in (("--url", url_column),
                           ("--corrections", corrections), ("--html", html)) if v)])  # fmt: skip
            columns = reading = ColumnSpec(
                text=text, kind=kind, id=id_column, date=date, date_format=date_format,
                speaker=speaker, title=title, context=context, replies=replies,
                format=input_format,
            )  # fmt: skip
    except ValidationError as exc:
        fail("; ".join(f"--{str(e['loc'][0]).replace('_', '-')}: {e['msg']}" for e in exc.errors()))
    out_path = out_path or (STDIN if input_path == STDIN else None)
    if out_path is None:
        fail("give --out OUT.jsonl (or --out - for standard output)")
    streaming = out_path == STDIN
    _check_paths(input_path, None if streaming else Path(out_path))
    from veracity.runtime import evaluation_config

    try:
        runner = engine_for(engine, ray_address, workers, llm_limit)
        folder = run_dir or _default_run_dir(out_path, method or ("documents" if documents
                                                                   else "run"))  # fmt: skip
        cfg = evaluation_config(config, folder, None, flags)  # resumes the folder's own config
        batch = prepare_batch(cfg, columns, folder, extraction=extraction or None,
                              corrections=corrections)  # fmt: skip
        if retry_errors:
            kept = batch.store.read_predictions()
            batch.store.rewrite_predictions(
                [r for r in kept if r.status not in ("error", "exception")]
            )
        rows = Rows(
            read_rows(input_path, reading), columns, notice=lambda m: console.print(m, markup=False)
        )
        jobs = rows if input_path == STDIN else list(rows)  # a file is checked up front
    except (EvalError, ConfigError, RunStoreError, LabelError, DatasetError) as exc:
        fail(str(exc))
    try:
        _check(batch, input_path, out_path, rows, jobs, concurrency, progress, runner, html)
    finally:
        batch.close()


def _not_for_documents(options: dict[str, Any]) -> None:
    """Exit 2 naming the claim, article and post options given to a document batch."""
    given = [name for name, value in options.items() if value not in (None, False)]
    if given:
        verb = "does not" if len(given) == 1 else "do not"
        fail(
            f"{', '.join(given)} {verb} apply to documents (each row is a document, checked "
            "claim by claim)"
        )


def _document_flags(
    flags: dict[str, Any], config: Path | None, concurrency: int | None, extraction: Any, html: Any
) -> Any:
    """A document batch's flags: its claim method (a --config's stands; else rag, as for
    `veracity check --kind document`), --concurrency counting documents, and the extraction
    settings (validated; exit 2 naming a bad flag)."""
    from veracity.cli.document_options import checked_extraction
    from veracity.core.config import RunConfig
    from veracity.runtime.documents import DEFAULT_DOCUMENT_METHOD

    flags["method"] = flags["method"] or (None if config else DEFAULT_DOCUMENT_METHOD)
    flags["concurrency"] = None  # --concurrency counts documents here, not claims
    try:  # documents at once, bounded as the run's concurrency
        check_flag("--concurrency", concurrency, RunConfig, "concurrency")
    except ConfigError as exc:
        fail(str(exc))
    if html is not None and html.expanduser().exists() and not html.is_dir():
        fail(f"--html {html} is a file; give a folder for the reports")
    return checked_extraction(extraction) if extraction else None


def _check(
    batch: BatchRun,
    input_path: str,
    out_path: str,
    rows: Rows,
    jobs: Any,
    concurrency: int | None,
    progress: bool,
    runner: Any,
    html: Path | None,
) -> None:
    from veracity.evaluation.batch import write_results

    streaming = out_path == STDIN
    ensure_model(batch.spec.llm)
    where = "standard input" if input_path == STDIN else input_path
    console.print(
        styled(
            "[bold]{}[/] on {} ({}s), labels {}, model {}, run directory {}",
            batch.config.method, where, batch.columns.kind, batch.space.name,
            batch.config.llm.model, batch.store.path,
        ),
        soft_wrap=True,
    )  # fmt: skip
    total = None if input_path == STDIN else len(jobs)
    summary = _run(batch, rows, jobs, total, concurrency, progress, runner,
                   streaming)  # fmt: skip
    if not streaming:
        try:
            n = write_results(Path(out_path), batch.store, rows.order)
        except EvalError as exc:
            fail(str(exc))
        console.print(styled("[green]written:[/] {} results to {}", n, out_path))
    if html is not None:
        from veracity.cli.html_reports import write_batch_html

        index = write_batch_html(html, batch.store, rows.order)
        console.print(styled("[green]written:[/] HTML reports, index {}", index))
    console.print(_summary_table(batch, summary))


def _check_paths(input_path: str, out_file: Path | None) -> None:
    """Refuse an input that is not a readable file, and a results file that is the input,
    a directory or cannot be written, before anything is built or checked."""
    from veracity.core.errors import InputError
    from veracity.core.textio import input_file, output_file

    source = None if input_path == STDIN else Path(input_path).expanduser()
    try:
        if source is not None:
            input_file(source)
        if out_file is not None:
            output_file(out_file.expanduser(), [source] if source else [], "--out")
    except InputError as exc:
        fail(str(exc))


def _default_run_dir(out_path: str, method: str) -> Path:
    """``OUT.run`` beside a results file; a new ``runs/batch-…`` folder for a stream."""
    if out_path != STDIN:
        return Path(out_path).with_suffix(".run")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    return Path("runs") / re.sub(r"[^A-Za-z0-9._-]+", "-", f"batch-{method}-{stamp}")


def _run(
    batch: BatchRun,
    rows: Rows,
    jobs: Any,
    total: int | None,
    concurrency: int | None,
    show: bool,
    engine: Any,
    streaming: bool,
) -> BatchSummary:
    from veracity.cli.progress import JobProgress, run_stats_parts
    from veracity.cli.progress_view import ProgressView
    from veracity.core.infra import run_interruptible
    from veracity.evaluation.batch import output_line, run_batch
    from veracity.evaluation.runner import FATAL, RunningStats

    stats = RunningStats()
    earlier = {r.id for r in batch.store.read_predictions()} if show else set()
    unit = "documents" if batch.documents else "rows"
    job = JobProgress(batch.config.method, total=total, unit=unit)
    # results written to a terminal would break a live line: plain lines then
    live = False if streaming and sys.stdout.isatty() else None
    with ProgressView(job, console, enabled=show, live=live) as view, view.watching():

        def emit(record) -> None:
            stats.add(record)
            view.item_done(
                stats=run_stats_parts(stats, accuracy=False),
                usage=record.usage,
                earlier=record.id in earlier,  # done in an earlier session: not in the pace
            )
            if streaming:
                sys.stdout.write(output_line(record) + "\n")
                sys.stdout.flush()

        try:
            return run_interruptible(
                run_batch(
                    batch,
                    iter(jobs),
                    concurrency=concurrency,
                    engine=engine,
                    emit=emit,
                    threaded=total is None,
                )
            )
        except KeyboardInterrupt:
            console.print(
                styled(
                    "\n[yellow]interrupted[/]: {} results are saved in {}; re-run the same "
                    "command with --run-dir {} to resume",
                    stats.done, batch.store.predictions_path, batch.store.path,
                ),
                soft_wrap=True,
            )  # fmt: skip
            leave_interrupted()
        except (*FATAL, EngineError) as exc:
            fail(str(exc), code=3)
        except (EvalError, RunStoreError, DatasetError) as exc:
            fail(str(exc))


def _summary_table(batch: BatchRun, s: BatchSummary) -> Table:
    from rich.table import Table

    from veracity.core.types import cost_text

    what = "batch of documents" if batch.documents else "batch"
    table = Table("", "", title=f"{what}: {batch.config.method}, {s.rows} rows")
    labels = ", ".join(f"{k} {v}" for k, v in s.labels.items()) or "none"
    rows = [
        ("labels", labels),
        ("ok / abstained / error / crashed", " / ".join(map(str, s.statuses.values()))),
        ("LLM calls (cached)", f"{s.llm_calls:,} ({s.cached_llm_calls:,})"),
        ("searches", f"{s.searches:,}" + (f" ({s.failed_searches:,} failed)"
                                            if s.failed_searches else "")),
        ("checks whose searches all failed", f"{s.searches_all_failed:,}"),
        ("tokens", f"{s.tokens:,}"),
        ("cost (USD)", cost_text(s.cost_usd, s.unpriced_llm_calls)),
        ("this session", f"{s.wall_time_s:.1f} s"
         + (f", {s.rows_per_s:.2f} rows/s" if s.rows_per_s else "")),
    ]  # fmt: skip
    if s.documents is not None:
        rows[2:2] = _document_rows(s.documents)
    for k, v in rows:
        table.add_row(k, v)
    return table


def _document_rows(d: DocumentTotals) -> list[tuple[str, str]]:
    """The document part of the summary table."""

    def share(v: float | None) -> str:
        return "n/a" if v is None else f"{v:.0%}"

    return [
        ("documents checked", f"{d.documents}"),
        ("claims", f"{d.claims} ({d.not_checkworthy} not check-worthy)"),
        ("supported / refuted / mixed", f"{d.supported} / {d.refuted} / {d.mixed}"),
        ("claims abstained / errors", f"{d.abstained} / {d.claim_errors}"),
        ("claims that recurred (verdict reused)", f"{d.reused}"),
        ("factuality (FActScore, mean over documents)", share(d.factuality)),
        ("  length-penalised (γ = 10) / respond ratio",
         f"{share(d.factuality_penalised)} / {share(d.respond_ratio)}"),
        ("supported of the claims with a label",
         f"{share(d.supported_share_of_decided)} of {d.checked}"),
    ]  # fmt: skip
