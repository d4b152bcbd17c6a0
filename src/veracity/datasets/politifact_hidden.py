"""PolitiFact-Hidden (TRACER): political claims rated TRUE / HALF-TRUE / FALSE.

File (folder ``politifact_hidden/``): ``test_claims_first1000.jsonl``, the first 1,000
test claims as ``{id, claim, label}``. The file carries no dates, speakers or the gold
evidence the benchmark was published with (nor the 41,952-document corpus), so examples
are bare claims. Label space ``true_half_false``, the space RADAR reports in.
"""

from __future__ import annotations

from typing import Any, ClassVar

from veracity.core.types import Claim
from veracity.datasets._common import FACT_CHECK_SITES, BaseDataset, Loc, SplitFiles, text_field
from veracity.datasets.base import DatasetInfo, Example


class PolitiFactHiddenDataset(BaseDataset):
    """PolitiFact-Hidden test claims (first 1,000)."""

    info = DatasetInfo(
        name="politifact_hidden",
        label_space="true_half_false",
        splits=("test",),
        input_kind="claim",
        folder="politifact_hidden",
        description="PolitiFact-Hidden (TRACER) test, first 1,000 claims; TRUE / HALF-TRUE / FALSE",
        licence="not stated",
        exclude_domains=FACT_CHECK_SITES,
    )
    split_files: ClassVar[SplitFiles] = {"test": ("test_claims_first1000.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        ex_id = str(raw.get("id") or loc.default_id)
        return self.example(
            raw["label"],
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text_field(raw, "claim")),
            metadata={"split": split},
        )


POLITIFACT_HIDDEN = PolitiFactHiddenDataset()
