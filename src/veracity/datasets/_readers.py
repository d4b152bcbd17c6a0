"""The shared record readers (`veracity.core.readers`), raising `DatasetError`."""

from __future__ import annotations

from functools import partial

from veracity.core import readers
from veracity.core.errors import DatasetError
from veracity.core.readers import Loc

read_jsonl = partial(readers.read_jsonl, error=DatasetError)
read_json = partial(readers.read_json, error=DatasetError)
read_json_array = partial(readers.read_json_array, error=DatasetError)
read_csv = partial(readers.read_csv, error=DatasetError)
read_tsv_rows = partial(readers.read_tsv_rows, error=DatasetError)

__all__ = ["Loc", "read_csv", "read_json", "read_json_array", "read_jsonl", "read_tsv_rows"]
