"""HoVer: multi-hop claims over Wikipedia (2 to 4 hops).

File (folder ``hover/``): the release's ``hover_dev_release_v1.1.json`` (4,000 claims),
else ``hover_dev_first3000.json`` (its first 3,000), a JSON array of
``{uid, claim, supporting_facts: [[title, sentence_index]], label, num_hops, hpqa_id}``.
Labels SUPPORTED / NOT_SUPPORTED map onto ``supported_refuted`` (NOT_SUPPORTED ->
REFUTED, the convention MERMAID reports under). The Wikipedia text is not available
offline: `evidence_ids` are the supporting page titles and the (title, sentence) pairs
are in ``metadata["supporting_facts"]``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from veracity.core.errors import DatasetError
from veracity.core.types import Claim
from veracity.datasets._common import BaseDataset, ExampleList, Loc, SplitFiles, text_field
from veracity.datasets._readers import read_json_array
from veracity.datasets.base import DatasetInfo, Example


def hover_example(ds: BaseDataset, raw: dict[str, Any], loc: Loc, split: str) -> Example:
    """A HoVer record (also the format of MERMAID's HoVer subsets)."""
    facts = [(str(t), int(i)) for t, i in raw["supporting_facts"]]
    titles = list(dict.fromkeys(t for t, _ in facts))
    uid = str(raw["uid"])
    return ds.example(
        raw["label"],
        loc,
        id=uid,
        input=Claim(id=uid, text=text_field(raw, "claim")),
        evidence_ids=titles,
        metadata={
            "split": split,
            "num_hops": int(raw["num_hops"]),
            "supporting_facts": [list(f) for f in facts],
            "hpqa_id": raw.get("hpqa_id"),
        },
    )


class HoverDataset(BaseDataset):
    """HoVer dev: the release's ``hover_dev_release_v1.1.json``, else its first 3,000."""

    info = DatasetInfo(
        name="hover",
        label_space="supported_refuted",
        splits=("dev",),
        input_kind="claim",
        folder="hover",
        description="HoVer dev, multi-hop Wikipedia claims (2-4 hops); no Wikipedia text offline",
        licence="MIT (repository)",
    )
    split_files: ClassVar[SplitFiles] = {"dev": ("hover_dev_first3000.json",)}
    # the whole dev set as released (4,000 claims), read instead when present
    full_files: ClassVar[dict[str, str]] = {
        "hover_dev_first3000.json": "hover_dev_release_v1.1.json"
    }

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        return read_json_array(file)

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        return hover_example(self, raw, loc, split)

    def load(
        self,
        split: str | None = None,
        data_dir: Path | None = None,
        *,
        num_hops: int | None = None,
        limit: int | None = None,
        **options: Any,
    ) -> ExampleList:
        """The split's claims; with `num_hops` (2, 3 or 4) only those of that many hops
        (``dataset_options: {num_hops: 2}``, as FOLK and MERMAID sample per hop count).
        `limit` counts the claims kept; the other options are `BaseDataset.load`'s."""
        if num_hops is not None and num_hops not in (2, 3, 4):
            raise DatasetError(f"hover: num_hops must be 2, 3 or 4, not {num_hops!r}")
        if num_hops is None:
            return super().load(split, data_dir, limit=limit, **options)
        examples = super().load(split, data_dir, **options)
        kept = [e for e in examples if e.metadata.get("num_hops") == num_hops]
        return ExampleList(
            kept[:limit] if limit is not None else kept,
            dataset=examples.dataset,
            split=examples.split,
            files=examples.files,
            skipped=examples.skipped,
        )


HOVER = HoverDataset()
