"""FEVEROUS-S: FEVEROUS dev claims that need only sentence evidence (ProgramFC release).

File (folder ``feverous_s/``): ``dev.json``, a JSON array of
``{id, claim, label (supports/refutes), challenge, evidence}`` where ``evidence`` is one
string of lines ``"<page title>\\t<sentence with [[target|anchor]] links>"``. Each line
becomes a gold evidence Document (links reduced to their anchor text, page title kept).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

from veracity.core.types import Claim, Document
from veracity.datasets._common import BaseDataset, Loc, SplitFiles, text_field
from veracity.datasets._readers import read_json_array
from veracity.datasets.base import DatasetInfo, Example

_LINK = re.compile(r"\[\[([^\]|]*)\|([^\]]*)\]\]|\[\[([^\]]*)\]\]")


def strip_wiki_links(text: str) -> str:
    """'[[Russell_County,_Alabama|Russell County]]' -> 'Russell County'."""
    return _LINK.sub(lambda m: m.group(2) if m.group(2) is not None else m.group(3), text)


def evidence_documents(ex_id: str, evidence: str) -> list[Document]:
    docs = []
    for k, line in enumerate(x for x in evidence.split("\n") if x.strip()):
        title, sep, sentence = line.partition("\t")
        if not sep or not sentence.strip():
            raise ValueError(f"evidence line {k + 1} is not '<title>\\t<sentence>'")
        docs.append(
            Document(
                id=f"{ex_id}:e{k}",
                title=title.strip(),
                text=strip_wiki_links(sentence.strip()),
                source="feverous:evidence",
                metadata={"raw": sentence.strip()},
            )
        )
    return docs


class FeverousDataset(BaseDataset):
    """FEVEROUS-S dev with evidence text."""

    info = DatasetInfo(
        name="feverous_s",
        label_space="supported_refuted",
        splits=("dev",),
        input_kind="claim",
        folder="feverous_s",
        description="FEVEROUS-S dev (2,962 claims) with Wikipedia evidence sentences",
        licence="MIT (ProgramFC release)",
    )
    split_files: ClassVar[SplitFiles] = {"dev": ("dev.json",)}

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        return read_json_array(file)

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        ex_id = str(raw["id"])
        return self.example(
            raw["label"],
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text_field(raw, "claim")),
            evidence=evidence_documents(ex_id, str(raw.get("evidence") or "")),
            metadata={"split": split, "challenge": raw.get("challenge")},
        )


FEVEROUS_S = FeverousDataset()
