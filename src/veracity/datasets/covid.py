"""COVID-19 claim sets: Check-COVID and COVID-Fact.

Check-COVID (folder ``check_covid/``): ``{train,dev}/covidCheck_<split>_<variant>.json``
(JSON Lines despite the extension) with ``{id, claim, cord_id, label (SUPPORT / REFUTE /
NOTENOUGHINFO), evidence_set: [{sent_index, type}], is_auth}``, and ``corpus.json``
(JSON Lines of ``{cord_id, title, abstract: [sentences]}``). Variants: ``composed``
(annotator-written claims), ``extracted`` (journalist-written, ``is_auth``) and both
(the default). Labels map onto ``supported_refuted_nei``; ToE's 3-way convention is the
registered ``fever3_to_toe3`` map (``labels="true_uncertain_false"``).
Gold evidence: `evidence_ids` = [cord_id]; `evidence` = the annotated sentences.

COVID-Fact (folder ``covidfact/``): ``COVIDFACT_dataset.jsonl`` with ``{claim, label
(SUPPORTED / REFUTED), evidence: [sentences], gold_source, flair}``; no ids, so ids are
file:line. ``gold_source`` is where the claim came from, not the evidence.
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

_VARIANTS = {"all": "composed+extracted", "composed": "composed", "extracted": "extracted"}


@lru_cache(maxsize=4)
def _abstracts(path: Path, mtime: float) -> dict[str, Document]:
    out: dict[str, Document] = {}
    for loc, raw in read_jsonl(path):
        try:
            sentences = raw["abstract"]
            if not isinstance(sentences, list):
                raise DatasetError(f"{loc}: 'abstract' must be a list of sentences")
            doc = Document(
                id=str(raw["cord_id"]),
                title=str(raw.get("title") or ""),
                text=" ".join(str(s).strip() for s in sentences),
                source="local:check_covid",
                metadata={"sentences": sentences},
            )
        except KeyError as exc:
            raise DatasetError(f"{loc}: missing field {exc.args[0]!r}") from None
        out[doc.id] = doc
    return out


class CheckCovidDataset(BaseDataset):
    """Check-COVID train and dev (the test split is held back)."""

    corpus_file = "corpus.json"

    def __init__(self, variant: str = "all", with_evidence_text: bool = True) -> None:
        if variant not in _VARIANTS:
            raise DatasetError(f"Check-COVID variant must be one of {sorted(_VARIANTS)}")
        self.variant = variant
        self.with_evidence_text = with_evidence_text
        self._corpus_path: Path | None = None
        stem = _VARIANTS[variant]
        self.split_files = {s: (f"{s}/covidCheck_{s}_{stem}.json",) for s in ("train", "dev")}
        suffix = "" if variant == "all" else f"_{variant}"
        self.info = DatasetInfo(
            name=f"check_covid{suffix}",
            label_space="supported_refuted_nei",
            splits=("train", "dev"),
            input_kind="claim",
            folder="check_covid",
            description=f"Check-COVID ({variant} claims) with CORD-19 abstract evidence",
            licence="MIT",
            has_corpus=True,
        )

    def files(self, split: str, data_dir_: Path | None = None) -> tuple[Path, ...]:
        paths = super().files(split, data_dir_)
        self._corpus_path = self.folder(data_dir_) / self.corpus_file
        return paths

    def _user_file(self, path: str | Path) -> Path:
        p = super()._user_file(path)
        self._corpus_path = p.parent / self.corpus_file
        return p

    def corpus(self, data_dir: Path | None = None) -> Iterator[Document]:
        """The CORD-19 abstracts the claims were checked against (cord_id as id)."""
        path = self.folder(data_dir) / self.corpus_file
        if not path.is_file():
            raise DatasetError(
                f"{self.info.name}: corpus file {path} not found; {self.get_hint(data_dir)}"
            )
        yield from _abstracts(path, path.stat().st_mtime).values()

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        ex_id = str(raw["id"])
        cord_id = str(raw["cord_id"])
        ev_set = [(int(e["sent_index"]), str(e.get("type") or "")) for e in raw["evidence_set"]]
        return self.example(
            raw["label"],
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text_field(raw, "claim")),
            evidence_ids=[cord_id],
            evidence=self._sentences(cord_id, ev_set, loc) if self.with_evidence_text else [],
            metadata={
                "split": split,
                "cord_id": cord_id,
                "evidence_set": [{"sent_index": i, "type": t} for i, t in ev_set],
                "claim_type": "extracted" if raw.get("is_auth") else "composed",
            },
        )

    def _sentences(self, cord_id: str, ev_set: list[tuple[int, str]], loc: Loc) -> list[Document]:
        path = self._corpus_path
        if path is None or not path.is_file():
            raise DatasetError(f"{loc}: evidence text needs {self.corpus_file} beside the claims")
        doc = _abstracts(path, path.stat().st_mtime).get(cord_id)
        if doc is None:
            raise DatasetError(f"{loc}: cord_id {cord_id} is not in {path}")
        sentences = doc.metadata["sentences"]
        out = []
        for i, kind in ev_set:
            if not 0 <= i < len(sentences):
                raise DatasetError(f"{loc}: sent_index {i} out of range for {cord_id}")
            out.append(
                Document(
                    id=f"{cord_id}#{i}",
                    title=doc.title,
                    text=str(sentences[i]).strip(),
                    source="local:check_covid",
                    metadata={"doc_id": cord_id, "sent_index": i, "type": kind},
                )
            )
        return out


class CovidFactDataset(BaseDataset):
    """COVID-Fact (4,086 claims, one file, no official split here)."""

    info = DatasetInfo(
        name="covidfact",
        label_space="supported_refuted",
        splits=("all",),
        input_kind="claim",
        folder="covidfact",
        description="COVID-Fact: 4,086 COVID-19 claims and counter-claims with evidence sentences",
        licence="not stated",
    )
    split_files: ClassVar[SplitFiles] = {"all": ("COVIDFACT_dataset.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        ex_id = loc.default_id
        sentences = raw.get("evidence") or []
        if not isinstance(sentences, list):
            raise ValueError("'evidence' must be a list of sentences")
        return self.example(
            raw["label"],
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text_field(raw, "claim")),
            evidence=[
                Document(id=f"{ex_id}:e{k}", text=str(s).strip(), source="covidfact:evidence")
                for k, s in enumerate(sentences)
                if str(s).strip()
            ],
            metadata={
                "split": split,
                "gold_source": raw.get("gold_source"),
                "flair": raw.get("flair"),
            },
        )


CHECK_COVID = CheckCovidDataset()
CHECK_COVID_COMPOSED = CheckCovidDataset("composed")
CHECK_COVID_EXTRACTED = CheckCovidDataset("extracted")
COVIDFACT = CovidFactDataset()
