"""Fake-news article sets built from FakeNewsNet: PolitiFact++, SheepDog, GossipCop.

PolitiFact++ (folder ``politifact_plusplus/``): ``HF.json``, ``HR.json``, ``MF.json``,
``MR.json`` (human-/machine-written fake/real), each a JSON object keyed "0", "1", ...
of ``{id (FakeNewsNet id), title, description, text}``. Label real/fake; who wrote it
is ``metadata["origin"]``. "Splits" here are subsets: ``all``, ``human`` (HF+HR),
``machine`` (MF+MR). FakeNewsNet ids repeat across files (and 3 times within MR), so
example ids are ``<file>:<key>``.
SheepDog PolitiFact (folder ``sheepdog_politifact/``): ``politifact_train.jsonl`` with
``{idx, label (0 real / 1 fake), label_name, text}``; no titles.
GossipCop subset (folder ``gossipcop_text_subset/``): ``gossipcop_first2000.csv`` with
columns ``id, title, content, label``; rows whose content is empty (56 in this file)
have nothing to check and are dropped (counted in `skipped`).
No set carries publication dates.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from veracity.core.types import Article
from veracity.datasets._common import (
    FACT_CHECK_SITES,
    BaseDataset,
    Loc,
    Skip,
    SplitFiles,
    optional_text,
    text_field,
)
from veracity.datasets._readers import read_csv, read_json
from veracity.datasets.base import DatasetError, DatasetInfo, Example

_PARTS = {"HF": ("human", "fake"), "HR": ("human", "real"), "MF": ("machine", "fake"),
          "MR": ("machine", "real")}  # fmt: skip
NEWS_EXCLUDE = (*FACT_CHECK_SITES, "gossipcop.com")
_NUMERIC = {0: "real", 1: "fake"}  # SheepDog label codes


class PolitiFactPlusPlusDataset(BaseDataset):
    """PolitiFact++: 520 articles, human- and machine-written, real and fake."""

    info = DatasetInfo(
        name="politifact_plusplus",
        label_space="real_fake",
        splits=("all", "human", "machine"),
        input_kind="article",
        folder="politifact_plusplus",
        description="PolitiFact++: 97 HF, 194 HR, 97 MF, 132 MR news articles",
        licence="not stated",
        exclude_domains=NEWS_EXCLUDE,
    )
    split_files: ClassVar[SplitFiles] = {
        "all": ("HF.json", "HR.json", "MF.json", "MR.json"),
        "human": ("HF.json", "HR.json"),
        "machine": ("MF.json", "MR.json"),
    }

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        data = read_json(file)
        if not isinstance(data, dict):
            raise DatasetError(f"{file}: expected a JSON object keyed by row number")
        for n, (key, item) in enumerate(data.items(), 1):
            yield Loc(file, n, "record"), (key, item)

    def parse(self, raw: tuple[str, dict[str, Any]], loc: Loc, split: str) -> Example:
        key, item = raw
        part = loc.file.stem.upper()
        if part not in _PARTS:
            origin, label = None, item.get("label")
            if label is None:
                raise ValueError(
                    f"file {loc.file.name} is not HF/HR/MF/MR.json and the record has no 'label'"
                )
        else:
            origin, label = _PARTS[part]
        ex_id = f"{loc.file.stem}:{key}"
        return self.example(
            label,
            loc,
            id=ex_id,
            input=Article(
                id=ex_id,
                title=optional_text(item.get("title")) or "",
                body=text_field(item, "text"),
                metadata={"description": optional_text(item.get("description"))},
            ),
            metadata={"split": split, "origin": origin, "fakenewsnet_id": item.get("id")},
        )


class SheepDogPolitiFactDataset(BaseDataset):
    """SheepDog's PolitiFact articles (FakeNewsNet), train split: 180 real, 180 fake."""

    info = DatasetInfo(
        name="sheepdog_politifact",
        label_space="real_fake",
        splits=("train",),
        input_kind="article",
        folder="sheepdog_politifact",
        description="SheepDog PolitiFact train: 360 news articles, real/fake",
        licence="not stated",
        exclude_domains=NEWS_EXCLUDE,
    )
    split_files: ClassVar[SplitFiles] = {"train": ("politifact_train.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        code, name = raw["label"], raw.get("label_name")
        if code not in _NUMERIC:
            raise ValueError(f"label {code!r} is not 0 (real) or 1 (fake)")
        label = _NUMERIC[code]
        if name is not None and name != label:
            raise ValueError(f"label {code} and label_name {name!r} disagree")
        ex_id = str(raw.get("idx", loc.default_id))
        return self.example(
            label,
            loc,
            id=ex_id,
            input=Article(id=ex_id, body=text_field(raw, "text")),
            metadata={"split": split},
        )


class GossipCopDataset(BaseDataset):
    """GossipCop article texts, first 2,000 rows of the source CSV."""

    info = DatasetInfo(
        name="gossipcop",
        label_space="real_fake",
        splits=("all",),
        input_kind="article",
        folder="gossipcop_text_subset",
        description="GossipCop subset: first 2,000 entertainment news rows, real/fake",
        licence="not stated",
        exclude_domains=NEWS_EXCLUDE,
    )
    split_files: ClassVar[SplitFiles] = {"all": ("gossipcop_first2000.csv",)}

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        return read_csv(file)

    def parse(self, raw: dict[str, str], loc: Loc, split: str) -> Example | Skip:
        for column in ("id", "title", "content", "label"):
            if column not in raw:
                raise KeyError(column)
        if not raw["content"].strip():
            return Skip("empty article content")
        ex_id = raw["id"].strip() or loc.default_id
        return self.example(
            raw["label"].strip(),
            loc,
            id=ex_id,
            input=Article(id=ex_id, title=raw["title"].strip(), body=raw["content"].strip()),
            metadata={"split": split},
        )


POLITIFACT_PLUSPLUS = PolitiFactPlusPlusDataset()
SHEEPDOG_POLITIFACT = SheepDogPolitiFactDataset()
GOSSIPCOP = GossipCopDataset()
