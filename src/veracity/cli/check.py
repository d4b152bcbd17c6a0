"""`veracity check`, `veracity methods`, `veracity labels`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from veracity.cli.app import app, console, fail, out, styled
from veracity.cli.common import (
    BASE_URL_OPTION,
    MODEL_OPTION,
    PROVIDER_OPTION,
    SOURCE_OPTION,
    ensure_model,
    parse_set_options,
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
from veracity.cli.plugins import given_run_options, with_run_options
from veracity.core.errors import (
    ConfigError,
    InputError,
    LLMAuthError,
    LLMError,
    ModelNotAvailable,
    SourceError,
    StructuredOutputError,
)


def _read_input(text: str | None, file: Path | None, kind: str) -> Any:
    if file is not None and text is not None:
        fail("give the text as an argument or with --file, not both")
    from veracity.core.textio import (
        MAX_RECORD_BYTES,
        MAX_TEXT_BYTES,
        decode_text,
        parse_json,
        read_file_limited,
        read_limited,
        require_decodable,
    )

    try:  # every read stops at its limit + 1 byte (an endless stream is refused at once)
        if file is not None:
            is_json = file.suffix.lower() == ".json"
            data = read_file_limited(file, MAX_RECORD_BYTES if is_json else MAX_TEXT_BYTES)
            raw = decode_text(data, str(file))
            return parse_json(raw, str(file)) if is_json else raw
        if text is None:
            fail("nothing to check: give TEXT, '-' for standard input, or --file PATH")
        if text == "-":
            data = read_limited(sys.stdin.buffer, MAX_TEXT_BYTES, "standard input")
            return decode_text(data, "standard input")
        return require_decodable(text, "the text argument")
    except InputError as exc:
        fail(str(exc))


def _document_source(text: str | None, file: Path | None, url: str | None) -> Any:
    """What the user gave as a document: a `DocumentText` (text or standard input), a file
    `Path`, or None with a URL. Exits 2 on none or several, or on unreadable standard input."""
    given = [x for x in (text, file, url) if x is not None]
    if len(given) != 1:
        what = "nothing to check" if not given else "give only one document"
        fail(f"{what}: give TEXT, '-' for standard input, --file PATH or --url URL")
    from veracity.core.textio import decode_text, input_file, read_limited
    from veracity.documents.reading import MAX_DOCUMENT_BYTES, from_text

    try:
        if file is not None:  # said before any notice of building the run
            return input_file(file, "document file")
        if url is not None:
            return None
        if text == "-":
            data = read_limited(sys.stdin.buffer, MAX_DOCUMENT_BYTES, "standard input")
            return from_text(decode_text(data, "standard input"), origin="stdin")
        return from_text(text or "")
    except InputError as exc:
        fail(str(exc))


def _kind_choice(value: str) -> str:
    """The --kind flag's choices (parsing the flag; the input itself is read by runtime)."""
    from veracity.runtime.inputs import KINDS

    if value not in KINDS:
        raise typer.BadParameter(f"use one of {', '.join(KINDS)}, not {value!r}")
    return value


@app.command()
def check(
    ctx: typer.Context,
    text: str = typer.Argument(None, help="the text to check, or '-' to read standard input"),
    file: Path = typer.Option(
        None,
        "--file",
        "-f",
        help="read the input from a file (.json: a claim, article or post object; its "
        "`kind` field or its fields say which)",
    ),
    method: str = typer.Option(
        None, "--method", "-m", help="see `veracity methods` (default: the config's, or direct)"
    ),
    kind: str = typer.Option(
        "claim",
        callback=_kind_choice,
        help="how to read plain text: claim, article or post (a .json file's own kind or "
        "fields decide for it), or document: find its claims and check each with --method "
        "(default rag; a .txt, .md, .html or .pdf --file)",
    ),
    url: str = typer.Option(
        None, "--url", help="check the web page at URL as a document (public addresses only)"
    ),
    corrections: bool = CORRECTIONS,
    no_decompose: bool = NO_DECOMPOSE,
    no_decontextualise: bool = NO_DECONTEXTUALISE,
    no_checkworthiness: bool = NO_CHECKWORTHINESS,
    max_sentences: int = MAX_SENTENCES,
    dedupe_threshold: float = DEDUPE_THRESHOLD,
    html: Path = typer.Option(
        None, "--html", help="documents: also write a standalone HTML report to this file"
    ),
    labels: str = typer.Option(None, help="label space (see `veracity labels`)"),
    model: str = MODEL_OPTION,
    base_url: str = BASE_URL_OPTION,
    threads: int = typer.Option(
        None,
        "--threads",
        min=1,
        help="CPU threads of the embedded model (default: VERACITY_THREADS, else half the cores)",
    ),
    provider: str = PROVIDER_OPTION,
    config: Path = typer.Option(
        None, help="run or experiment YAML (method, method_config, llm, sources); flags win"
    ),
    variant: str = typer.Option(None, help="a variant of the --config experiment"),
    source: list[str] = SOURCE_OPTION,
    settings: list[str] = typer.Option(
        None,
        "--set",
        metavar="KEY=VALUE",
        help="a method setting KEY=VALUE, e.g. --set rounds=2 or --set corpus.index=mydocs "
        "(repeatable; the method's README lists them)",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="print the Verdict (a document's report) as JSON"
    ),
) -> None:
    """Check a claim, article or post and print the verdict, or a whole document claim by
    claim (--kind document, --url) and print it with each claim marked in place."""
    from veracity.cli.render import tree_view, verdict_panel
    from veracity.runtime import layered_config
    from veracity.runtime.service import KIND_REFUSED, CheckRefused, Veracity, error_text

    document = kind == "document" or url is not None
    if not document and corrections:
        fail("--corrections applies to documents: add --kind document")
    extraction = extraction_flags(no_decompose, no_decontextualise, no_checkworthiness,
                                  max_sentences, dedupe_threshold)  # fmt: skip
    if not document:
        documents_only([*flag_names(extraction), *(["--html"] if html else [])])
    raw = _document_source(text, file, url) if document else _read_input(text, file, kind)
    choices: dict[str, Any] = {"kind": kind}
    if document:  # a document's own choices; its claim method is --method's (default rag)
        from veracity.cli.document_options import checked_extraction, checked_html_path

        settings_ = checked_extraction(extraction)
        choices = {"kind": "document", "method": method, "labels": labels, "url": url,
                   "corrections": corrections, "extraction": settings_}  # fmt: skip
        html = checked_html_path(html)
    try:
        flags = {
            "method": method,
            "labels": labels,
            "llm": {
                "model": model,
                "base_url": base_url,
                "provider": provider,
                "n_threads": threads,
            },
            "sources": parse_source_options(source or []) or None,
            "method_config": parse_set_options(settings or []) or None,
        }
        cfg = layered_config(config, variant=variant, flags=flags)
        plugged = given_run_options(ctx)  # the options methods add (MERMAID's --memory)
        cfg = with_run_options(cfg, plugged) if plugged else cfg
        # the model pulled before its backend is built
        service = Veracity(cfg, ready=lambda spec: ensure_model(spec.llm))
        plan = service.plan(raw, **choices)  # the input, method, labels, kind
    except CheckRefused as exc:
        hint = " (read the input as another kind with --kind)" if exc.title == KIND_REFUSED else ""
        fail(f"{exc}{hint}")
    except (InputError, ConfigError, TypeError) as exc:
        fail(error_text(exc))
    except (ModelNotAvailable, LLMAuthError) as exc:
        fail(str(exc), code=3)
    for note in plan.run.notes:
        console.print(note, style="dim", soft_wrap=True)
    try:
        verdict = _run_with_progress(plan)
    except InputError as exc:  # a URL that cannot be fetched, a page with no text
        fail(error_text(exc))
    except (ModelNotAvailable, LLMAuthError) as exc:
        fail(str(exc), code=3)
    except StructuredOutputError as exc:
        fail(f"claim extraction failed: {exc}", code=1)
    except (LLMError, SourceError) as exc:  # an endpoint that does not answer, a source fault
        what = "the document check" if document else "the check"
        fail(f"{what} failed: {type(exc).__name__}: {error_text(exc)}", code=1)
    finally:
        service.close()
    if document:
        return _print_document(verdict.report, as_json, html)
    if as_json:
        out.print_json(verdict.model_dump_json())
    else:
        out.print(verdict_panel(verdict, plan.item.content))
        tree = tree_view(verdict)
        if tree is not None:
            out.print(tree)
    _warn_search_failures(verdict)
    if verdict.error:
        raise typer.Exit(1)


def _print_document(report: Any, as_json: bool, html: Path | None) -> None:
    """A document's report: JSON, or the text marked in place and its claims; with `html`,
    the standalone HTML report written there too. Exit 1 when a claim's check failed."""
    if html is not None:
        from veracity.cli.html_reports import write_report_html

        write_report_html(html, report)
        console.print(f"written: the HTML report to {html}", markup=False, soft_wrap=True)
    if as_json:
        out.print_json(report.model_dump_json())
    else:
        from veracity.cli.render_document import document_view

        out.print(document_view(report))
    if report.summary.errors:
        raise typer.Exit(1)


def _warn_search_failures(verdict: Any) -> None:
    """One warning line on stderr when searches failed (the count and the first error)."""
    warning = verdict.search_warning
    if warning:
        console.print(styled("[yellow]warning:[/] {}", warning), soft_wrap=True)


def _run_with_progress(plan: Any):
    """Run `plan` (a document is read or fetched first), showing its stage, round, calls
    and time on standard error (with --json too: the verdict alone goes to standard
    output)."""
    import asyncio

    from veracity.cli.progress_view import check_view

    with check_view(plan.run.method, console) as view, view.watching():
        return asyncio.run(plan.check())


@app.command()
def methods(
    as_json: bool = typer.Option(
        False, "--json", help="print every method with all its fields as JSON"
    ),
) -> None:
    """List the registered methods by group: what each takes and searches (online and
    offline). The method guide (docs/methods.md) says where to start and what a check costs."""
    from dataclasses import asdict

    from veracity.cli.plain_listing import group_of, method_lines, width_of
    from veracity.runtime.listing import list_methods

    rows = list_methods()
    if as_json:
        out.print_json(data=[{**asdict(r), "group": group_of(r.name)} for r in rows])
        return
    for line in method_lines(rows, width_of(out)):
        out.print(line, soft_wrap=True, highlight=False)


@app.command("labels")
def labels_() -> None:
    """List the label spaces and their labels."""
    from rich.table import Table

    from veracity.core.labels import LABEL_SPACES

    table = Table("label space", "labels (veracity score)")
    for space in LABEL_SPACES.values():
        table.add_row(space.name, ", ".join(f"{x} ({space.scores[x]:g})" for x in space.labels))
    out.print(table)


@app.command("sources")
def sources_() -> None:
    """List the evidence source types and which web engines have keys set."""
    from rich.table import Table

    from veracity.runtime.listing import list_source_types

    table = Table("source type", "notes")
    for row in list_source_types():
        table.add_row(row.name, row.note)
    out.print(table)
