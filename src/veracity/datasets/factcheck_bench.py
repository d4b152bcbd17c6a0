"""FactCheck-Bench (Factcheck-GPT): ChatGPT answers annotated claim by claim.

Folder ``factcheck_bench/``:
- ``subtasks/subtask4_claim_factuality.jsonl``: ``{claim, label (true / false /
  not_enough_evidence), revised_claim}``, 661 claims -> dataset ``factcheck_bench`` in the
  ``true_false_nee`` space. Gold evidence: the passages of
  ``subtasks/subtask3_claim_evidence_stance.jsonl`` for the same claim text, with the
  annotated stance (completely-support / partially-support / refute / irrelevant) in
  the Document's metadata.
- ``factcheck-GPT-benchmark.jsonl``: 94 whole answers with ``response_factuality``
  (true / false / "NA") -> ``factcheck_bench_responses`` (true_false); the 2 "NA"
  answers have no factuality label and are dropped (counted in `skipped`).
- the same file as documents -> ``factcheck_bench_documents`` (input kind ``document``,
  for `veracity eval`'s document task): each answer with its annotated claims in
  ``metadata["gold_claims"]`` (text, check-worthiness category, factuality label:
  true / false, or None where the annotation says unknown), 678 claims of which 661
  are check-worthy (``factual``); the 2 "NA" answers are dropped likewise. Its corpus
  (``veracity index build --dataset factcheck_bench_documents``) is the subtask-3
  passages, each once.
- ``Factbench.jsonl``: FactBench, 4,835 answers from four sources (factool-qa,
  felm-wk, factcheckgpt, halueval-dolly15k) with ``response_label`` and per-claim
  labels -> ``factbench`` (true_false); "NA" answers dropped likewise, and so is the
  one felm-wk answer whose ``response`` is null (line 72), counted in `skipped`.
The binary claim set MERMAID and FIRE use (661 minus the 30 not_enough_evidence claims)
is ``fire_factcheckbench``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

from veracity.core.types import Claim, Document
from veracity.datasets._common import BaseDataset, Loc, Skip, SplitFiles, bool_label, text_field
from veracity.datasets._readers import read_jsonl
from veracity.datasets.base import DatasetError, DatasetInfo, Example

_STANCE_FILE = "subtasks/subtask3_claim_evidence_stance.jsonl"
_LICENCE = "Apache-2.0"


@lru_cache(maxsize=2)
def _stance_index(path: Path, mtime: float) -> dict[str, list[tuple[str, str]]]:
    index: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for loc, raw in read_jsonl(path):
        try:
            index[raw["claim"].strip()].append((str(raw["evidence"]), str(raw["stance"])))
        except (KeyError, AttributeError) as exc:
            raise DatasetError(f"{loc}: malformed stance record: {exc}") from None
    return dict(index)


def answer_claim(ex_id: str, response: str, prompt: str | None) -> Claim:
    """A model's whole answer as the text to check, with the question as context."""
    context = f"answer to the question: {prompt.strip()}" if prompt and prompt.strip() else None
    return Claim(id=ex_id, text=response, context=context)


class FactCheckBenchClaims(BaseDataset):
    """The 661 annotated claims (subtask 4) with their evidence passages (subtask 3)."""

    info = DatasetInfo(
        name="factcheck_bench",
        label_space="true_false_nee",
        splits=("all",),
        input_kind="claim",
        folder="factcheck_bench",
        description="FactCheck-Bench: 661 claims from 94 ChatGPT answers; "
        "true / false / not_enough_evidence, with stance-annotated evidence passages",
        licence=_LICENCE,
    )
    split_files: ClassVar[SplitFiles] = {"all": ("subtasks/subtask4_claim_factuality.jsonl",)}

    def __init__(self) -> None:
        self._stance_path: Path | None = None

    def files(self, split: str, data_dir_: Path | None = None) -> tuple[Path, ...]:
        paths = super().files(split, data_dir_)
        self._stance_path = self.folder(data_dir_) / _STANCE_FILE
        return paths

    def _user_file(self, path: str | Path) -> Path:
        self._stance_path = None  # a user's own claims have no stance file
        return super()._user_file(path)

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example:
        ex_id = loc.default_id
        text = text_field(raw, "claim")
        evidence = []
        if self._stance_path is not None and self._stance_path.is_file():
            index = _stance_index(self._stance_path, self._stance_path.stat().st_mtime)
            for k, (passage, stance) in enumerate(index.get(text, [])):
                evidence.append(
                    Document(
                        id=f"{ex_id}:e{k}",
                        text=passage,
                        source="factcheck_bench:evidence",
                        metadata={"stance": stance},
                    )
                )
        return self.example(
            raw["label"],
            loc,
            id=ex_id,
            input=Claim(id=ex_id, text=text),
            evidence=evidence,
            metadata={"split": split, "revised_claim": raw.get("revised_claim")},
        )


class FactCheckBenchResponses(BaseDataset):
    """The 94 annotated ChatGPT answers, judged as a whole."""

    info = DatasetInfo(
        name="factcheck_bench_responses",
        label_space="true_false",
        splits=("all",),
        input_kind="claim",
        folder="factcheck_bench",
        description="FactCheck-Bench: 94 ChatGPT answers, whole-answer factuality",
        licence=_LICENCE,
    )
    split_files: ClassVar[SplitFiles] = {"all": ("factcheck-GPT-benchmark.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example | Skip:
        label = raw["response_factuality"]
        if label == "NA":
            return Skip("response_factuality is NA (no factuality label)")
        ex_id = loc.default_id
        sentences = raw.get("sentences") or {}
        claims = [c for s in sentences.values() for c in s.get("claims") or []]
        return self.example(
            bool_label(label),
            loc,
            id=ex_id,
            input=answer_claim(ex_id, text_field(raw, "response"), raw.get("prompt")),
            metadata={
                "split": split,
                "prompt": raw.get("prompt"),
                "revised_response": raw.get("revised_response"),
                "claims": claims,
            },
        )


def _factuality(value: Any) -> str | None:
    """An annotated claim's factuality as true / false (None: unknown or missing)."""
    label = bool_label(value)
    return label if label in ("true", "false") else None


def gold_claim(text: Any, category: Any, label: Any) -> dict[str, Any]:
    """One annotated claim of an answer, as the document task reads it."""
    cat = str(category).strip() if category is not None else None
    return {
        "text": " ".join(str(text).split()),
        "category": cat,
        "checkworthy": None if cat is None else cat == "factual",
        "label": _factuality(label),
    }


class FactCheckBenchDocuments(FactCheckBenchResponses):
    """The 94 annotated answers as documents, each with its annotated claims."""

    info = DatasetInfo(
        name="factcheck_bench_documents",
        label_space="true_false",
        splits=("all",),
        input_kind="document",
        folder="factcheck_bench",
        description="FactCheck-Bench: 92 labelled ChatGPT answers as documents, with their "
        "678 annotated claims (check-worthiness and factuality) for the document task",
        licence=_LICENCE,
        has_corpus=True,
    )

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example | Skip:
        example = super().parse(raw, loc, split)
        if isinstance(example, Skip):
            return example
        claims = []
        for name, sentence in (raw.get("sentences") or {}).items():
            texts = sentence.get("claims") or []
            worth = sentence.get("claim_checkworthiness") or []
            labels = sentence.get("claims_factuality_label") or []
            if not (len(texts) == len(worth) == len(labels)):
                raise DatasetError(
                    f"{loc}: {name} has {len(texts)} claims but {len(worth)} check-worthiness "
                    f"and {len(labels)} factuality labels"
                )
            claims += [gold_claim(*triple) for triple in zip(texts, worth, labels, strict=True)]
        example.metadata["gold_claims"] = claims
        return example

    def corpus(self, data_dir: Path | None = None) -> Iterator[Document]:
        """The set's own evidence passages (subtask 3), each once, without their stance
        labels, as a retrieval corpus (``veracity index build --dataset``). They were
        gathered for these very claims, so an index of them is a close-to-gold evidence
        setting, not open retrieval."""
        path = self.folder(data_dir) / _STANCE_FILE
        if not path.is_file():
            raise DatasetError(f"{path} is missing; the corpus is the subtask-3 passages")
        seen: set[str] = set()
        for passages in _stance_index(path, path.stat().st_mtime).values():
            for passage, _stance in passages:
                text = " ".join(passage.split())
                if text and text not in seen:
                    seen.add(text)
                    yield Document(id=f"factcheck_bench:e{len(seen)}", text=text,
                                   source="factcheck_bench:evidence")  # fmt: skip


class FactBenchDataset(BaseDataset):
    """FactBench: 4,835 answers from four annotated sources, judged as a whole."""

    info = DatasetInfo(
        name="factbench",
        label_space="true_false",
        splits=("all",),
        input_kind="claim",
        folder="factcheck_bench",
        description="FactBench: 4,835 LLM answers (FacTool-QA, FELM-WK, Factcheck-GPT, "
        "HaluEval) with answer- and claim-level labels",
        licence=_LICENCE,
    )
    split_files: ClassVar[SplitFiles] = {"all": ("Factbench.jsonl",)}

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example | Skip:
        label = raw["response_label"]
        if label == "NA":
            return Skip("response_label is NA (no factuality label)")
        if not (raw.get("response") or "").strip():
            return Skip("no response text (the answer is null)")
        ex_id = loc.default_id
        return self.example(
            bool_label(label),
            loc,
            id=ex_id,
            input=answer_claim(ex_id, text_field(raw, "response"), raw.get("prompt")),
            metadata={
                "split": split,
                "source": raw.get("source"),
                "prompt": raw.get("prompt"),
                "claims": raw.get("claims") or [],
                "claim_labels": raw.get("claim_labels") or [],
                "ability_to_test": raw.get("ability_to_test"),
            },
        )


FACTCHECK_BENCH = FactCheckBenchClaims()
FACTCHECK_BENCH_RESPONSES = FactCheckBenchResponses()
FACTBENCH = FactBenchDataset()
FACTCHECK_BENCH_DOCUMENTS = FactCheckBenchDocuments()
