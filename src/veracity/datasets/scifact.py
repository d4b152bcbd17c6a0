"""SciFact: scientific claims checked against a corpus of paper abstracts.

Files (folder ``scifact/``): ``claims_train.jsonl`` with
``{id, claim, evidence: {doc_id: [{sentences, label}]}, cited_doc_ids}`` and
``corpus.jsonl`` with ``{doc_id, title, abstract: [sentences], structured}``.
A claim's label is the label of its evidence sets (SUPPORT or CONTRADICT; SciFact never
mixes them within a claim, and a claim that does is reported as malformed); a claim with
no evidence is NEI. Labels map onto ``supported_refuted_nei``.
Gold evidence: `evidence_ids` are the abstracts with rationales, and `evidence` holds
one Document per rationale (its sentences, taken from the corpus).
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from veracity.core.types import Claim, Document
from veracity.datasets._common import BaseDataset, Loc, SplitFiles, text_field
from veracity.datasets._readers import read_jsonl
from veracity.datasets.base import DatasetError, DatasetInfo, Example

SOURCE = "local:scifact"


def corpus_document(raw: dict[str, Any], loc: Loc) -> Document:
    """One corpus line as a Document (id = doc_id, text = the abstract's sentences)."""
    sentences = raw["abstract"]
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise DatasetError(f"{loc}: 'abstract' must be a list of sentences")
    return Document(
        id=str(raw["doc_id"]),
        title=str(raw.get("title") or ""),
        text=" ".join(s.strip() for s in sentences),
        source=SOURCE,
        metadata={"sentences": sentences, "structured": bool(raw.get("structured", False))},
    )


@lru_cache(maxsize=4)
def _corpus_index(path: Path, mtime: float) -> dict[str, Document]:
    out: dict[str, Document] = {}
    for loc, raw in read_jsonl(path):
        try:
            doc = corpus_document(raw, loc)
        except KeyError as exc:
            raise DatasetError(f"{loc}: missing field {exc.args[0]!r}") from None
        out[doc.id] = doc
    return out


def corpus_index(path: Path) -> dict[str, Document]:
    """doc_id -> Document for a SciFact corpus file (cached while the file is unchanged)."""
    return _corpus_index(path, path.stat().st_mtime)


class SciFactDataset(BaseDataset):
    """SciFact claims (train split here), with the abstract corpus."""

    info = DatasetInfo(
        name="scifact",
        label_space="supported_refuted_nei",
        splits=("train",),
        input_kind="claim",
        folder="scifact",
        description="SciFact: 809 expert-written scientific claims (train) against 5,183 "
        "abstracts; SUPPORT / CONTRADICT / NEI",
        licence="claims CC BY 4.0; abstracts ODC-By 1.0",
        has_corpus=True,
    )
    split_files: ClassVar[SplitFiles] = {"train": ("claims_train.jsonl",)}
    corpus_file = "corpus.jsonl"

    def __init__(self, with_evidence_text: bool = True) -> None:
        self.with_evidence_text = with_evidence_text
        self._corpus_path: Path | None = None

    def files(self, split: str, data_dir_: Path | None = None) -> tuple[Path, ...]:
        paths = super().files(split, data_dir_)
        self._corpus_path = self.folder(data_dir_) / self.corpus_file
        return paths

    def corpus(self, data_dir: Path | None = None) -> Iterator[Document]:
        """The 5,183 abstracts, `doc_id` as Document.id, sentences in metadata."""
        path = self.folder(data_dir) / self.corpus_file
        if not path.is_file():
            raise DatasetError(f"scifact: corpus file {path} not found; {self.get_hint(data_dir)}")
        yield from corpus_index(path).values()

    def parse(self, raw: Any, loc: Loc, split: str) -> Example:
        labels = {e["label"] for sets in raw["evidence"].values() for e in sets}
        if len(labels) > 1:
            raise DatasetError(f"{loc}: claim has conflicting evidence labels {sorted(labels)}")
        raw_label = labels.pop() if labels else "NEI"
        claim_id = str(raw["id"])
        evidence_ids = [str(d) for d in raw["evidence"]]
        return self.example(
            raw_label,
            loc,
            id=claim_id,
            input=Claim(id=claim_id, text=text_field(raw, "claim")),
            evidence_ids=evidence_ids,
            evidence=self._rationales(raw["evidence"], loc) if self.with_evidence_text else [],
            metadata={
                "split": split,
                "cited_doc_ids": [str(d) for d in raw.get("cited_doc_ids", [])],
                "rationales": {
                    str(d): [list(e["sentences"]) for e in sets]
                    for d, sets in raw["evidence"].items()
                },
            },
        )

    def _rationales(self, evidence: dict[str, list[dict[str, Any]]], loc: Loc) -> list[Document]:
        if not evidence:
            return []
        path = self._corpus_path
        if path is None or not path.is_file():
            raise DatasetError(
                f"{loc}: rationale text needs the corpus file beside the claims "
                "(or load with SciFactDataset(with_evidence_text=False))"
            )
        index = corpus_index(path)
        docs = []
        for doc_id, sets in evidence.items():
            abstract = index.get(str(doc_id))
            if abstract is None:
                raise DatasetError(f"{loc}: evidence doc_id {doc_id} is not in {path}")
            sentences = abstract.metadata["sentences"]
            for k, ev in enumerate(sets):
                idx = list(ev["sentences"])
                if any(i < 0 or i >= len(sentences) for i in idx):
                    raise DatasetError(f"{loc}: sentence index out of range in doc {doc_id}")
                docs.append(
                    Document(
                        id=f"{doc_id}#r{k}",
                        title=abstract.title,
                        text=" ".join(sentences[i].strip() for i in idx),
                        source=SOURCE,
                        metadata={"doc_id": str(doc_id), "sentences": idx, "label": ev["label"]},
                    )
                )
        return docs

    def _user_file(self, path: str | Path) -> Path:
        p = super()._user_file(path)
        self._corpus_path = p.parent / self.corpus_file
        return p


SCIFACT = SciFactDataset()
