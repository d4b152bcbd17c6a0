"""AVeriTeC: real-world claims with question-answer evidence from the web.

File (folder ``averitec/``): the release's ``dev.json`` (500 claims; `veracity datasets get
averitec` downloads it), else ``dev_first250.json`` (its first 250), one JSON array of
``{claim, label, claim_date (dd-mm-yyyy), speaker, reporting_source,
fact_checking_article, questions: [{question, answers: [{answer, answer_type,
source_url, source_medium, boolean_explanation?}]}], justification, ...}``.
Each question-answer pair becomes a gold evidence Document (url = the answer's source).
``claim_date`` is the evidence cutoff; ``reporting_source`` (where the claim appeared) is
the claim's context. The site of the fact-checking article is put in
``metadata["exclude_domains"]`` for that claim, on top of the set-wide fact-check list.

Two variants: ``averitec`` (4 labels) and ``averitec3`` (RADAR's 3 classes: the
"Not Enough Evidence" claims are dropped and counted in `skipped`; map to
``true_half_false`` with ``labels="true_half_false"``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlparse

from veracity.core.dates import parse_date
from veracity.core.types import Claim, Document
from veracity.datasets._common import (
    FACT_CHECK_SITES,
    BaseDataset,
    Loc,
    Skip,
    SplitFiles,
    optional_text,
    text_field,
)
from veracity.datasets._readers import read_json_array
from veracity.datasets.base import DatasetInfo, Example

_ARCHIVE = re.compile(r"^https?://web\.archive\.org/web/[^/]+/(.*)$")
NEE = "Not Enough Evidence"


def article_domain(url: str | None) -> str | None:
    """Domain of a fact-checking article, looking through web.archive.org wrappers."""
    if not url:
        return None
    m = _ARCHIVE.match(url.strip())
    inner = m.group(1) if m else url.strip()
    if "://" not in inner:
        inner = "http://" + inner
    host = (urlparse(inner).hostname or "").lower().removeprefix("www.")
    return host or None


def qa_documents(ex_id: str, questions: list[dict[str, Any]]) -> list[Document]:
    """One Document per question-answer pair."""
    docs = []
    for qi, q in enumerate(questions):
        question = text_field(q, "question")
        for ai, a in enumerate(q.get("answers") or []):
            answer = str(a["answer"]).strip()
            explanation = optional_text(a.get("boolean_explanation"))
            text = f"Q: {question}\nA: {answer}" + (f" ({explanation})" if explanation else "")
            docs.append(
                Document(
                    id=f"{ex_id}:q{qi}a{ai}",
                    text=text,
                    url=optional_text(a.get("source_url")),
                    source="averitec:qa",
                    metadata={
                        "question": question,
                        "answer_type": a.get("answer_type"),
                        "source_medium": a.get("source_medium"),
                    },
                )
            )
    return docs


class AveritecDataset(BaseDataset):
    """AVeriTeC dev: the release's ``dev.json`` (500 claims), else ``dev_first250.json``."""

    split_files: ClassVar[SplitFiles] = {"dev": ("dev_first250.json",)}
    full_files: ClassVar[dict[str, str]] = {"dev_first250.json": "dev.json"}  # all 500

    def __init__(self, drop_nee: bool = False) -> None:
        self.drop_nee = drop_nee
        self.info = DatasetInfo(
            name="averitec3" if drop_nee else "averitec",
            label_space="averitec3" if drop_nee else "averitec",
            splits=("dev",),
            input_kind="claim",
            folder="averitec",
            description=(
                "AVeriTeC dev claims with QA evidence"
                + (", Not Enough Evidence dropped (RADAR's 3 classes)" if drop_nee else "")
            ),
            licence="CC BY-NC 4.0",
            exclude_domains=FACT_CHECK_SITES,
        )

    def records(self, file: Path) -> Iterator[tuple[Loc, Any]]:
        return read_json_array(file)

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example | Skip:
        label = raw["label"]
        if self.drop_nee and isinstance(label, str) and label.strip() == NEE:
            return Skip("Not Enough Evidence (not one of RADAR's three classes)")
        ex_id = f"dev-{loc.line - 1}"  # position in the official dev file (0-based)
        fc_domain = article_domain(raw.get("fact_checking_article"))
        return self.example(
            label,
            loc,
            id=ex_id,
            input=Claim(
                id=ex_id,
                text=text_field(raw, "claim"),
                date=parse_date(raw.get("claim_date"), formats=("%d-%m-%Y",)),
                speaker=optional_text(raw.get("speaker")),
                context=optional_text(raw.get("reporting_source")),
                language="en",
            ),
            evidence=qa_documents(ex_id, raw.get("questions") or []),
            metadata={
                "split": split,
                "justification": raw.get("justification"),
                "claim_types": raw.get("claim_types") or [],
                "fact_checking_strategies": raw.get("fact_checking_strategies") or [],
                "fact_checking_article": raw.get("fact_checking_article"),
                "original_claim_url": raw.get("original_claim_url"),
                "location": raw.get("location_ISO_code"),
                "exclude_domains": [fc_domain] if fc_domain else [],
            },
        )


AVERITEC = AveritecDataset()
AVERITEC3 = AveritecDataset(drop_nee=True)
