"""A loader for any JSONL / JSON / CSV / TSV file, given a column mapping.

    spec = GenericSpec(path="my_claims.csv", text="statement", label="verdict",
                       label_space="true_false", id="claim_id", date="when")
    examples = GenericDataset(spec).load()

Every record must have the text and label columns; a label outside the declared space
(after the optional explicit `label_table` renames) is an error naming the file and line.
Dates are ISO 8601 unless `date_format` (strptime) is given.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from veracity.core.labels import LabelError, get_label_space
from veracity.core.textio import parse_json
from veracity.core.types import Article, Claim, Post, Reply, reply_fields
from veracity.datasets._common import BaseDataset, Loc, bool_label, optional_text
from veracity.datasets._readers import read_csv, read_json_array, read_jsonl
from veracity.datasets.base import DatasetError, DatasetInfo, Example

Format = Literal["jsonl", "json", "csv", "tsv"]
_SUFFIX: dict[str, Format] = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".tsv": "tsv"}


class ColumnSpec(BaseModel):
    """Which column of a file holds what part of the input (no label: see `GenericSpec`).

    Attributes:
        text: column with the text to check (claim, article body or post).
        kind: what the text is: "claim", "article" or "post".
        format: file format; default from the file suffix (.jsonl .json .csv .tsv).
        id, date, speaker, title, context, replies: optional columns (speaker is the post
            author for posts; title is for articles; context is for claims; replies is a
            post's replies: a JSON list of texts or of objects with ``text`` and optional
            ``id``, ``author``, ``parent``, ``created_at``, JSON-encoded in CSV/TSV).
        date_format: strptime format of the date column (default ISO 8601).
    """

    model_config = ConfigDict(extra="forbid")

    text: str = "text"
    kind: Literal["claim", "article", "post"] = "claim"
    format: Format | None = None
    id: str | None = None
    date: str | None = None
    date_format: str | None = None
    speaker: str | None = None
    title: str | None = None
    context: str | None = None
    replies: str | None = None

    def file_format(self, path: Path) -> Format:
        if self.format is not None:
            return self.format
        fmt = _SUFFIX.get(path.suffix.lower())
        if fmt is None:
            raise DatasetError(f"{path}: cannot tell the format from the suffix; set `format`")
        return fmt

    @property
    def columns(self) -> dict[str, str]:
        """Role -> column name, for the columns that were given."""
        roles = ("text", "label", "id", "date", "speaker", "title", "context", "replies")
        return {r: getattr(self, r) for r in roles if getattr(self, r, None) is not None}


class GenericSpec(ColumnSpec):
    """Where the labelled file is, which column holds what, and the labels' space.

    Attributes:
        path: the file.
        text: column with the text to check.
        label: column with the gold label.
        label_space: a registered label space the labels belong to.
        label_table: explicit renames from raw labels to labels of the space, e.g.
            {"0": "REAL", "1": "FAKE"}.
        name: the dataset name shown in reports.

    The other columns are those of `ColumnSpec`.
    """

    path: Path
    text: str
    label: str
    label_space: str
    label_table: dict[str, str] = Field(default_factory=dict)
    name: str = "generic"

    @field_validator("label_space")
    @classmethod
    def _space(cls, v: str) -> str:
        try:
            get_label_space(v)
        except LabelError as exc:
            raise ValueError(str(exc)) from None
        return v


class GenericDataset(BaseDataset):
    """Examples from a user's file through a `GenericSpec`."""

    def __init__(self, spec: GenericSpec | None = None, **fields: Any) -> None:
        try:
            self.spec = spec if spec is not None else GenericSpec(**fields)
        except ValidationError as exc:
            raise DatasetError(f"generic dataset: {exc}") from None
        self.info = DatasetInfo(
            name=self.spec.name,
            label_space=self.spec.label_space,
            splits=("all",),
            input_kind=self.spec.kind,
            folder=str(self.spec.path.parent),
            description=f"user file {self.spec.path.name}",
        )
        self.split_files = {"all": (self.spec.path.name,)}

    def files(self, split: str, data_dir_: Path | None = None) -> tuple[Path, ...]:
        return (self._user_file(self.spec.path),)

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        fmt = self.spec.file_format(file)
        if fmt in ("csv", "tsv"):
            rows = read_csv(file, delimiter="\t" if fmt == "tsv" else ",")
            first = next(rows, None)
            if first is None:
                return
            missing = [c for c in self.spec.columns.values() if c not in first[1]]
            if missing:
                raise DatasetError(
                    f"{file}: no column {', '.join(map(repr, missing))}; columns: {list(first[1])}"
                )
            yield first
            yield from rows
        elif fmt == "jsonl":
            yield from read_jsonl(file)
        else:
            yield from read_json_array(file)

    def parse(self, raw: Any, loc: Loc, split: str) -> Example:
        if not isinstance(raw, dict):
            raise ValueError(f"expected an object, found {type(raw).__name__}")
        s = self.spec
        for role, column in s.columns.items():
            if role in ("text", "label") and column not in raw:
                raise ValueError(f"missing {role} column {column!r}")
        label = bool_label(raw[s.label])
        label = str(label) if isinstance(label, int | float) else label
        if isinstance(label, str):
            label = s.label_table.get(label.strip(), label.strip())
        ex_id = str(raw[s.id]) if s.id and raw.get(s.id) not in (None, "") else loc.default_id
        return self.example(
            label, loc, id=ex_id, input=row_input(s, raw, ex_id), metadata={"split": split}
        )


def row_input(spec: ColumnSpec, raw: dict[str, Any], ex_id: str) -> Claim | Article | Post:
    """The claim, article or post in one record, read through `spec`.

    Raises:
        ValueError: a column holds the wrong type or an unreadable date or reply list.
    """
    text = raw.get(spec.text)
    if not isinstance(text, str):
        raise ValueError(f"text column {spec.text!r} holds {type(text).__name__}, not text")
    when = _when(spec, raw.get(spec.date)) if spec.date else None
    speaker = optional_text(raw.get(spec.speaker)) if spec.speaker else None
    if spec.kind == "article":
        title = optional_text(raw.get(spec.title)) if spec.title else None
        return Article(id=ex_id, body=text, title=title or "", published_at=when)
    if spec.kind == "post":
        replies = _replies(raw.get(spec.replies), ex_id) if spec.replies else []
        return Post(id=ex_id, text=text, created_at=when, author=speaker, replies=replies)
    context = optional_text(raw.get(spec.context)) if spec.context else None
    return Claim(
        id=ex_id, text=text, date=when.date() if when else None, speaker=speaker, context=context
    )


def _when(spec: ColumnSpec, value: Any) -> dt.datetime | None:
    text = optional_text(value if value is None or isinstance(value, str) else str(value))
    if text is None:
        return None
    try:
        if spec.date_format:
            return dt.datetime.strptime(text, spec.date_format)
        return dt.datetime.fromisoformat(text)
    except ValueError:
        want = repr(spec.date_format) if spec.date_format else "ISO 8601 (YYYY-MM-DD)"
        raise ValueError(f"date {text!r} is not in the format {want}") from None


def _replies(value: Any, post_id: str) -> list[Reply]:
    """A post's replies from a JSON list (or its JSON text, as CSV holds it)."""
    if value in (None, ""):
        return []
    if isinstance(value, str):  # the bounded parser: a cell nested 100,000 deep is refused
        value = parse_json(value, "the replies column")
    if not isinstance(value, list):
        raise ValueError(f"the replies column holds {type(value).__name__}, not a list")
    replies = []
    for n, fields in enumerate(reply_fields(value, post_id), 1):  # the shapes check accepts
        try:
            replies.append(Reply.model_validate(fields))
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(p) for p in error["loc"])
            raise ValueError(f"reply {n}: {where + ': ' if where else ''}{error['msg']}") from None
    return replies


def load_file(limit: int | None = None, labels: str | None = None, **fields: Any) -> list[Example]:
    """Shortcut: `GenericDataset(**fields).load(limit=limit, labels=labels)`."""
    return GenericDataset(**fields).load(limit=limit, labels=labels)
