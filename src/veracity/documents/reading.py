"""Reading a document to check: text, a file (txt, md, html, pdf), standard input or a URL.

Every way in ends as a `DocumentText`: the plain text whose character offsets the claims'
spans refer to, with the title, date and address where the input gives them. HTML (a file
or a fetched page) is reduced to its main text with trafilatura; a URL is fetched through
the guarded HTTP client (public addresses only, redirects re-checked, size and time
limits); a PDF needs the optional ``pdf`` extra (pypdf). Sizes are bounded before
anything is decoded, and every failure is an `InputError` that names the input and a fix.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.dates import UTC, parse_date
from veracity.core.errors import InputError
from veracity.core.extras import install_command
from veracity.core.textio import decode_text, read_file_limited, require_text

Format = Literal["text", "markdown", "html", "pdf"]
MAX_DOCUMENT_BYTES = 8 * 1024 * 1024  # a file or page read for checking
MAX_DOCUMENT_CHARS = 200_000  # the text kept after extraction
_SUFFIXES: dict[str, Format] = {
    ".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown",
    ".html": "html", ".htm": "html", ".xhtml": "html", ".pdf": "pdf",
}  # fmt: skip


class DocumentText(BaseModel):
    """A document's text, ready for claim extraction: the ``document`` input kind.

    A check reads it like a claim, article or post (``kind="document"``); the composite
    `veracity.documents.checking.DocumentChecker` checks it over the run's claim method.
    (Not `veracity.core.types.Document`, which is a retrieved passage.)

    Attributes:
        text: the plain text (the spans of its claims are offsets into it).
        id: its id, when a caller gives one (a batch row's).
        title: its title, when the input gives one.
        published_at: its date, when the input gives one.
        url: where it was fetched from (None for text, files and standard input).
        file: the name of the file it was read from (its last part, no folders).
        origin: how it came in.
        format: what it was before it became plain text.
        truncated: the text was longer than `MAX_DOCUMENT_CHARS` and was cut there.
        question: the question the text answers (an LLM's answer); claim extraction reads
            it beside the text.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["document"] = "document"
    text: str = Field(min_length=1)
    id: str | None = None
    title: str | None = None
    question: str | None = Field(default=None, max_length=4000)
    published_at: _dt.datetime | None = None
    url: str | None = None
    file: str | None = None
    origin: Literal["text", "file", "stdin", "url"] = "text"
    format: Format = "text"
    truncated: bool = False

    @property
    def content(self) -> str:
        return self.text

    @property
    def cutoff(self) -> _dt.date | None:
        return self.published_at.date() if self.published_at else None


def from_text(
    text: str,
    *,
    title: str | None = None,
    origin: Literal["text", "stdin"] = "text",
    question: str | None = None,
) -> DocumentText:
    """A document given as text (markdown is read as it is: its marks stay in the text);
    `question`: the question it answers, if it is an answer."""
    require_text(text, "document text")
    document = _kept(text, title=title, origin=origin, format="text")
    if question is not None and question.strip():
        document = document.model_copy(update={"question": " ".join(question.split())[:4000]})
    return document


def from_file(path: Path, *, format: Format | None = None) -> DocumentText:
    """A document read from `path`; the format follows the suffix unless given.

    Raises:
        InputError: not a readable regular file, too large, an unknown suffix with no
            `format`, not decodable, a PDF without pypdf, or no text in it.
    """
    kind = format or _SUFFIXES.get(path.suffix.lower())
    if kind is None:
        known = ", ".join(sorted(_SUFFIXES))
        raise InputError(
            f"document {path}: unknown file type {path.suffix or '(no suffix)'}; give a file "
            f"ending in one of {known}, or name its format (--format text|markdown|html|pdf)"
        )
    data = read_file_limited(path, MAX_DOCUMENT_BYTES, "document")
    if kind == "pdf":
        text, title = _pdf_text(data, path)
        return _kept(text, title=title, origin="file", format="pdf", file=path.name)
    text = decode_text(data, f"document {path}")
    if kind == "html":
        page = from_html(text.encode("utf-8"), origin="file")
        return page.model_copy(update={"file": path.name})
    return _kept(text, title=None, origin="file", format=kind, file=path.name)


def from_html(
    body: bytes, *, url: str | None = None, origin: Literal["file", "url"] = "url"
) -> DocumentText:
    """The main text of an HTML page (trafilatura), with its title and date.

    Raises:
        InputError: no main text could be found in the page.
    """
    import trafilatura  # imported here: loading it takes a moment

    doc: Any = trafilatura.bare_extraction(
        body,
        url=url,
        with_metadata=True,
        include_comments=False,
        date_extraction_params={"original_date": True, "extensive_search": False},
    )
    text = getattr(doc, "text", None) if doc is not None else None
    if not text or not text.strip():
        where = url or "the HTML file"
        raise InputError(f"no main text found in {where}; give the text itself instead")
    date = parse_date(getattr(doc, "date", None), lenient=True, tz=UTC)
    title = getattr(doc, "title", None) or None
    return _kept(
        text.strip(), title=title, origin=origin, format="html", url=url, published_at=date
    )


async def from_url(url: str, http: Any, *, source: str = "document") -> DocumentText:
    """The main text of the page at `url`, fetched through the guarded HTTP client.

    Args:
        url: an http(s) address.
        http: a `veracity.retrieval.transport.http.HttpClient` (its public-address guard,
            redirect checks and size and time limits apply).
        source: the name the fetch is counted and traced under.

    Raises:
        InputError: not an http(s) URL, not public, unreachable, not a web page, or no
            main text in it.
    """
    from veracity.core.errors import SourceError
    from veracity.retrieval.transport.netsafe import UnsafeURL

    if not url.lower().startswith(("http://", "https://")):
        raise InputError(f"document URL {url!r}: give an http:// or https:// address")
    try:
        page = await http.fetch_page(source, url)
    except UnsafeURL as exc:
        raise InputError(f"document URL {url}: {exc}") from None
    except SourceError as exc:
        raise InputError(f"document URL {url} could not be fetched: {exc}") from None
    kind = page.content_type.split(";", 1)[0].strip().lower()
    if kind == "text/plain":
        return _kept(page.text, title=None, origin="url", format="text", url=str(page.url))
    if kind not in ("text/html", "application/xhtml+xml", ""):
        raise InputError(f"document URL {url} is {kind}, not a web page or plain text")
    # parsing a page is CPU work: a worker thread, so a server's event loop keeps answering
    return await asyncio.to_thread(from_html, page.content, url=str(page.url), origin="url")


def _pdf_text(data: bytes, path: Path) -> tuple[str, str | None]:
    try:
        import io

        from pypdf import PdfReader
        from pypdf.errors import PdfReadError
    except ImportError:
        raise InputError(
            f"document {path} is a PDF; reading PDFs needs the pdf extra: {install_command('pdf')}"
        ) from None
    try:
        reader = PdfReader(io.BytesIO(data))
        pages = [page.extract_text() or "" for page in reader.pages]
        title = reader.metadata.title if reader.metadata else None
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"document {path} is not a readable PDF: {exc}") from None
    return "\n\n".join(p.strip() for p in pages if p.strip()), title


def _kept(text: str, **fields: Any) -> DocumentText:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not text.strip():
        raise InputError("the document holds no text to check")
    cut = len(text) > MAX_DOCUMENT_CHARS
    return DocumentText(text=text[:MAX_DOCUMENT_CHARS], truncated=cut, **fields)
