"""Benchmark loaders: every set in the shared data directory, plus your own files.

    from veracity.datasets import load_dataset, list_datasets
    examples = load_dataset("liar", split="valid", labels="true_uncertain_false")

Each dataset is an object with `info` (a `DatasetInfo`), `load(split, data_dir, *,
limit, labels, path)` and `corpus(data_dir)`, registered by name in the entry-point
group ``veracity.datasets`` (a plugin registers its own sets the same way: the entry
point names a dataset object). `load` returns an `ExampleList` (a list of `Example`
with `skipped`: records the set drops on purpose, counted per reason).
For any other file, `GenericDataset` / `load_file` map columns to examples.
"""

from __future__ import annotations

from pathlib import Path

from veracity.core import registry
from veracity.core.labels import LabelMap
from veracity.datasets._common import FACT_CHECK_SITES, BaseDataset, ExampleList
from veracity.datasets.base import Dataset, DatasetError, DatasetInfo, Example
from veracity.datasets.generic import ColumnSpec, GenericDataset, GenericSpec, load_file, row_input

__all__ = [
    "FACT_CHECK_SITES",
    "BaseDataset",
    "ColumnSpec",
    "Dataset",
    "DatasetError",
    "DatasetInfo",
    "Example",
    "ExampleList",
    "GenericDataset",
    "GenericSpec",
    "get_dataset",
    "list_datasets",
    "load_dataset",
    "load_file",
    "row_input",
]


def get_dataset(name: str) -> Dataset:
    """The registered dataset called `name`.

    Raises:
        DatasetError: no dataset of that name is registered.
    """
    try:
        obj = registry.datasets.get(name)
    except registry.RegistryError as exc:
        raise DatasetError(str(exc)) from None
    if not isinstance(obj, Dataset) and callable(obj):
        obj = obj()  # an entry point may name a class or factory instead of an object
    if not isinstance(obj, Dataset):
        raise DatasetError(f"dataset {name!r} is registered as {obj!r}, not a dataset")
    return obj


def list_datasets(*, installed_only: bool = False) -> list[DatasetInfo]:
    """Info of every registered dataset, sorted by name.

    Args:
        installed_only: only those registered through entry points, leaving out datasets
            registered at run time (e.g. by tests or notebooks).
    """
    names = registry.datasets.entry_point_names() if installed_only else registry.datasets.names()
    return [get_dataset(name).info for name in names]


def load_dataset(
    name: str,
    split: str | None = None,
    data_dir: str | Path | None = None,
    limit: int | None = None,
    *,
    labels: str | LabelMap | None = None,
    path: str | Path | None = None,
) -> ExampleList:
    """Load `split` of dataset `name` (see `BaseDataset.load` for the arguments).

    Raises:
        DatasetError: unknown dataset, split or label space, missing files, or a
            malformed record (named by file and line).
    """
    ds = get_dataset(name)
    root = Path(data_dir) if data_dir is not None else None
    if isinstance(ds, BaseDataset):
        return ds.load(split, root, limit=limit, labels=labels, path=path)
    if labels is not None or path is not None:
        raise DatasetError(f"dataset {name!r} is a plugin that does not take labels= or path=")
    if limit is not None and limit < 1:
        raise DatasetError(f"limit must be a positive number, got {limit}")
    examples = list(ds.load(split, root))
    split = split or ds.info.splits[0]
    return ExampleList(examples[:limit] if limit else examples, dataset=name, split=split)
