"""Readers for record files (JSON Lines, JSON arrays, CSV/TSV), locating every record.

Used by the benchmark loaders and by local corpus files. Each reader yields ``(Loc,
record)`` pairs so that a malformed record can be reported by file and line (or array
position); unreadable input raises the caller's `error` type (``DatasetError`` for
loaders, ``CorpusInputError`` for corpora) at once: a file that is not UTF-8, JSON that
is malformed, nested too deeply or holds an unreadable number (`veracity.textio`'s
bounds), a row with the wrong number of columns.

This module imports only the lowest layer (`veracity.errors`, `veracity.textio`), so
every layer may use it.
"""

from __future__ import annotations

import contextlib
import csv
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from veracity.errors import InputError
from veracity.textio import parse_json


@contextlib.contextmanager
def _decoding(file: Path, error: type[Exception]) -> Iterator[None]:
    """Turn a decoding failure anywhere in the block into `error` naming `file`."""
    try:
        yield
    except UnicodeDecodeError as exc:
        raise error(
            f"{file}: not UTF-8 text (byte 0x{exc.object[exc.start : exc.start + 1].hex()} "
            f"at byte {exc.start} of the block read); convert the file to UTF-8"
        ) from None


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


def read_jsonl(file: Path, *, error: type[Exception] = ValueError) -> Iterator[tuple[Loc, Any]]:
    """Records of a JSON Lines file; blank lines are ignored."""
    with _decoding(file, error), file.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            loc = Loc(file, n)
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


def read_json(file: Path, *, error: type[Exception] = ValueError) -> Any:
    with _decoding(file, error):
        return _json(file.read_text(encoding="utf-8"), file, error)


def read_csv(
    file: Path, *, delimiter: str = ",", error: type[Exception] = ValueError
) -> Iterator[tuple[Loc, dict[str, str]]]:
    """Rows of a CSV/TSV file with a header, located by the line where each row starts."""
    csv.field_size_limit(sys.maxsize)
    with _decoding(file, error), file.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        try:
            header = next(reader)
        except StopIteration:
            raise error(f"{file}: empty file, expected a header row") from None
        except csv.Error as exc:
            raise error(f"{file}: line 1: {exc}") from None
        start = reader.line_num + 1
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise error(f"{file}: line {start}: {exc}") from None
            loc = Loc(file, start)
            start = reader.line_num + 1
            if not row:
                continue
            if len(row) != len(header):
                raise error(f"{loc}: {len(row)} columns, the header has {len(header)}")
            yield loc, dict(zip(header, row, strict=True))


def read_tsv_rows(
    file: Path, columns: int, *, error: type[Exception] = ValueError
) -> Iterator[tuple[Loc, list[str]]]:
    """Rows of a header-less TSV with no quoting and exactly `columns` columns."""
    with _decoding(file, error), file.open(encoding="utf-8", newline="") as fh:
        for n, line in enumerate(fh, 1):
            text = line.rstrip("\r\n")
            if not text.strip():
                continue
            row = text.split("\t")
            loc = Loc(file, n)
            if len(row) != columns:
                raise error(f"{loc}: {len(row)} tab-separated columns, expected {columns}")
            yield loc, row
