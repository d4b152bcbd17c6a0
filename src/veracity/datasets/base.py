"""The dataset contract: every benchmark loader yields `Example`s in a declared label space."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.errors import DatasetError  # noqa: F401  (re-exported)
from veracity.core.types import Article, Claim, Document, Post


class Example(BaseModel):
    """One benchmark item.

    Attributes:
        id: stable id within the dataset (used to resume runs).
        input: what a method checks.
        label: the gold label, in `label_space`.
        label_space: name of a registered label space.
        evidence: gold evidence documents, where the set has them.
        evidence_ids: ids of gold documents in the set's corpus (e.g. SciFact doc ids).
        metadata: anything else (original label, speaker, split, hop count, ...).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    input: Annotated[Claim | Article | Post, Field(discriminator="kind")]
    label: str
    label_space: str
    evidence: list[Document] = Field(default_factory=list)
    evidence_ids: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


class DatasetInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    label_space: str
    splits: tuple[str, ...]
    input_kind: str  # claim, article or post
    folder: str  # sub-folder of the data directory
    description: str = ""
    licence: str = ""
    has_corpus: bool = False
    exclude_domains: tuple[str, ...] = ()  # leakage guard for sets built from fact-check sites


@runtime_checkable
class Dataset(Protocol):
    info: DatasetInfo

    def load(self, split: str | None = None, data_dir: Path | None = None) -> list[Example]:
        """All examples of `split` (default: the first split)."""
        ...

    def corpus(self, data_dir: Path | None = None) -> Iterator[Document]:
        """The set's retrieval corpus; raises DatasetError when it has none."""
        ...
