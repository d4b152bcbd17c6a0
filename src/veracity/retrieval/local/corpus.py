"""`LocalCorpus`: an evidence source over a local, on-disk index (BM25, dense or hybrid).

Build an index once (``veracity index build PATH --name NAME`` or `build_local_corpus`),
then search it offline::

    corpus = LocalCorpus("scifact", mode="hybrid", indexes_dir=home / "indexes")
    docs = await corpus.search(Query(text="aspirin lowers stroke risk", top_k=5))

Results are chunks: ``Document.id`` is ``"<doc id>#<chunk>"``, ``metadata["parent_id"]``
is the id of the indexed document, ``score`` the ranking score (BM25 score, cosine
similarity, or reciprocal-rank-fusion score). Keyword rules (AND/OR), the ``before``
cutoff and domain rules are applied before ranking, so they never shrink the result
list below ``top_k`` when enough documents qualify.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from veracity.core.bounds import Items
from veracity.core.types import Document
from veracity.retrieval.base import Query, SourceError, apply_rules, domain_matches
from veracity.retrieval.local.build import BuildProgress, add_to_index, build_index
from veracity.retrieval.local.index import (
    BM25Params,
    ChunkingConfig,
    IndexBuildError,
    IndexManifest,
    IndexNotFound,
    LocalIndex,
    Mode,
    read_manifest,
)

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")

__all__ = [
    "IndexBuildError",
    "IndexNotFound",
    "LocalCorpus",
    "LocalCorpusConfig",
    "build_local_corpus",
    "corpus_from_dataset",
    "index_folder",
    "list_indexes",
]


class LocalCorpusConfig(BaseModel):
    """Options of a `LocalCorpus` (the ``sources:`` entry of a run config)."""

    model_config = ConfigDict(extra="forbid")

    index: str  # index name under indexes_dir, or a path to an index folder
    mode: Mode | None = None  # None: the mode the index was built for
    rrf_k: Items = Field(default=60, ge=1)  # reciprocal-rank fusion constant k
    rrf_depth: Items = Field(default=100, ge=1)  # candidates per ranking fused in hybrid mode
    max_chunks_per_doc: Items | None = Field(default=None, ge=1)  # None: no cap
    indexes_dir: Path | None = None


def index_folder(index: str, indexes_dir: Path | None = None) -> Path:
    """The folder of an index given by name (under `indexes_dir`) or by path.

    Raises:
        IndexBuildError: the name is not a plain name (letters, digits, ``._-``), or it
            is a name and no `indexes_dir` is given.
    """
    if "/" in index or "\\" in index or index.startswith("~"):
        return Path(index).expanduser()
    if not _NAME.match(index):
        raise IndexBuildError(
            f"bad index name {index!r}: use letters, digits, '.', '_' or '-' (max 100)"
        )
    if indexes_dir is None:  # the home's folder is the composition root's to pass
        raise IndexBuildError(
            f"index {index!r} is a name: give the folder named indexes live in "
            "(indexes_dir; veracity.runtime passes VERACITY_HOME/indexes) or a path"
        )
    return Path(indexes_dir) / index


def _domain(url: str | None) -> str | None:
    if not url:
        return None
    host = urlparse(url).hostname or ""
    return host.lower().removeprefix("www.") or None


def _is_word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _keyword_mask(index: LocalIndex, keyword: str) -> np.ndarray:
    """Chunks whose (lower-cased, whitespace-collapsed) text has `keyword` as whole words."""
    needle = " ".join(keyword.lower().split())
    blob, mask = index.blob, np.zeros(len(index.chunks), dtype=bool)
    pos = blob.find(needle)
    while pos >= 0:  # str.find scans in C; only actual occurrences reach Python
        end = pos + len(needle)
        before_ok = pos == 0 or not (_is_word(blob[pos - 1]) and _is_word(needle[0]))
        after_ok = end == len(blob) or not (_is_word(blob[end]) and _is_word(needle[-1]))
        if before_ok and after_ok:
            chunk = int(np.searchsorted(index.offsets, pos, side="right")) - 1
            mask[chunk] = True
            if chunk + 1 == len(index.offsets):
                break
            pos = int(index.offsets[chunk + 1]) - 1  # one hit per chunk is enough
        pos = blob.find(needle, pos + 1)
    return mask


class LocalCorpus:
    """A `Source` over a local index built by `build_local_corpus` or ``veracity index``.

    The index loads lazily on the first search and reloads when its manifest changes on
    disk (e.g. after ``veracity index add``). Searches run in a worker thread.

    Args:
        index: index name (under `indexes_dir`) or path to an index folder.
        mode: ``bm25``, ``dense`` or ``hybrid``; default: the mode the index was built for.
        rrf_k: constant k of reciprocal-rank fusion, score = sum of 1 / (k + rank).
        rrf_depth: how many candidates of each ranking take part in the fusion.
        max_chunks_per_doc: keep at most this many chunks of one document in a result.
        indexes_dir: where named indexes live (needed for a name; `veracity.runtime`
            passes ``VERACITY_HOME/indexes``).
        name: instance name for traces (default ``local:<index>``); the documents found
            name the corpus (``local:<index>``) as their source whatever the instance name.
    """

    kind = "local"

    def __init__(
        self,
        index: str,
        *,
        mode: Mode | None = None,
        rrf_k: int = 60,
        rrf_depth: int = 100,
        max_chunks_per_doc: int | None = None,
        indexes_dir: Path | None = None,
        name: str | None = None,
    ):
        self.config = LocalCorpusConfig(
            index=index,
            mode=mode,
            rrf_k=rrf_k,
            rrf_depth=rrf_depth,
            max_chunks_per_doc=max_chunks_per_doc,
            indexes_dir=indexes_dir,
        )
        self.folder = index_folder(index, indexes_dir)
        self.name = name or f"local:{self.folder.name}"
        self._index: LocalIndex | None = None
        self._domain_names: list[str | None] = []  # distinct domains of the chunks
        self._domain_ids: np.ndarray = np.zeros(0, dtype=np.int64)  # chunk -> domain index
        self._dates: np.ndarray = np.zeros(0, dtype=np.int64)
        self._stamp: int | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: LocalCorpusConfig | dict[str, Any]) -> LocalCorpus:
        cfg = LocalCorpusConfig.model_validate(config)
        return cls(**cfg.model_dump())

    # ----------------------------------------------------------------- loading

    def load(self) -> LocalIndex:
        """The loaded index (reloaded when the files changed). Raises IndexNotFound."""
        try:
            stamp = (self.folder / "manifest.json").stat().st_mtime_ns
        except FileNotFoundError:
            raise IndexNotFound(
                self.name,
                f"no index at {self.folder}; build one with "
                f"`veracity index build PATH --name {self.folder.name}`",
            ) from None
        with self._lock:
            if self._index is None or stamp != self._stamp:
                index = LocalIndex.load(self.folder)
                domains = [_domain(c.url) for c in index.chunks]
                self._domain_names = list(dict.fromkeys(domains))
                position = {d: i for i, d in enumerate(self._domain_names)}
                self._domain_ids = np.array([position[d] for d in domains], dtype=np.int64)
                self._dates = np.array(
                    [
                        c.published_at.date().toordinal() if c.published_at else -1
                        for c in index.chunks
                    ],
                    dtype=np.int64,
                )
                self._index, self._stamp = index, stamp
            return self._index

    @property
    def manifest(self) -> IndexManifest:
        return self.load().manifest

    # ----------------------------------------------------------------- search

    async def search(self, query: Query) -> list[Document]:
        """Search the index; see the module docstring for what results look like.

        Raises:
            IndexNotFound: the index has not been built.
            IndexCorrupt: its files are damaged or inconsistent.
            SourceError: the mode needs embeddings the index does not have.
        """
        # Like every raw source it does not record the search: `ManagedSource` (which
        # methods and the runner wrap sources in) does, once.
        _mode, results = await asyncio.to_thread(self._search_in_thread, query)
        return results

    def _search_in_thread(self, query: Query) -> tuple[Mode, list[Document]]:
        mode = self.config.mode or self.load().manifest.default_mode  # loading is blocking I/O
        return mode, self.search_sync(query, mode)

    def search_sync(self, query: Query, mode: Mode | None = None) -> list[Document]:
        """Blocking search (no trace record); `search` is the Source entry point."""
        index = self.load()
        mode = mode or self.config.mode or index.manifest.default_mode
        eligible = self._eligible(index, query)
        text = " ".join(p for p in (query.text.strip(), *query.keywords) if p.strip())
        if mode == "bm25":
            scores = index.bm25_scores(text)
            if not query.keywords:
                eligible &= scores > 0
            order = self._order(scores, eligible, query.top_k)
        elif mode == "dense":
            scores = index.dense_scores(text)
            order = self._order(scores, eligible, query.top_k)
        elif mode == "hybrid":
            scores, order = self._fuse(index, text, eligible, query)
        else:
            raise SourceError(self.name, f"unknown mode {mode!r}; use bm25, dense or hybrid")
        docs = [self._document(index, int(i), float(scores[i]), mode) for i in order]
        return apply_rules(query, docs)

    def _eligible(self, index: LocalIndex, query: Query) -> np.ndarray:
        n = len(index.chunks)
        keep = np.ones(n, dtype=bool)
        keywords = [k for k in query.keywords if k.strip()]
        if keywords:
            masks = [_keyword_mask(index, k) for k in keywords]
            combine = np.logical_and if query.operator == "AND" else np.logical_or
            keep &= combine.reduce(masks)
        if query.before is not None:
            dated = self._dates >= 0
            keep &= ~dated | (self._dates < query.before.toordinal())
            if query.drop_undated:
                keep &= dated
        if query.include_domains or query.exclude_domains:
            allowed = np.array(
                [
                    (not query.include_domains or domain_matches(d, query.include_domains))
                    and not domain_matches(d, query.exclude_domains)
                    for d in self._domain_names
                ],
                dtype=bool,
            )
            keep &= allowed[self._domain_ids]
        return keep

    def _order(self, scores: np.ndarray, eligible: np.ndarray, top_k: int) -> list[int]:
        """Eligible chunk indices by descending score, honouring max_chunks_per_doc."""
        idx = np.flatnonzero(eligible)
        cap = self.config.max_chunks_per_doc
        if cap is None and len(idx) > top_k:
            part = np.argpartition(-scores[idx], top_k - 1)[:top_k]
            idx = idx[part]
        idx = idx[np.argsort(-scores[idx], kind="stable")]
        if cap is None:
            return idx[:top_k].tolist()
        index = self._index
        assert index is not None
        per_doc: dict[str, int] = {}
        out: list[int] = []
        for i in idx.tolist():
            parent = index.chunks[i].parent_id
            if per_doc.get(parent, 0) < cap:
                per_doc[parent] = per_doc.get(parent, 0) + 1
                out.append(i)
                if len(out) == top_k:
                    break
        return out

    def _fuse(
        self, index: LocalIndex, text: str, eligible: np.ndarray, query: Query
    ) -> tuple[np.ndarray, list[int]]:
        """Reciprocal-rank fusion of the BM25 and dense rankings."""
        depth = max(self.config.rrf_depth, query.top_k)
        bm25 = index.bm25_scores(text)
        lexical = eligible if query.keywords else eligible & (bm25 > 0)
        fused = np.zeros(len(index.chunks), dtype=np.float64)
        k = self.config.rrf_k
        for scores, mask in ((bm25, lexical), (index.dense_scores(text), eligible)):
            idx = np.flatnonzero(mask)
            if len(idx) > depth:
                idx = idx[np.argpartition(-scores[idx], depth - 1)[:depth]]
            ranked = idx[np.argsort(-scores[idx], kind="stable")]
            fused[ranked] += 1.0 / (k + np.arange(1, len(ranked) + 1))
        return fused, self._order(fused, fused > 0, query.top_k)

    def _document(self, index: LocalIndex, i: int, score: float, mode: str) -> Document:
        c = index.chunks[i]
        meta = {
            **c.metadata,
            "parent_id": c.parent_id,
            "chunk_index": c.chunk_index,
            "char_start": c.start,
            "char_end": c.end,
            "retrieval_mode": mode,
        }
        return Document(
            id=c.id,
            text=c.text,
            title=c.title,
            url=c.url,
            source=f"local:{self.folder.name}",  # the corpus, whatever role it is bound to
            published_at=c.published_at,
            score=score,
            metadata=meta,
        )


# --------------------------------------------------------------------------- helpers


def build_local_corpus(
    name: str,
    documents: Iterable[Document],
    *,
    mode: Mode = "hybrid",
    embedder: str | None = None,
    chunking: ChunkingConfig | None = None,
    bm25: BM25Params | None = None,
    indexes_dir: Path | None = None,
    overwrite: bool = False,
    progress: BuildProgress | None = None,
) -> LocalCorpus:
    """Index `documents` under `name` and return a `LocalCorpus` over the new index.

    See `veracity.retrieval.local.build.build_index` for the arguments and errors.
    """
    folder = index_folder(name, indexes_dir)
    build_index(
        folder,
        documents,
        mode=mode,
        embedder=embedder,
        chunking=chunking,
        bm25=bm25,
        overwrite=overwrite,
        progress=progress,
    )
    return LocalCorpus(str(folder) if folder.name != name else name, indexes_dir=indexes_dir)


def add_documents(
    name: str, documents: Iterable[Document], *, indexes_dir: Path | None = None
) -> tuple[IndexManifest, int, int]:
    """Add new documents to an index; returns (manifest, added, skipped as already indexed)."""
    return add_to_index(index_folder(name, indexes_dir), documents)


def corpus_from_dataset(
    dataset: Any,
    name: str | None = None,
    *,
    data_dir: Path | None = None,
    **build: Any,
) -> LocalCorpus:
    """Index the retrieval corpus of a dataset (an object with ``info`` and ``corpus()``).

    Retrieval sits below the dataset loaders, so it takes the loader object; for a
    registered name pass ``veracity.datasets.get_dataset(name)``.

    Args:
        dataset: a `veracity.datasets.Dataset` that has a corpus.
        name: index name (default: the dataset's name).
        data_dir: benchmark data folder passed to ``corpus()``.
        **build: options for `build_local_corpus` (mode, embedder, chunking, ...).
    """
    index_name = name or dataset.info.name
    return build_local_corpus(index_name, dataset.corpus(data_dir), **build)


def list_indexes(indexes_dir: Path) -> list[tuple[str, IndexManifest | str]]:
    """Every index folder under `indexes_dir` with its manifest, or the reason it cannot
    be read."""
    root = Path(indexes_dir)
    if not root.is_dir():
        return []
    out: list[tuple[str, IndexManifest | str]] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if not (folder / "manifest.json").exists():
            continue
        try:
            out.append((folder.name, read_manifest(folder)))
        except SourceError as exc:
            out.append((folder.name, str(exc)))
    return out
