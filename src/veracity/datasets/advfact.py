"""AdvFact (ToE, Section IV-A): adversarial versions of false LIAR claims.

AdvFact is not distributed; `veracity advfact build` makes it from its recipe (see
`veracity.evaluation.advfact`) into ``<VERACITY_HOME>/datasets/advfact/``:

- ``samples.jsonl`` — one line per adversarial sample: ``{id, attack, source_id, claim,
  original, speaker, context, original_label}``; ``attack`` is ``fakegpt`` (the claim
  rewritten as a fluent, detail-rich false narrative) or ``poisonedrag`` (the claim as
  it is, with poisoned passages injected into the retrieval corpus);
- ``clean.jsonl`` — the original claims, for flip rates against the clean set;
- ``passages.jsonl`` — the injected passages (this set's corpus);
- ``manifest.json`` — how it was built.

Splits: ``all`` (both attacks), ``fakegpt``, ``poisonedrag`` and ``clean``. Every sample
is labelled ``false`` in ToE's true / uncertain / false space. Each example excludes the
fact-check archive record of its source claim (see `veracity.datasets.liar`).
"""

from __future__ import annotations

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
    text_field,
)
from veracity.datasets._readers import read_jsonl
from veracity.datasets.base import DatasetError, DatasetInfo, Example
from veracity.datasets.liar import archive_host
from veracity.runtime.environment import default_data_dir

FOLDER = "advfact"
ATTACKS = ("fakegpt", "poisonedrag")


def advfact_root(data_dir: Path | None = None) -> Path:
    """Where AdvFact lives: ``<data_dir>/advfact``, by default in the default data directory
    (``VERACITY_DATA_DIR``, else ``VERACITY_HOME/datasets``), beside the downloaded sets."""
    return Path(data_dir if data_dir is not None else default_data_dir()) / FOLDER


class AdvFactDataset(BaseDataset):
    """The built AdvFact set (see the module docstring)."""

    info = DatasetInfo(
        name="advfact",
        label_space="true_uncertain_false",
        splits=("all", "fakegpt", "poisonedrag", "clean"),
        input_kind="claim",
        folder=FOLDER,
        description="AdvFact (ToE): FakeGPT-style rewrites and PoisonedRAG-style poisoned "
        "passages over LIAR false claims; build with `veracity advfact build`",
        licence="derived from LIAR (research use only)",
        has_corpus=True,
        exclude_domains=FACT_CHECK_SITES,
    )
    split_files: ClassVar[SplitFiles] = {
        "all": ("samples.jsonl",),
        "fakegpt": ("samples.jsonl",),
        "poisonedrag": ("samples.jsonl",),
        "clean": ("clean.jsonl",),
    }

    def folder(self, data_dir_: Path | None = None) -> Path:
        folder = advfact_root(data_dir_)
        if not folder.is_dir():
            raise DatasetError(
                f"advfact: {folder} not found; build the set with `veracity advfact build`"
            )
        return folder

    def get_hint(self, data_dir_: Path | None = None) -> str:
        """AdvFact is built, not downloaded."""
        return "build the set with `veracity advfact build`"

    def parse(self, raw: dict[str, Any], loc: Loc, split: str) -> Example | None:
        attack = raw.get("attack", "clean")
        if split in ATTACKS and attack != split:
            return None  # the other attack's line
        source_id = str(raw["source_id"])
        return self.example(
            "false",
            loc,
            id=str(raw["id"]),
            input=Claim(
                id=str(raw["id"]),
                text=text_field(raw, "claim"),
                speaker=optional_text(raw.get("speaker")),
                context=optional_text(raw.get("context")),
            ),
            metadata={
                "split": split,
                "attack": attack,
                "source_id": source_id,
                "original": raw.get("original"),
                "liar_label": raw.get("original_label"),
                "exclude_domains": [archive_host(source_id)],
            },
        )

    def corpus(self, data_dir: Path | None = None) -> Iterator[Document]:
        """The injected passages."""
        path = self.folder(data_dir) / "passages.jsonl"
        if not path.is_file():
            raise DatasetError(f"advfact: {path} not found")
        for _, raw in read_jsonl(path):
            yield Document.model_validate(raw)


ADVFACT = AdvFactDataset()
