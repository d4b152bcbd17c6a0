"""Shared fixtures for the evaluation tests: a toy dataset, test methods, a scripted model.

The toy dataset's claims say which label the scripted model should answer
(``say:SUPPORTED``), so each test knows every prediction in advance.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

from veracity.core import registry
from veracity.core.types import Claim, Document, Verdict
from veracity.datasets.base import DatasetError, DatasetInfo, Example
from veracity.evaluation.experiment import ExperimentConfig
from veracity.methods.base import BaseMethod
from veracity.retrieval.base import Query
from veracity.testing import InMemorySource, ScriptedLLM
from veracity.testing.echo import EchoBackend

# id, gold, what the scripted model answers (S = SUPPORTED, R = REFUTED)
TOY = [
    ("t0", "SUPPORTED", "SUPPORTED"),
    ("t1", "SUPPORTED", "SUPPORTED"),
    ("t2", "SUPPORTED", "REFUTED"),
    ("t3", "REFUTED", "REFUTED"),
    ("t4", "REFUTED", "REFUTED"),
    ("t5", "REFUTED", "SUPPORTED"),
    ("t6", "SUPPORTED", "SUPPORTED"),
    ("t7", "REFUTED", "REFUTED"),
]
# accuracy 6/8; SUPPORTED: tp 3, predicted 4, support 4 -> P .75 R .75 F1 .75; REFUTED same


class ToyDataset:
    """A tiny in-memory dataset in the supported_refuted space."""

    def __init__(self, rows=TOY, name: str = "toy_eval", space: str = "supported_refuted"):
        self.rows = rows
        self.info = DatasetInfo(
            name=name,
            label_space=space,
            splits=("dev", "test"),
            input_kind="claim",
            folder="toy",
            exclude_domains=("factcheck.example",),
        )

    def load(self, split: str | None = None, data_dir: Path | None = None) -> list[Example]:
        if split not in (None, *self.info.splits):
            raise DatasetError(f"unknown split {split!r}")
        return [
            Example(
                id=i,
                input=Claim(text=f"claim {i} say:{say}", date=dt.date(2020, 1, 1 + n)),
                label=gold,
                label_space=self.info.label_space,
            )
            for n, (i, gold, say) in enumerate(self.rows)
        ]

    def corpus(self, data_dir: Path | None = None):
        raise DatasetError("no corpus")


LIAR_ROWS = [("l0", "pants-fire", "false"), ("l1", "half-true", "true"), ("l2", "true", "false")]

TOY_DATASET = ToyDataset()
registry.datasets.register("toy_eval", TOY_DATASET)
registry.datasets.register("toy_liar", ToyDataset(LIAR_ROWS, "toy_liar", "liar6"))


def scripted_llm(confidence: float = 0.8, latency_s: float = 0.0) -> ScriptedLLM:
    """Answers each toy claim with the label after ``say:``, with token alternatives."""
    return EchoBackend(latency_s, confidence)()


class SpecialMethod(BaseMethod):
    """Follows instructions in the claim: crash, abstain, interrupt, or say a label."""

    name = "toy_special"
    default_labels = "supported_refuted"
    interrupt_on: str | None = None  # claim id substring that raises KeyboardInterrupt

    async def run(self, item, ctx) -> Verdict:
        text = item.text
        if self.interrupt_on and f"claim {self.interrupt_on} " in text:
            raise KeyboardInterrupt
        if "crash" in text:
            raise RuntimeError("boom in the method")
        if "abstain" in text:
            return self.verdict(label=None, abstained=True, abstain_reason="not sure")
        label = re.search(r"say:(\w+)", text).group(1)
        return self.verdict(label=label, score=1.0 if label == "SUPPORTED" else 0.0)


class SearchingMethod(BaseMethod):
    """Searches its first source with an unguarded query and cites what it found."""

    name = "toy_search"
    default_labels = "supported_refuted"

    async def run(self, item, ctx) -> Verdict:
        source = next(iter(self.sources.values()))
        docs = await source.search(Query(text="claim evidence"))
        return self.verdict(label="SUPPORTED", metadata={"docs": [d.id for d in docs]})


registry.methods.register("toy_special", SpecialMethod)
registry.methods.register("toy_search", SearchingMethod)

DOCS = [
    Document(id="old", text="claim evidence old", url="https://news.example/a",
             published_at=dt.datetime(2019, 6, 1)),
    Document(id="late", text="claim evidence late", url="https://news.example/b",
             published_at=dt.datetime(2021, 6, 1)),
    Document(id="fc", text="claim evidence factcheck", url="https://www.factcheck.example/c",
             published_at=dt.datetime(2019, 1, 1)),
]  # fmt: skip
SEARCH_SOURCE = InMemorySource(DOCS, name="toy_memory")
registry.sources.register("toy_memory", lambda: SEARCH_SOURCE)


def config(tmp_path: Path, **kw) -> ExperimentConfig:
    base = {"method": "direct", "dataset": "toy_eval", "data_dir": str(tmp_path), "concurrency": 2}
    base.update(kw)
    return ExperimentConfig.model_validate(base)


def echo_llm_for_batch(monkeypatch) -> EchoBackend:
    """Make every model `veracity batch` builds one echoing scripted model, cached in the
    run directory; returns the model."""
    from veracity.llm.cache import ResponseCache
    from veracity.llm.client import ManagedLLM

    model = EchoBackend()()

    def build_llm(cfg, *, cache_path=None, progress=None, **_):
        return ManagedLLM(model, cache=ResponseCache(cache_path, mode=cfg.cache_mode))

    monkeypatch.setattr("veracity.llm.factory.build_llm", build_llm)
    monkeypatch.setattr("veracity.cli.batch.ensure_model", lambda cfg: None)
    return model
