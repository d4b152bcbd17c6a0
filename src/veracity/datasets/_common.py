"""Shared machinery for the benchmark loaders.

`BaseDataset` does what every loader needs: it resolves the data directory and the files
of a split, reads records with their file and line, turns any malformed record into a
`DatasetError` naming both, counts records a set legitimately drops, applies a limit and
maps gold labels to another label space through a registered `LabelMap`. A concrete
loader declares its `DatasetInfo`, the files of each split, and `parse` for one record.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from veracity.core.labels import LABEL_MAPS, LabelError, LabelMap, get_label_map, get_label_space
from veracity.core.types import Document
from veracity.datasets._readers import (
    Loc,
    read_jsonl,
)
from veracity.datasets.base import DatasetError, DatasetInfo, Example
from veracity.runtime.environment import default_data_dir

# Fact-checking and debunking sites whose verdict pages would leak gold labels; used as
# retrieval exclusions for sets built from them (the runner applies `exclude_domains`).
FACT_CHECK_SITES: tuple[str, ...] = (
    "politifact.com",
    "snopes.com",
    "factcheck.org",
    "fullfact.org",
    "truthorfiction.com",
    "leadstories.com",
    "checkyourfact.com",
    "africacheck.org",
    "factcheck.afp.com",
    "healthfeedback.org",
    "climatefeedback.org",
    "sciencefeedback.co",
    "misbar.com",
    "polygraph.info",
    "newsmeter.in",
    "newsmobile.in",
    "altnews.in",
    "vishvasnews.com",
    "boomlive.in",
    "factly.in",
    "dubawa.org",
    "verafiles.org",
    "zimfact.org",
    "pesacheck.org",
    "factcheck.thedispatch.com",
    "covid19facts.ca",
    "hoax-slayer.net",
    "mediabiasfactcheck.com",
)


SplitFiles = Mapping[str, tuple[str, ...]]  # split name -> files inside the data folder


@dataclass(frozen=True)
class Skip:
    """Returned by `parse` for a record the set legitimately drops, with the reason."""

    reason: str


class ExampleList(list[Example]):
    """The examples of one split, with what was dropped and where they came from.

    Attributes:
        dataset: the dataset name.
        split: the split loaded.
        files: the files read.
        skipped: number of records dropped, per reason (see each loader's docs).
    """

    def __init__(
        self,
        items: Iterable[Example] = (),
        *,
        dataset: str,
        split: str,
        files: tuple[Path, ...] = (),
        skipped: Mapping[str, int] | None = None,
    ) -> None:
        super().__init__(items)
        self.dataset = dataset
        self.split = split
        self.files = files
        self.skipped: dict[str, int] = dict(skipped or {})

    @property
    def label_counts(self) -> dict[str, int]:
        """Number of examples per gold label, most frequent first."""
        return dict(Counter(ex.label for ex in self).most_common())


def resolve_label_map(source: str, target: str | LabelMap | None) -> LabelMap | None:
    """The map from `source` to `target`, or None when no mapping is wanted."""
    if target is None or target == source:
        return None
    if isinstance(target, LabelMap):
        if target.source != source:
            raise DatasetError(f"label map {target.name!r} maps {target.source!r}, not {source!r}")
        return target
    try:
        get_label_space(target)
        return get_label_map(source, target)
    except LabelError as exc:
        known = sorted(m.target for m in LABEL_MAPS.values() if m.source == source)
        raise DatasetError(f"{exc}; label spaces reachable from {source!r}: {known}") from None


def relabel(example: Example, mapping: LabelMap) -> Example:
    """`example` with its gold label mapped; the original label stays in metadata."""
    meta = {**example.metadata, "gold_label_space": example.label_space}
    meta.setdefault("original_label", example.label)
    return example.model_copy(
        update={"label": mapping(example.label), "label_space": mapping.target, "metadata": meta}
    )


class BaseDataset:
    """A loader for one benchmark (or one fixed variant of it).

    Subclasses set `info` and `split_files` (split name -> files relative to the data
    folder) and implement `parse`. `records` reads JSON Lines by default; override it
    for other formats with the readers below.
    """

    info: DatasetInfo
    split_files: SplitFiles
    # layout name -> the full upstream file, read instead when present (e.g. AVeriTeC's
    # whole ``dev.json`` where the layout has its first 250 claims, ``dev_first250.json``)
    full_files: ClassVar[Mapping[str, str]] = {}

    # ----------------------------------------------------------------- public API

    def load(
        self,
        split: str | None = None,
        data_dir: Path | None = None,
        *,
        limit: int | None = None,
        labels: str | LabelMap | None = None,
        path: str | Path | None = None,
    ) -> ExampleList:
        """The examples of `split` (default: the first split), in file order.

        Args:
            split: one of `info.splits`.
            data_dir: benchmark data directory (default: `veracity.runtime.environment.data_dir()`).
            limit: return at most this many examples (the first ones).
            labels: map gold labels into this label space through a registered map.
            path: read this file (same format as the set's own files) instead.

        Raises:
            DatasetError: missing files, an unknown split or label space, or a malformed
                record (the message names the file and line).
        """
        split = self.check_split(split)
        if limit is not None and limit < 1:
            raise DatasetError(f"limit must be a positive number, got {limit}")
        mapping = resolve_label_map(self.info.label_space, labels)
        files = (self._user_file(path),) if path is not None else self.files(split, data_dir)
        out = ExampleList(dataset=self.info.name, split=split, files=files)
        skipped: Counter[str] = Counter()
        for ex in self._examples(files, split, skipped):
            out.append(relabel(ex, mapping) if mapping else ex)
            if limit is not None and len(out) >= limit:
                break
        out.skipped = dict(skipped)
        return out

    def corpus(self, data_dir: Path | None = None) -> Iterator[Document]:
        """The set's retrieval corpus; this set has none."""
        raise DatasetError(f"{self.info.name} has no retrieval corpus")

    def check_split(self, split: str | None) -> str:
        """`split`, or the first split when None; raises for an unknown split."""
        if split is None:
            return self.info.splits[0]
        if split not in self.info.splits:
            raise DatasetError(
                f"{self.info.name} has no split {split!r}; splits: {', '.join(self.info.splits)}"
            )
        return split

    def folder(self, data_dir_: Path | None = None) -> Path:
        """This set's folder under the data directory."""
        root = Path(data_dir_) if data_dir_ is not None else default_data_dir()
        folder = root / self.info.folder
        if not folder.is_dir():
            where = "" if root.is_dir() else " (that data directory does not exist)"
            raise DatasetError(
                f"{self.info.name}: folder {folder} not found{where}; {self.get_hint(data_dir_)}"
            )
        return folder

    def files(self, split: str, data_dir_: Path | None = None) -> tuple[Path, ...]:
        """The files holding `split`, checked to exist (a full upstream file in
        `full_files` is read instead of its subset when present)."""
        folder = self.folder(data_dir_)
        paths = []
        for name in self.split_files[split]:
            full = self.full_files.get(name)
            paths.append(folder / full if full and (folder / full).is_file() else folder / name)
        for p in paths:
            if not p.is_file():
                raise DatasetError(
                    f"{self.info.name} {split}: file {p} not found; {self.get_hint(data_dir_)}"
                )
        return tuple(paths)

    def get_hint(self, data_dir_: Path | None = None) -> str:
        """How to get this set: the `veracity datasets get` command line."""
        return get_command(self.info.name, data_dir_)

    # ----------------------------------------------------------------- for subclasses

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        """The raw records of `file` with their location (JSON Lines by default)."""
        return read_jsonl(file)

    def parse(self, raw: Any, loc: Loc, split: str) -> Example | Skip | None:
        """One raw record as an Example, or a Skip saying why the set drops it.

        None means the record belongs to another split kept in the same file (e.g.
        RumourEval's train and dev lines); such records are neither examples nor drops.
        """
        raise NotImplementedError

    # ----------------------------------------------------------------- internals

    def _examples(self, files: Iterable[Path], split: str, skipped: Counter[str]):
        for file in files:
            for loc, raw in self.records(file):
                try:
                    result = self.parse(raw, loc, split)
                except DatasetError:
                    raise
                except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
                    raise DatasetError(
                        f"{loc}: malformed {self.info.name} record: {_why(exc)}"
                    ) from exc
                if isinstance(result, Skip):
                    skipped[result.reason] += 1
                elif result is not None:
                    yield result

    def _user_file(self, path: str | Path) -> Path:
        p = Path(path).expanduser()
        if not p.is_file():
            raise DatasetError(f"{self.info.name}: file {p} not found")
        return p

    def example(self, raw_label: Any, loc: Loc, **fields: Any) -> Example:
        """An Example in this set's label space; the raw label is kept in metadata."""
        space = get_label_space(self.info.label_space)
        if not isinstance(raw_label, str):
            raise DatasetError(f"{loc}: label {raw_label!r} is not a string")
        label = space.find(raw_label)
        if label is None:
            raise DatasetError(
                f"{loc}: label {raw_label!r} is not in {space.name} {list(space.labels)}"
            )
        meta = fields.pop("metadata", {})
        meta = {"original_label": raw_label, **meta}
        return Example(label=label, label_space=space.name, metadata=meta, **fields)


# --------------------------------------------------------------------------- helpers


def get_command(name: str, data_dir_: str | Path | None = None) -> str:
    """The command that downloads dataset `name` (with its --data-dir when one is given)."""
    where = f" --data-dir {data_dir_}" if data_dir_ is not None else ""
    return f"get it with `veracity datasets get {name}{where}`"


def text_field(raw: Mapping[str, Any], key: str) -> str:
    """A required non-empty string field."""
    value = raw[key]
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"field {key!r} is empty or not text")
    return value.strip()


def optional_text(value: Any) -> str | None:
    """A string stripped of whitespace, or None when missing or blank."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"expected text, found {type(value).__name__} {value!r}")
    return value.strip() or None


def slug_to_name(slug: str | None) -> str | None:
    """'barack-obama' -> 'Barack Obama' (PolitiFact speaker slugs)."""
    if not slug or not slug.strip():
        return None
    return " ".join(w.capitalize() for w in re.split(r"[-_\s]+", slug.strip()) if w)


def bool_label(value: Any) -> Any:
    """JSON booleans as 'true'/'false' (some sets store labels as booleans)."""
    return ("true" if value else "false") if isinstance(value, bool) else value


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ()))
        return f"{where}: {err['msg']}" if where else err["msg"]
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
