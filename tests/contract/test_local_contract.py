"""The source contract run on LocalCorpus (BM25 and hybrid), over a tiny on-disk index."""

from __future__ import annotations

import datetime as dt

import pytest

from veracity.core.types import Document
from veracity.retrieval.base import Query
from veracity.retrieval.local.corpus import LocalCorpus, build_local_corpus
from veracity.testing.contract import SourceContract

_DOCS = [
    Document(
        id=f"d{i}",
        text=f"Lunar samples note {i}: the moon rocks were studied in lab {i}.",
        title=f"Moon rocks {i}",
        url=f"https://{domain}/moon/{i}",
        published_at=dt.datetime(year, 6, 1, tzinfo=dt.timezone.utc),
    )
    for i, (domain, year) in enumerate(
        [
            ("nasa.gov", 2012),
            ("news.example.com", 2019),
            ("blog.example.org", 2021),
            ("www.nasa.gov", 2023),
        ]
    )
]
_OTHER = [Document(id="x", text="Bananas are rich in potassium.", title="Fruit")]


class _LocalContract(SourceContract):
    query = Query(text="moon rocks")
    cutoff = dt.date(2020, 1, 1)
    include_domain = "nasa.gov"
    exclude_domain = "example.com"
    unsupported = frozenset({"auth", "rate_limited"})  # an offline index has neither
    mode = "bm25"

    @pytest.fixture
    def make_source(self, tmp_path):
        built: dict[str, LocalCorpus] = {}

        def make(scenario):
            if scenario == "unreachable":  # never built
                return LocalCorpus("missing", indexes_dir=tmp_path)
            if scenario == "malformed":
                corpus = self._build(tmp_path, "broken", _DOCS)
                (corpus.folder / "chunks.jsonl").write_text("{not json\n")
                return LocalCorpus("broken", indexes_dir=tmp_path)
            name = "empty" if scenario == "empty" else "ok"
            if name not in built:
                built[name] = self._build(tmp_path, name, _OTHER if name == "empty" else _DOCS)
            return built[name]

        return make

    def _build(self, root, name, docs):
        return build_local_corpus(
            name, docs, mode=self.mode, embedder="hashing:64", indexes_dir=root, overwrite=True
        )


class TestLocalBM25Contract(_LocalContract):
    mode = "bm25"


class TestLocalHybridContract(_LocalContract):
    mode = "hybrid"
    # dense ranking always has a nearest neighbour, so "found nothing" cannot happen
    unsupported = frozenset({"auth", "rate_limited", "empty"})
