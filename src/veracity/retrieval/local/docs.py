"""Reading documents for a local corpus: folders, JSONL and CSV files, SciFact.

Every reader yields `veracity.core.types.Document`s (one per source document, not yet
chunked). Text files (``.txt``, ``.md``) and HTML pages (tags stripped) become one
document each, with the path relative to the folder as id. JSONL and CSV rows are mapped
to documents with a `FieldMap`; columns it does not name go into ``metadata``.
Malformed input raises `CorpusInputError` with the file and line; nothing is skipped
silently.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from veracity.core import readers
from veracity.core.dates import parse_date
from veracity.core.errors import InputError
from veracity.core.textio import MAX_DOCUMENT_FILE_BYTES, read_file_limited
from veracity.core.types import Document

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
HTML_SUFFIXES = (".html", ".htm")
TABLE_SUFFIXES = (".jsonl", ".csv")


class CorpusInputError(ValueError):
    """A corpus file that cannot be read into documents (with its path and line)."""


class FieldMap(BaseModel):
    """Which column of a JSONL/CSV record holds each document field.

    Each attribute lists candidate column names; the first one present in a record is
    used. Give a single name to map a custom column, e.g. ``FieldMap(text=["body"])``.
    """

    model_config = ConfigDict(extra="forbid")

    id: list[str] = ["id", "doc_id", "_id", "docid"]
    text: list[str] = ["text", "body", "content", "abstract", "contents"]
    title: list[str] = ["title", "headline"]
    url: list[str] = ["url", "link", "source_url"]
    date: list[str] = ["date", "published_at", "published", "pub_date", "publish_date"]

    @classmethod
    def parse(cls, spec: str) -> FieldMap:
        """Build from ``"text=body,id=uid"`` (CLI form); unnamed fields keep their defaults."""
        values: dict[str, list[str]] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            key, sep, column = part.partition("=")
            if not sep or not column.strip():
                raise CorpusInputError(f"bad field mapping {part!r}; expected FIELD=COLUMN")
            values[key.strip()] = [column.strip()]
        try:
            return cls(**values)
        except ValidationError as exc:
            fields = ", ".join(cls.model_fields)
            raise CorpusInputError(f"bad field mapping {spec!r}; fields are {fields}") from exc


def parse_date_at(value: Any, where: str) -> _dt.datetime | None:
    """A publication date from ISO text, a bare year, or epoch seconds (UTC).

    Raises:
        CorpusInputError: the value is not one of these (`where` says which record).
    """
    try:
        return parse_date(value)
    except ValueError as exc:
        raise CorpusInputError(f"{where}: {exc}") from None


def _pick(record: dict[str, Any], names: list[str]) -> tuple[str | None, Any]:
    for name in names:
        if name in record and record[name] not in (None, ""):
            return name, record[name]
    return None, None


def record_to_document(
    record: dict[str, Any], fields: FieldMap, where: str, fallback_id: str
) -> Document:
    """Map one JSONL/CSV record to a Document (list-valued text is joined with spaces)."""
    text_key, text = _pick(record, fields.text)
    if isinstance(text, list):
        text = " ".join(str(t).strip() for t in text if str(t).strip())
    if not isinstance(text, str) or not text.strip():
        raise CorpusInputError(
            f"{where}: no text; looked for columns {fields.text} "
            "(map another column with --fields text=COLUMN)"
        )
    id_key, doc_id = _pick(record, fields.id)
    title_key, title = _pick(record, fields.title)
    url_key, url = _pick(record, fields.url)
    date_key, date = _pick(record, fields.date)
    used = {text_key, id_key, title_key, url_key, date_key}
    metadata = {k: v for k, v in record.items() if k not in used}
    return Document(
        id=str(doc_id) if doc_id is not None else fallback_id,
        text=text.strip(),
        title=str(title).strip() if title is not None else "",
        url=str(url).strip() if url is not None else None,
        published_at=parse_date_at(date, f"{where}: column {date_key!r}"),
        metadata=metadata,
    )


def read_jsonl(path: Path, fields: FieldMap | None = None) -> Iterator[Document]:
    """Documents from a JSON-lines file, one object per line (blank lines allowed)."""
    fields = fields or FieldMap()
    for loc, record in readers.read_jsonl(path, error=CorpusInputError):
        if not isinstance(record, dict):
            raise CorpusInputError(f"{loc}: expected a JSON object per line")
        yield record_to_document(record, fields, str(loc), loc.default_id)


def read_csv(path: Path, fields: FieldMap | None = None) -> Iterator[Document]:
    """Documents from a CSV file with a header row."""
    fields = fields or FieldMap()
    for loc, row in readers.read_csv(path, error=CorpusInputError):
        yield record_to_document(dict(row), fields, str(loc), loc.default_id)


class _HTMLText(HTMLParser):
    _SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head"})
    _BLOCK = frozenset(
        [
            "p",
            "div",
            "br",
            "li",
            "ul",
            "ol",
            "h1",
            "h2",
            "h3",
            "h4",
            "h5",
            "h6",
            "tr",
            "table",
            "section",
            "article",
            "header",
            "footer",
            "blockquote",
            "pre",
            "hr",
            "title",
            "dd",
            "dt",
        ]
    )

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self._in_title = True
        elif tag in self._SKIP:
            self._skip += 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in self._SKIP and self._skip:
            self._skip -= 1
        if tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
        elif not self._skip:
            self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str]:
    """Visible text and ``<title>`` of an HTML page (scripts and styles dropped)."""
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    text = "".join(parser.parts)
    lines = (re.sub(r"[ \t\r\f\v]+", " ", ln).strip() for ln in text.split("\n"))
    body = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return body, " ".join("".join(parser.title_parts).split())


def read_file_document(path: Path, root: Path) -> Document:
    """One document from a text, Markdown or HTML file; the id is the relative path."""
    try:
        data = read_file_limited(path, MAX_DOCUMENT_FILE_BYTES, "corpus file")
    except InputError as exc:
        raise CorpusInputError(str(exc)) from None
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorpusInputError(f"{path}: not UTF-8 text ({exc.reason})") from None
    doc_id = path.relative_to(root).as_posix() if path != root else path.name
    if path.suffix.lower() in HTML_SUFFIXES:
        text, title = html_to_text(raw)
    else:
        text, title = raw.strip(), ""
        heading = re.match(r"\s*#\s+(.+)", raw) if path.suffix.lower() != ".txt" else None
        if heading:
            title = heading.group(1).strip()
    if not text:
        raise CorpusInputError(f"{path}: no text in file")
    return Document(id=doc_id, text=text, title=title or path.stem, metadata={"path": doc_id})


def read_documents(path: str | Path, fields: FieldMap | None = None) -> Iterator[Document]:
    """Documents from a file (.jsonl, .csv, .txt, .md, .html) or a folder of such files.

    Folders are walked recursively in sorted order; hidden files and unknown suffixes
    are ignored. Raises `CorpusInputError` for a missing path or unreadable content.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise CorpusInputError(f"{p}: no such file or folder")
    if p.is_file():
        yield from _read_one(p, p.parent, fields)
        return
    found = False
    for child in sorted(p.rglob("*")):
        hidden = any(part.startswith(".") for part in child.relative_to(p).parts)
        known = child.suffix.lower() in TEXT_SUFFIXES + HTML_SUFFIXES + TABLE_SUFFIXES
        if child.is_file() and known and not hidden:
            found = True
            yield from _read_one(child, p, fields)
    if not found:
        raise CorpusInputError(
            f"{p}: no readable files (expected {', '.join(TEXT_SUFFIXES + HTML_SUFFIXES)}, "
            f"{', '.join(TABLE_SUFFIXES)})"
        )


def _read_one(path: Path, root: Path, fields: FieldMap | None) -> Iterator[Document]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from read_jsonl(path, fields)
    elif suffix == ".csv":
        yield from read_csv(path, fields)
    elif suffix in TEXT_SUFFIXES + HTML_SUFFIXES:
        yield read_file_document(path, root)
    else:
        raise CorpusInputError(f"{path}: unsupported file type {suffix or '(none)'}")


def read_scifact_corpus(path: str | Path) -> Iterator[Document]:
    """SciFact's ``corpus.jsonl`` (``{doc_id, title, abstract: [sentences]}``) as documents.

    The abstract sentences are joined with single spaces into the document text.
    """
    yield from read_jsonl(Path(path), FieldMap(id=["doc_id"], text=["abstract"]))
