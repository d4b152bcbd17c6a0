"""Writing the documents' standalone HTML reports from the command line: one file for
`veracity check --kind document --html FILE`, and for `veracity batch --kind document
--html DIR` one report per checked row (``0001-<id>.html``, in input order) and an
``index.html`` linking them, with each row's counts and any row's error."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from veracity.cli.app import fail
from veracity.core.errors import StorageError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def write_report_html(path: Path, report: Any) -> None:
    """Write one document's report to `path` (exit 2 when it cannot be written)."""
    from veracity.documents.html_report import write_report

    try:
        write_report(path, report)
    except StorageError as exc:
        fail(str(exc))


def report_file_name(position: int, row_id: str) -> str:
    """A safe, unique file name for the row at `position` (1-based) of the input."""
    stem = _UNSAFE.sub("-", row_id).strip("-.")[:60] or "row"
    return f"{position:04d}-{stem}.html"


def write_batch_html(folder: Path, store: Any, order: list[str]) -> Path:
    """Write a report per checked row of `order` and the index; returns the index's path."""
    from veracity.core.storage import write_atomically
    from veracity.documents.html_report import IndexRow, render_index, write_report

    folder = folder.expanduser()
    records = {r.id: r for r in store.read_predictions()}
    rows, method = [], ""
    try:
        for n, row_id in enumerate(order, 1):
            record = records.get(row_id)
            if record is None or record.report is None:
                why = "not checked yet"
                if record is not None:
                    why = (record.verdict.error if record.verdict else None) or record.status
                rows.append(IndexRow(id=row_id, status="error", error=why))
                continue
            report = record.report
            name = report_file_name(n, row_id)
            write_report(folder / name, report)
            method, s = report.method, report.summary
            rows.append(
                IndexRow(
                    id=row_id, status="ok", href=name,
                    title=report.document.title or report.document.url or record.input,
                    claims=str(s.claims), supported=str(s.supported), refuted=str(s.refuted),
                    factuality="–" if s.factuality is None else f"{s.factuality:.0%}",
                )
            )  # fmt: skip
        index = folder / "index.html"
        page = render_index(rows, method=method or "–")
        write_atomically(index, lambda f: f.write(page), "HTML index")
    except StorageError as exc:
        fail(str(exc))
    return index
