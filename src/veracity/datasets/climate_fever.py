"""Climate-FEVER: climate claims, each with five Wikipedia evidence sentences.

File (folder ``climate_fever/``): ``climate-fever.jsonl`` with ``{claim_id, claim,
claim_label, evidences: [{evidence_id ("Article:line"), evidence_label, article,
evidence, entropy, votes}]}``. Four claim labels (SUPPORTS, REFUTES, NOT_ENOUGH_INFO,
DISPUTED) in the ``climate_fever`` space; no paper we implement maps them, so no map is
registered. Each evidence sentence is a gold Document with its own label in metadata.
"""

from __future__ import annotations

from typing import Any, ClassVar

from veracity.core.types import Claim, Document
from veracity.datasets._common import BaseDataset, Loc, SplitFiles, text_field
from veracity.datasets.base import DatasetInfo, Example


class ClimateFeverDataset(BaseDataset):
    """Climate-FEVER (1,535 claims, one file)."""

    info = DatasetInfo(
        name="climate_fever",
        label_space="climate_fever",
        splits=("all",),
        input_kind="claim",
        folder="climate_fever",
        description="Climate-FEVER: 1,535 climate claims with 5 Wikipedia sentences each",
        licence="not stated in the data folder",
    )
    split_files: ClassVar[SplitFiles] = {"all": ("climate-fever.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        ex_id = str(raw["claim_id"])
        evidence = [
            Document(
                id=str(e["evidence_id"]),
                title=str(e.get("article") or ""),
                text=text_field(e, "evidence"),
                source="wikipedia",
                metadata={
                    "label": e["evidence_label"],
                    "entropy": e.get("entropy"),
                    "votes": [v for v in e.get("votes") or [] if v is not None],
                },
            )
            for e in raw["evidences"]
        ]
        return self.example(
            raw["claim_label"],
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text_field(raw, "claim")),
            evidence=evidence,
            evidence_ids=list(dict.fromkeys(d.id for d in evidence)),
            metadata={"split": split},
        )


CLIMATE_FEVER = ClimateFeverDataset()
