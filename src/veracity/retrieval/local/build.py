"""Building and updating local indexes (see `veracity.retrieval.local.index` for the layout).

Writers take an exclusive file lock and replace files atomically, manifest last. `add`
appends new documents: BM25 is rebuilt from all chunks (seconds), embeddings are
computed only for the new chunks.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import time
from collections.abc import Callable, Iterable, Sized
from pathlib import Path

import bm25s
import numpy as np

from veracity.core.types import Document
from veracity.nlp.embeddings import Embedder, get_embedder
from veracity.nlp.text import TextError, chunk_text
from veracity.retrieval.local.index import (
    BM25Params,
    ChunkingConfig,
    ChunkRecord,
    IndexBuildError,
    IndexManifest,
    LocalIndex,
    Mode,
    locked,
    missing_index,
    tokenize,
)

BuildProgress = Callable[[str, int, int | None], None]
"""Told ``(stage, done, total)`` while an index is built: stage ``chunking`` (documents),
``embedding`` (chunks) or ``writing``; total None where it is not known."""


def _chunk_documents(
    docs: Iterable[Document],
    chunking: ChunkingConfig,
    known: set[str],
    progress: BuildProgress | None = None,
) -> tuple[list[ChunkRecord], int, int]:
    """Chunk new documents; returns (chunks, documents added, documents skipped)."""
    records: list[ChunkRecord] = []
    seen: set[str] = set()
    added = skipped = 0
    total = len(docs) if isinstance(docs, Sized) else None
    for n, doc in enumerate(docs, 1):
        if progress is not None:
            progress("chunking", n, total)
        if doc.id in known:
            skipped += 1
            continue
        if doc.id in seen:
            raise IndexBuildError(f"document id {doc.id!r} occurs twice in the input")
        seen.add(doc.id)
        try:
            pieces = chunk_text(
                doc.text,
                chunking.max_words,
                chunking.overlap,
                max_chars=chunking.max_chars,
                method=chunking.method,
            )
        except TextError as exc:
            raise IndexBuildError(f"chunking options: {exc}") from exc
        for piece in pieces:
            records.append(
                ChunkRecord(
                    id=f"{doc.id}#{piece.index}",
                    parent_id=doc.id,
                    chunk_index=piece.index,
                    start=piece.start,
                    end=piece.end,
                    text=piece.text,
                    title=doc.title,
                    url=doc.url,
                    published_at=doc.published_at,
                    metadata=doc.metadata,
                )
            )
        added += 1
    return records, added, skipped


def _embed(
    embedder: Embedder,
    chunks: list[ChunkRecord],
    batch: int = 256,
    progress: BuildProgress | None = None,
) -> np.ndarray:
    rows = []
    for i in range(0, len(chunks), batch):
        part = chunks[i : i + batch]
        rows.append(embedder.embed([f"{c.title}. {c.text}" if c.title else c.text for c in part]))
        if progress is not None:
            progress("embedding", i + len(part), len(chunks))
    return np.vstack(rows).astype(np.float32) if rows else np.zeros((0, 0), np.float32)


def _write(
    folder: Path, chunks: list[ChunkRecord], embeddings: np.ndarray | None, m: IndexManifest
) -> None:
    tmp = folder / "chunks.jsonl.tmp"
    with tmp.open("w", encoding="utf-8") as fh:
        for c in chunks:
            fh.write(c.model_dump_json() + "\n")
    retriever = bm25s.BM25(k1=m.bm25.k1, b=m.bm25.b, method=m.bm25.method)
    retriever.index(
        [tokenize(c.search_text(), m.bm25.stemmer) for c in chunks], show_progress=False
    )
    new_bm25, old_bm25 = folder / "bm25.tmp", folder / "bm25.old"
    for stale in (new_bm25, old_bm25):
        shutil.rmtree(stale, ignore_errors=True)
    retriever.save(str(new_bm25), show_progress=False)
    if embeddings is not None:
        with (folder / "embeddings.tmp.npy").open("wb") as fh:
            np.save(fh, embeddings)
        os.replace(folder / "embeddings.tmp.npy", folder / "embeddings.npy")
    os.replace(tmp, folder / "chunks.jsonl")
    if (folder / "bm25").exists():
        os.replace(folder / "bm25", old_bm25)
    os.replace(new_bm25, folder / "bm25")
    shutil.rmtree(old_bm25, ignore_errors=True)
    (folder / "manifest.json.tmp").write_text(m.model_dump_json(indent=2))
    os.replace(folder / "manifest.json.tmp", folder / "manifest.json")


def build_index(
    folder: Path,
    documents: Iterable[Document],
    *,
    mode: Mode = "hybrid",
    embedder: str | None = None,
    chunking: ChunkingConfig | None = None,
    bm25: BM25Params | None = None,
    overwrite: bool = False,
    progress: BuildProgress | None = None,
) -> IndexManifest:
    """Build a new index in `folder` from `documents`.

    Args:
        folder: the index folder (``<indexes_dir>/<name>``); its name is the index name.
        documents: documents to index (ids must be unique).
        mode: default search mode; ``dense`` and ``hybrid`` also compute embeddings.
        embedder: reference for `get_embedder` (default all-MiniLM-L6-v2); ignored for bm25.
        chunking: how to cut documents into passages.
        bm25: BM25 parameters.
        overwrite: replace an existing index instead of refusing.
        progress: told how far the build has got (see `BuildProgress`).

    Raises:
        IndexBuildError: the index exists (without `overwrite`), no documents, bad ids.
        EmbedderError: the embedding model cannot be loaded.
    """
    if (folder / "manifest.json").exists() and not overwrite:
        raise IndexBuildError(
            f"index {folder.name!r} already exists at {folder}; use `veracity index add` "
            "to add documents or --overwrite to rebuild it"
        )
    started = time.perf_counter()
    chunking = chunking or ChunkingConfig()
    if chunking.overlap >= chunking.max_words:
        raise IndexBuildError("chunk overlap must be smaller than the chunk size")
    records, added, _ = _chunk_documents(documents, chunking, set(), progress)
    if not records:
        raise IndexBuildError("no documents to index")
    now = _dt.datetime.now(_dt.timezone.utc)
    manifest = IndexManifest(
        name=folder.name,
        default_mode=mode,
        chunking=chunking,
        bm25=bm25 or BM25Params(),
        created_at=now,
        updated_at=now,
    )
    embeddings = None
    if mode != "bm25":
        ref = embedder or "all-MiniLM-L6-v2"
        model = get_embedder(ref)
        t0 = time.perf_counter()
        embeddings = _embed(model, records, progress=progress)
        manifest.embed_seconds = round(time.perf_counter() - t0, 3)
        manifest.embedder, manifest.embedder_name = ref, model.name
        manifest.dim = int(embeddings.shape[1])
    manifest.documents, manifest.chunks = added, len(records)
    if progress is not None:
        progress("writing", 0, None)
    with locked(folder, exclusive=True):
        if overwrite and (folder / "embeddings.npy").exists() and embeddings is None:
            (folder / "embeddings.npy").unlink()
        manifest.build_seconds = round(time.perf_counter() - started, 3)
        _write(folder, records, embeddings, manifest)
    return manifest


def add_to_index(folder: Path, documents: Iterable[Document]) -> tuple[IndexManifest, int, int]:
    """Add documents whose ids are not yet indexed; returns (manifest, added, skipped)."""
    started = time.perf_counter()
    if not (folder / "manifest.json").is_file():
        raise missing_index(folder.name, folder)
    with locked(folder, exclusive=True):
        index = LocalIndex.load(folder, lock=False)
        m = index.manifest.model_copy(deep=True)
        records, added, skipped = _chunk_documents(documents, m.chunking, index.parent_ids)
        if not records:
            return m, 0, skipped
        embeddings = None
        if m.has_embeddings:
            t0 = time.perf_counter()
            new = _embed(get_embedder(m.embedder), records)
            embeddings = np.vstack([np.asarray(index.embeddings), new])
            m.embed_seconds = round(m.embed_seconds + time.perf_counter() - t0, 3)
        chunks = index.chunks + records
        m.documents += added
        m.chunks = len(chunks)
        m.updated_at = _dt.datetime.now(_dt.timezone.utc)
        m.build_seconds = round(m.build_seconds + time.perf_counter() - started, 3)
        _write(folder, chunks, embeddings, m)
    return m, added, skipped
