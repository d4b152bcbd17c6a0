"""The exact claim subsets MERMAID reports on (folder ``mermaid_eval_sets/sets/``).

- ``factool_qa_data.jsonl`` (233), ``bingcheck_data.jsonl`` (142),
  ``factcheckbench_data.jsonl`` (631): ``{claim, label: "true"/"false"}`` (true_false).
  Note: 5 FacTool-QA labels here differ from FacTool's and FIRE's files (false there,
  true here); we load the file as it is.
- ``HoVerDev_{two,three,four}_hop_df_new.jsonl`` (100 each): HoVer records
  (supported_refuted).
- ``SciFact-Open_df_new.jsonl`` (100): ``{uid, claim, label: SUPPORT / CONTRADICT}``,
  renamed explicitly to SUPPORTED / REFUTED (supported_refuted).
The recorded GPT-4o traces beside the sets are replay material for MERMAID, not a
dataset, and are not read here.
"""

from __future__ import annotations

from typing import Any

from veracity.datasets._common import BaseDataset, Loc
from veracity.datasets.base import DatasetInfo, Example
from veracity.datasets.fire import ClaimLabelDataset
from veracity.datasets.hover import hover_example

_FOLDER = "mermaid_eval_sets"


class MermaidHoverDataset(BaseDataset):
    """One of MERMAID's 100-claim HoVer subsets (2, 3 or 4 hops)."""

    def __init__(self, hops: int) -> None:
        word = {2: "two", 3: "three", 4: "four"}[hops]
        self.info = DatasetInfo(
            name=f"mermaid_hover_{hops}hop",
            label_space="supported_refuted",
            splits=("all",),
            input_kind="claim",
            folder=_FOLDER,
            description=f"MERMAID's HoVer dev subset: 100 {hops}-hop claims",
            licence="not stated",
        )
        self.split_files = {"all": (f"sets/HoVerDev_{word}_hop_df_new.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        return hover_example(self, raw, loc, split)


def _claims(name: str, file: str, n: int, what: str, space: str = "true_false", **kw):
    return ClaimLabelDataset(
        name, _FOLDER, f"sets/{file}", space, f"MERMAID's {what} set ({n} claims)", **kw
    )


MERMAID_FACTOOL_QA = _claims("mermaid_factool_qa", "factool_qa_data.jsonl", 233, "FacTool-QA")
MERMAID_BINGCHECK = _claims("mermaid_bingcheck", "bingcheck_data.jsonl", 142, "BingCheck")
MERMAID_FACTCHECKBENCH = _claims(
    "mermaid_factcheckbench", "factcheckbench_data.jsonl", 631, "FactCheck-Bench"
)
MERMAID_SCIFACT = _claims(
    "mermaid_scifact",
    "SciFact-Open_df_new.jsonl",
    100,
    "SciFact (SUPPORT/CONTRADICT claims)",
    "supported_refuted",
    label_table={"SUPPORT": "SUPPORTED", "CONTRADICT": "REFUTED"},
)
MERMAID_HOVER_2HOP = MermaidHoverDataset(2)
MERMAID_HOVER_3HOP = MermaidHoverDataset(3)
MERMAID_HOVER_4HOP = MermaidHoverDataset(4)
