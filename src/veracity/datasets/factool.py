"""FacTool's annotated sets: knowledge QA and scientific citations.

Folder ``factool/``:
- ``knowledge_qa.jsonl``: 50 ChatGPT answers ``{prompt, response, claims: [{claim,
  label (bool)}], label (bool), entry_point}``. Dataset ``factool_qa`` yields the 233
  claims (ids ``knowledge_qa:<line>.<k>``, the answer's prompt in metadata);
  ``factool_qa_responses`` yields the 50 whole answers, ``factool_qa_documents`` the
  same answers as documents (input kind ``document``) with their annotated claims in
  ``metadata["gold_claims"]`` for `veracity eval`'s document task (FacTool annotates no
  check-worthiness: every claim's category is None).
- ``scientific.jsonl``: 100 answers citing papers, ``claims: [{paper_title,
  paper_author(s), paper_pub_year, label}]``. Dataset ``factool_scientific`` yields the
  186 citations, each written as one checkable sentence ("The paper "T" by A was
  published in Y."); the label says whether that citation is real.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from veracity.core.types import Claim
from veracity.datasets._common import BaseDataset, Loc, SplitFiles, bool_label, text_field
from veracity.datasets._readers import read_jsonl
from veracity.datasets.base import DatasetError, DatasetInfo, Example
from veracity.datasets.factcheck_bench import answer_claim, gold_claim

_LICENCE = "Apache-2.0"


def _claims(file: Path) -> Iterator[tuple[Loc, Any]]:
    """One record per claim of each answer: (answer, claim index, claim)."""
    for loc, raw in read_jsonl(file):
        claims = raw.get("claims") if isinstance(raw, dict) else None
        if not isinstance(claims, list):
            raise DatasetError(f"{loc}: 'claims' must be a list")
        for k, claim in enumerate(claims):
            yield loc, (raw, k, claim)


class FactoolQAClaims(BaseDataset):
    """FacTool knowledge-QA, claim by claim (233 claims)."""

    info = DatasetInfo(
        name="factool_qa",
        label_space="true_false",
        splits=("all",),
        input_kind="claim",
        folder="factool",
        description="FacTool-QA: 233 claims from 50 ChatGPT knowledge-QA answers",
        licence=_LICENCE,
    )
    split_files: ClassVar[SplitFiles] = {"all": ("knowledge_qa.jsonl",)}

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        return _claims(file)

    def parse(self, raw: tuple[dict[str, Any], int, dict[str, Any]], loc: Loc, split: str):
        answer, k, claim = raw
        ex_id = f"{loc.default_id}.{k}"
        return self.example(
            bool_label(claim["label"]),
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text_field(claim, "claim")),
            metadata={"split": split, "prompt": answer.get("prompt"), "answer_line": loc.line},
        )


class FactoolQAResponses(BaseDataset):
    """FacTool knowledge-QA, whole answers (50)."""

    info = DatasetInfo(
        name="factool_qa_responses",
        label_space="true_false",
        splits=("all",),
        input_kind="claim",
        folder="factool",
        description="FacTool-QA: 50 ChatGPT knowledge-QA answers judged as a whole",
        licence=_LICENCE,
    )
    split_files: ClassVar[SplitFiles] = {"all": ("knowledge_qa.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        ex_id = loc.default_id
        return self.example(
            bool_label(raw["label"]),
            loc,
            id=ex_id,
            input=answer_claim(ex_id, text_field(raw, "response"), raw.get("prompt")),
            metadata={
                "split": split,
                "prompt": raw.get("prompt"),
                "claims": [c.get("claim") for c in raw.get("claims") or []],
                "claim_labels": [bool_label(c.get("label")) for c in raw.get("claims") or []],
            },
        )


class FactoolQADocuments(FactoolQAResponses):
    """FacTool knowledge-QA answers as documents, each with its annotated claims."""

    info = DatasetInfo(
        name="factool_qa_documents",
        label_space="true_false",
        splits=("all",),
        input_kind="document",
        folder="factool",
        description="FacTool-QA: 50 ChatGPT answers as documents with their 233 annotated "
        "claims (factuality only) for the document task",
        licence=_LICENCE,
    )

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        example = super().parse(raw, loc, split)
        claims = raw.get("claims") or []
        example.metadata["gold_claims"] = [
            gold_claim(text_field(c, "claim"), None, c.get("label")) for c in claims
        ]
        return example


class FactoolScientific(BaseDataset):
    """FacTool scientific: does a cited paper exist as cited (186 citations)."""

    info = DatasetInfo(
        name="factool_scientific",
        label_space="true_false",
        splits=("all",),
        input_kind="claim",
        folder="factool",
        description="FacTool scientific: 186 paper citations from 100 ChatGPT answers",
        licence=_LICENCE,
    )
    split_files: ClassVar[SplitFiles] = {"all": ("scientific.jsonl",)}

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        return _claims(file)

    def parse(self, raw: tuple[dict[str, Any], int, dict[str, Any]], loc: Loc, split: str):
        answer, k, cite = raw
        ex_id = f"{loc.default_id}.{k}"
        title = text_field(cite, "paper_title")
        authors = str(cite.get("paper_author(s)") or "").strip()
        year = str(cite.get("paper_pub_year") or "").strip()
        text = f'The paper "{title}"' + (f" by {authors}" if authors else "")
        text += f" was published in {year}." if year else " exists."
        return self.example(
            bool_label(cite["label"]),
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text, context="a citation in an AI assistant's answer"),
            metadata={
                "split": split,
                "paper_title": title,
                "authors": authors,
                "year": year,
                "prompt": answer.get("prompt"),
            },
        )


FACTOOL_QA = FactoolQAClaims()
FACTOOL_QA_RESPONSES = FactoolQAResponses()
FACTOOL_SCIENTIFIC = FactoolScientific()
FACTOOL_QA_DOCUMENTS = FactoolQADocuments()
