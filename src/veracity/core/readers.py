"""Readers for record files (JSON Lines, JSON arrays, CSV/TSV), locating every record.

Used by the benchmark loaders, by local corpus files and by `veracity batch` (files and
standard input alike: a `Stream` is read through the same code as a file). Each reader
yields ``(Loc, record)`` pairs so that a malformed record can be reported by file and
line (or array position); unreadable input raises the caller's `error` type
(``DatasetError`` for loaders, ``CorpusInputError`` for corpora) at once, naming the
line: a path that is not a regular file (`veracity.core.textio.input_file`), a line that is
not UTF-8, a line or row longer than `MAX_RECORD_BYTES` (read up to the limit and one
byte more, never further), JSON that is malformed, nested too deeply or holds an
unreadable number (`veracity.core.textio`'s bounds), a CSV quote left open, a header that
names a column twice, a row with the wrong number of columns. A byte-order mark at the
start is dropped.

This module imports only the lowest layer (`veracity.core.errors`, `veracity.core.textio`), so
every layer may use it.
"""

from __future__ import annotations

import csv
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from veracity.core.errors import InputError
from veracity.core.textio import (
    MAX_JSON_FILE_BYTES,
    MAX_RECORD_BYTES,
    decode_text,
    input_file,
    parse_json,
    read_file_limited,
)

_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Stream:
    """An open binary stream read like a record file (standard input), and its name."""

    fh: IO[bytes]
    name: str = "stdin"


Source = Path | Stream


def _json(text: str, where: object, error: type[Exception]) -> Any:
    try:
        return parse_json(text, str(where))
    except InputError as exc:
        raise error(str(exc)) from None


@dataclass(frozen=True)
class Loc:
    """Where a record came from: its file and its 1-based line (or array position)."""

    file: Path
    line: int
    unit: str = "line"  # "line" for line-based files, "record" for JSON arrays and maps

    def __str__(self) -> str:
        return f"{self.file}: {self.unit} {self.line}"

    @property
    def default_id(self) -> str:
        """An id built from the file name and position, for sets without their own ids."""
        return f"{self.file.stem}:{self.line}"


class _Lines:
    """The decoded lines of a binary stream, each read with a bound, counting the bytes
    of the record being read (`mark` starts a new record)."""

    def __init__(self, fh: IO[bytes], where: Path, error: type[Exception], limit: int):
        self.fh, self.where, self.error, self.limit = fh, where, error, limit
        self.n = 0  # lines read
        self.record_bytes = 0
        self.record_line = 1

    def mark(self) -> None:
        self.record_bytes, self.record_line = 0, self.n + 1

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        raw = self.fh.readline(self.limit + 1)
        if not raw:
            raise StopIteration
        self.n += 1
        self.record_bytes += len(raw)
        if self.record_bytes > self.limit + 1 or (len(raw) > self.limit and raw[-1:] != b"\n"):
            what = "line" if self.record_line == self.n else "row (from this line)"
            raise self.error(
                f"{self.where}: line {self.record_line}: a {what} longer than {self.limit:,} "
                "bytes, the limit of one record"
                + ("; is a quote left open?" if self.record_line != self.n else "")
            )
        if self.n == 1 and raw.startswith(_BOM):
            raw = raw[len(_BOM) :]
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.error(
                f"{self.where}: line {self.n}: not UTF-8 text (byte "
                f"0x{raw[exc.start : exc.start + 1].hex()} at byte {exc.start + 1} of the "
                "line); convert the file to UTF-8"
            ) from None


class _opened:
    """``with _opened(source, error) as lines``: the bounded lines of a file or stream."""

    def __init__(self, source: Source, error: type[Exception], limit: int = MAX_RECORD_BYTES):
        self.source, self.error, self.limit = source, error, limit
        self._fh: IO[bytes] | None = None

    def __enter__(self) -> _Lines:
        if isinstance(self.source, Stream):
            return _Lines(self.source.fh, Path(self.source.name), self.error, self.limit)
        try:
            self._fh = input_file(Path(self.source)).open("rb")
        except InputError as exc:
            raise self.error(str(exc)) from None
        except OSError as exc:
            raise self.error(f"{self.source} cannot be read: {exc.strerror or exc}") from None
        return _Lines(self._fh, Path(self.source), self.error, self.limit)

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.close()


def read_jsonl(file: Source, *, error: type[Exception] = ValueError) -> Iterator[tuple[Loc, Any]]:
    """Records of a JSON Lines file or stream; blank lines are ignored."""
    with _opened(file, error) as lines:
        for line in lines:
            if not line.strip():
                continue
            loc = Loc(lines.where, lines.n)
            yield loc, _json(line, loc, error)


def read_json_array(
    file: Path, *, error: type[Exception] = ValueError
) -> Iterator[tuple[Loc, Any]]:
    """Records of a file holding one JSON array (positions are 1-based)."""
    data = read_json(file, error=error)
    if not isinstance(data, list):
        raise error(f"{file}: expected a JSON array, found {type(data).__name__}")
    for n, item in enumerate(data, 1):
        yield Loc(file, n, "record"), item


def read_json(
    file: Path, *, error: type[Exception] = ValueError, limit: int = MAX_JSON_FILE_BYTES
) -> Any:
    """The JSON value a file holds (at most `limit` bytes; JSON Lines has no file limit)."""
    try:
        text = decode_text(read_file_limited(Path(file), limit, "JSON file"), str(file))
    except InputError as exc:
        raise error(str(exc)) from None
    return _json(text, file, error)


def read_csv(
    file: Source, *, delimiter: str = ",", error: type[Exception] = ValueError
) -> Iterator[tuple[Loc, dict[str, str]]]:
    """Rows of a CSV/TSV file or stream with a header, located by the line where each row
    starts; parsed strictly (a quote left open or text after a closing quote is an error)."""
    csv.field_size_limit(sys.maxsize)  # rows are bounded by bytes (`_Lines`), not here
    with _opened(file, error) as lines:
        reader = csv.reader(lines, delimiter=delimiter, strict=True)
        header = _header(reader, lines, error)
        while True:
            lines.mark()
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise error(_csv_problem(lines, exc)) from None
            loc = Loc(lines.where, lines.record_line)
            if not row:
                continue
            if len(row) != len(header):
                raise error(f"{loc}: {len(row)} columns, the header has {len(header)}")
            yield loc, dict(zip(header, row, strict=True))


def _header(reader: Any, lines: _Lines, error: type[Exception]) -> list[str]:
    try:
        header = next(reader)
    except StopIteration:
        raise error(f"{lines.where}: empty file, expected a header row") from None
    except csv.Error as exc:
        raise error(_csv_problem(lines, exc)) from None
    twice = [name for name, n in Counter(header).items() if n > 1]
    if twice:
        name = f"the column {twice[0]!r}" if twice[0] else "more than one column without a name"
        raise error(
            f"{lines.where}: line 1: the header names {name} twice; rename the columns so "
            "that each name is used once"
        )
    return header


def _csv_problem(lines: _Lines, exc: csv.Error) -> str:
    start, end = lines.record_line, lines.n
    if "unexpected end of data" in str(exc):
        return (
            f"{lines.where}: line {start}: a quote opened in this row is never closed "
            f"(the file ends at line {end}); close or remove it"
        )
    where = f" (the row runs on to line {end}: is a quote left open?)" if end > start else ""
    return f"{lines.where}: line {start}: {exc}{where}"


def read_tsv_rows(
    file: Path, columns: int, *, error: type[Exception] = ValueError
) -> Iterator[tuple[Loc, list[str]]]:
    """Rows of a header-less TSV with no quoting and exactly `columns` columns."""
    with _opened(file, error) as lines:
        for line in lines:
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            row = text.split("\t")
            loc = Loc(lines.where, lines.n)
            if len(row) != columns:
                raise error(f"{loc}: {len(row)} tab-separated columns, expected {columns}")
            yield loc, row
