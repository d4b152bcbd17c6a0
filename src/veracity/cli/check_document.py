"""`veracity check --kind document` (and `--url`): check a whole document claim by claim.

The command only maps its arguments into `Veracity.plan` (a document is one more input
kind) and the verdict's report into the
terminal (`veracity.cli.render_document`) or JSON; the service applies every rule.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from veracity.cli.app import console, fail, out
from veracity.core.config import RunConfig
from veracity.core.errors import (
    ConfigError,
    InputError,
    LLMAuthError,
    LLMError,
    ModelNotAvailable,
    SourceError,
    StructuredOutputError,
)


def document_source(text: str | None, file: Path | None, url: str | None) -> Any:
    """What the user gave: a `DocumentText` (text or standard input), a file `Path`, or
    None with a URL. Exits 2 on none or several, or on unreadable standard input."""
    given = [x for x in (text, file, url) if x is not None]
    if len(given) != 1:
        what = "nothing to check" if not given else "give only one document"
        fail(f"{what}: give TEXT, '-' for standard input, --file PATH or --url URL")
    from veracity.core.textio import decode_text, input_file, read_limited

    if file is not None:  # said before any notice of building the run
        try:
            return input_file(file, "document file")
        except InputError as exc:
            fail(str(exc))
    if url is not None:
        return None
    from veracity.documents.reading import MAX_DOCUMENT_BYTES, from_text

    try:
        if text == "-":
            data = read_limited(sys.stdin.buffer, MAX_DOCUMENT_BYTES, "standard input")
            return from_text(decode_text(data, "standard input"), origin="stdin")
        return from_text(text or "")
    except InputError as exc:
        fail(str(exc))


def check_document(
    cfg: RunConfig,
    source: Any,
    *,
    url: str | None,
    method: str | None,
    labels: str | None,
    corrections: bool,
    as_json: bool,
    extraction: dict[str, Any] | None = None,
    html: Path | None = None,
) -> None:
    """Plan, run and print one document check (exit 2: refused or unreadable input;
    3: the model cannot be had; 1: a claim's check or the extraction failed, or the model
    or a source failed outside a claim's check, told in one line as a claim check tells
    it); with `html`, write the standalone HTML report there too."""
    from veracity.cli.common import ensure_model
    from veracity.cli.document_options import checked_extraction, checked_html_path
    from veracity.runtime.service import CheckRefused, Veracity, error_text

    settings = checked_extraction(extraction or {})
    html = checked_html_path(html)
    service = Veracity(cfg)
    try:
        plan = service.plan(
            source, kind="document", url=url, method=method, labels=labels,
            corrections=corrections, extraction=settings,
        )  # fmt: skip
    except CheckRefused as exc:
        fail(str(exc))
    except (InputError, ConfigError, TypeError) as exc:
        fail(error_text(exc))
    except (ModelNotAvailable, LLMAuthError) as exc:
        fail(str(exc), code=3)
    for note in plan.run.notes:
        console.print(note, style="dim", soft_wrap=True)
    ensure_model(plan.run.config.llm)
    try:
        report = _run_with_progress(plan).report
    except InputError as exc:  # a URL that cannot be fetched, a page with no text
        fail(error_text(exc))
    except (ModelNotAvailable, LLMAuthError) as exc:
        fail(str(exc), code=3)
    except StructuredOutputError as exc:
        fail(f"claim extraction failed: {exc}", code=1)
    except (LLMError, SourceError) as exc:  # an endpoint that does not answer, a source fault
        fail(f"the document check failed: {type(exc).__name__}: {error_text(exc)}", code=1)
    finally:
        service.close()
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


def _run_with_progress(plan: Any) -> Any:
    """Read the document and check it, with the stage, calls and time on standard error."""
    import asyncio

    from veracity.cli.progress_view import check_view

    with check_view(plan.run.method, console) as view, view.watching():
        return asyncio.run(plan.check())
