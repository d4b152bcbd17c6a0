"""A checked document as one standalone HTML file (``veracity check --kind document --html``).

The page renders the same annotated view as the web UI: `veracity.documents.annotate.view`
turns the `DocumentReport` into display strings and safe links, and the web UI's partial
``_document.html.j2`` lays it out (each claim's span highlighted by its verdict class, a
table of claims, each claim's verdict, rationale, evidence and suggested correction, the
totals with the factuality). The styles and one small script (selecting a highlight opens
that claim's details) are inlined, so the file opens offline and fetches nothing.

Everything from the document, the model or the evidence is text: Jinja autoescapes it,
and the page's Content-Security-Policy allows no script but ours (by its hash) and no
remote resource, so a ``<script>`` in a document shows as text and never runs.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from veracity.documents.annotate import view
from veracity.documents.report import DocumentReport

_HERE = Path(__file__).resolve().parent
_OWN = _HERE / "templates"
_SERVER = _HERE.parent / "server"  # the web UI's partial and styles (files only, no import)
_STYLES = (_SERVER / "static" / "app.css", _SERVER / "static" / "document.css")

__all__ = ["IndexRow", "render_index", "render_report", "write_report"]


@dataclass(frozen=True)
class IndexRow:
    """One document in a batch's index page (display strings; `href` a relative file)."""

    id: str
    status: str
    title: str = ""
    href: str | None = None
    error: str | None = None
    claims: str = "–"
    supported: str = "–"
    refuted: str = "–"
    factuality: str = "–"


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(
        loader=FileSystemLoader([str(_OWN), str(_SERVER / "templates")]),
        autoescape=True,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )


@lru_cache(maxsize=1)
def _assets() -> tuple[Markup, Markup, str]:
    """The inlined styles and script (ours, trusted) and the script's CSP hash."""
    css = "\n".join(p.read_text(encoding="utf-8") for p in _STYLES)
    script = (_OWN / "report.js").read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return Markup(css), Markup(script), f"sha256-{digest}"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("veracity")
    except PackageNotFoundError:
        return "(source)"


def render_report(report: DocumentReport, *, generated: datetime | None = None) -> str:
    """The standalone HTML page of `report` (`generated`: the time shown; default now)."""
    css, script, script_hash = _assets()
    doc = view(report)
    when = (generated or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            doc=doc,
            css=css,
            script=script,
            script_hash=script_hash,
            version=_version(),
            page_title=doc.title or doc.file or "Checked document",
            generated=when,
            wall_time=f"{report.wall_time_s:.1f} s, {report.usage.llm_calls} LLM calls",
        )
    )


def write_report(path: Path, report: DocumentReport) -> Path:
    """Write `report`'s page to `path` atomically; returns the path.

    Raises:
        StorageError: the file cannot be written.
    """
    from veracity.core.storage import write_atomically

    page = render_report(report)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda f: f.write(page), "HTML report")
    return path


def render_index(rows: Sequence[IndexRow], *, method: str) -> str:
    """The index page of a batch's reports, one row per document in input order."""
    css, _, _ = _assets()
    page = _environment().get_template("index.html.j2")
    return page.render(rows=list(rows), css=css, version=_version(), method=method)
