"""LIAR and LIAR-PLUS: short political statements rated by PolitiFact (6 labels).

LIAR (folder ``liar/``): ``train.tsv`` and ``valid.tsv``, 14 tab-separated columns and
no header: id ("2635.json"), label, statement, subjects, speaker (a slug such as
"barack-obama"), job, state, party, five credit-history counts (barely-true, false,
half-true, mostly-true, pants-fire; they include the statement itself, so they leak the
label and are kept in metadata only), context (venue).
LIAR-PLUS (folder ``liar_plus/``): ``val2.jsonl`` = LIAR's validation set plus
PolitiFact's justification, as ``{id, json_file_id, label, claim, topics, originator,
title, party, justification}``; in this file ``party`` holds the state. The
justification is given as a gold evidence Document.

`corpus()` is LIAR's own fact-check archive: every statement of both splits whose text
occurs once in the set, as a short fact-check record (speaker, statement, venue, rating)
— the offline stand-in for searching fact-check sites. Each record sits on its own host
(``s<id>.liar-archive.invalid``) and each example names its own record's host in
``metadata["exclude_domains"]``, so the evaluation guards keep a claim's own rating out
of its evidence (statements that occur twice are left out of the archive for the same
reason).

Label maps for the papers' conventions live in `veracity.core.labels`: ``liar6_to_toe3``,
``liar6_to_tracer3`` (RADAR), ``liar6_to_binary``; load with ``labels=...`` to apply one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from veracity.core.types import Claim, Document
from veracity.datasets._common import (
    FACT_CHECK_SITES,
    BaseDataset,
    Loc,
    SplitFiles,
    optional_text,
    slug_to_name,
    text_field,
)
from veracity.datasets._readers import read_tsv_rows
from veracity.datasets.base import DatasetInfo, Example

_CREDIT = ("barely_true", "false", "half_true", "mostly_true", "pants_fire")


class LiarDataset(BaseDataset):
    """LIAR (Wang, 2017): train and valid splits."""

    info = DatasetInfo(
        name="liar",
        label_space="liar6",
        splits=("train", "valid"),
        input_kind="claim",
        folder="liar",
        description="LIAR: PolitiFact statements with speaker metadata; 6 labels",
        licence="research use only",
        has_corpus=True,
        exclude_domains=FACT_CHECK_SITES,
    )
    split_files: ClassVar[SplitFiles] = {"train": ("train.tsv",), "valid": ("valid.tsv",)}

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        return read_tsv_rows(file, 14)

    def parse(self, raw: list[str], loc: Loc, split: str) -> Example:
        sid, label, statement, subjects, speaker, job, state, party, *rest = raw
        credit, context = rest[:5], rest[5]
        if not statement.strip():
            raise ValueError("the statement is empty")
        ex_id = sid.strip().removesuffix(".json") or loc.default_id
        counts = {}
        for name, value in zip(_CREDIT, credit, strict=True):
            try:
                counts[name] = int(float(value))
            except ValueError:
                raise ValueError(f"credit count {name} is not a number: {value!r}") from None
        return self.example(
            label.strip(),
            loc,
            id=ex_id,
            input=Claim(
                id=ex_id,
                text=statement.strip(),
                speaker=slug_to_name(speaker),
                context=optional_text(context),
            ),
            metadata={
                "split": split,
                "subjects": [s for s in subjects.split(",") if s],
                "speaker_slug": speaker or None,
                "job": optional_text(job),
                "state": optional_text(state),
                "party": optional_text(party),
                "credit_history": counts,
                "exclude_domains": [archive_host(ex_id)],
            },
        )

    def corpus(self, data_dir: Path | None = None) -> Iterator[Document]:
        """The fact-check archive (see the module docstring), train then valid."""
        examples = [e for split in self.info.splits for e in self.load(split, data_dir)]
        counts = Counter(_norm(e.input.text) for e in examples)
        for e in examples:
            if counts[_norm(e.input.text)] == 1:
                yield archive_record(e)


class LiarPlusDataset(BaseDataset):
    """LIAR-PLUS (Alhindi et al., 2018): LIAR's validation split with justifications."""

    info = DatasetInfo(
        name="liar_plus",
        label_space="liar6",
        splits=("valid",),
        input_kind="claim",
        folder="liar_plus",
        description="LIAR-PLUS: LIAR validation statements with PolitiFact's justification "
        "as gold evidence",
        licence="CC0 1.0",
        exclude_domains=FACT_CHECK_SITES,
    )
    split_files: ClassVar[SplitFiles] = {"valid": ("val2.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        file_id = str(raw.get("json_file_id") or "").removesuffix(".json")
        ex_id = file_id or str(raw["id"])
        justification = optional_text(raw.get("justification"))
        evidence = []
        if justification:
            evidence.append(
                Document(
                    id=f"{ex_id}:justification",
                    text=justification,
                    title="PolitiFact justification",
                    source="liar_plus:justification",
                )
            )
        return self.example(
            raw["label"],
            loc,
            id=ex_id,
            input=Claim(
                id=ex_id,
                text=text_field(raw, "claim"),
                speaker=slug_to_name(raw.get("originator")),
            ),
            evidence=evidence,
            metadata={
                "split": split,
                "row": raw["id"],
                "subjects": list(raw.get("topics") or []),
                "speaker_slug": raw.get("originator") or None,
                "job": optional_text(raw.get("title")),
                "state": optional_text(raw.get("party")),  # the file's "party" is the state
            },
        )


def archive_host(example_id: str) -> str:
    """The host of a statement's record in the fact-check archive."""
    return f"s{example_id}.liar-archive.invalid"


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def archive_record(example: Example) -> Document:
    """A LIAR statement as a fact-check record with its rating."""
    claim = example.input
    assert isinstance(claim, Claim)
    who = claim.speaker or "Someone"
    where = f" ({claim.context})" if claim.context else ""
    subjects = ", ".join(example.metadata.get("subjects") or [])
    text = f'{who} said{where}: "{claim.text}" Rating: {example.metadata["original_label"]}.'
    if subjects:
        text += f" Subjects: {subjects}."
    return Document(
        id=f"liar:{example.id}",
        title=f"Fact-check record: {who}",
        text=text,
        url=f"https://{archive_host(example.id)}/",
        source="liar-archive",
        metadata={"liar_id": example.id, "split": example.metadata.get("split")},
    )


LIAR = LiarDataset()
LIAR_PLUS = LiarPlusDataset()
