"""FIRE's claim sets: ``{claim, label}`` JSON Lines, one folder per set.

Folder ``fire_claimsets/``: ``bingcheck/data.jsonl`` (142; the set FIRE and MERMAID
report on), ``bingcheck/data_full.jsonl`` (3,623 binary), ``bingcheck/bingcheck.jsonl``
(3,840 with BingCheck's 4 labels: supported, partially supported, not supported,
refuted), ``factcheckbench/data.jsonl`` (631), ``factool_qa/data.jsonl`` (233) and
``felm_wk/data.jsonl`` (184; whole answers rather than atomic claims, with JSON booleans
as labels where the other files use the strings "true"/"false"). No ids: ids are
``<file stem>:<line>``.
"""

from __future__ import annotations

from typing import Any

from veracity.core.types import Claim
from veracity.datasets._common import BaseDataset, Loc, bool_label, text_field
from veracity.datasets.base import DatasetInfo, Example


class ClaimLabelDataset(BaseDataset):
    """A JSON Lines file of ``{claim, label}`` records (FIRE's and MERMAID's format)."""

    def __init__(
        self,
        name: str,
        folder: str,
        file: str,
        label_space: str,
        description: str,
        licence: str = "not stated",
        label_table: dict[str, str] | None = None,
    ) -> None:
        self.info = DatasetInfo(
            name=name,
            label_space=label_space,
            splits=("all",),
            input_kind="claim",
            folder=folder,
            description=description,
            licence=licence,
        )
        self.split_files = {"all": (file,)}
        self.label_table = label_table or {}  # explicit raw -> space label renames

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        ex_id = str(raw.get("uid") if raw.get("uid") is not None else loc.default_id)
        label = bool_label(raw["label"])
        if isinstance(label, str) and label.strip() in self.label_table:
            label = self.label_table[label.strip()]
        ex = self.example(
            label,
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text_field(raw, "claim")),
            metadata={"split": split},
        )
        ex.metadata["original_label"] = raw["label"]
        return ex


def _fire(name: str, file: str, n: str, what: str, space: str = "true_false") -> ClaimLabelDataset:
    return ClaimLabelDataset(
        name, "fire_claimsets", file, space, f"FIRE claim set: {what} ({n})", "not stated"
    )


FIRE_BINGCHECK = _fire("fire_bingcheck", "bingcheck/data.jsonl", "142", "BingCheck")
FIRE_BINGCHECK_FULL = _fire(
    "fire_bingcheck_full", "bingcheck/data_full.jsonl", "3,623", "BingCheck, all binary claims"
)
FIRE_BINGCHECK4 = _fire(
    "fire_bingcheck4", "bingcheck/bingcheck.jsonl", "3,840", "BingCheck, 4 labels", "bingcheck4"
)
FIRE_FACTCHECKBENCH = _fire(
    "fire_factcheckbench", "factcheckbench/data.jsonl", "631", "FactCheck-Bench, NEE dropped"
)
FIRE_FACTOOL_QA = _fire("fire_factool_qa", "factool_qa/data.jsonl", "233", "FacTool-QA")
FIRE_FELM_WK = _fire("fire_felm_wk", "felm_wk/data.jsonl", "184", "FELM world knowledge answers")
