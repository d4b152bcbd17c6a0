"""Persistent evidence memory (MERMAID's long-term memory, with semantic recall).

Evidence found while checking one claim is stored under the entities it concerns (the
subjects and objects of the decomposed claim) together with the search query, the
source and timestamps. Before checking a later claim, an agent recalls evidence by its
entities: by exact name, by normalised name ("The U.N." ~ "u n"), and by embedding
similarity of entity names above a threshold, so "WHO" can find evidence stored under
"World Health Organization" when the embedder places them close. Identical searches
can be replayed from memory (`lookup_search`), which is counted as a search saved.

Design points:
- namespaces keep evaluation splits (or users) apart in one database file;
- a time-to-live hides stale evidence; `purge_expired` deletes it;
- the same document (same URL and text) is stored once and linked to every entity;
- counters for recalls, hits, misses and searches saved live in the database;
- one SQLite connection in WAL mode behind a lock: safe across threads; the ``a*``
  methods run in a worker thread for async callers.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone

import numpy as np

from veracity.core import context
from veracity.core.events import MemoryAccess
from veracity.core.types import Document
from veracity.evidence.memory_db import EvidenceMemoryError, SharedConnection
from veracity.evidence.memory_models import (
    MatchKind,
    MemoryConfig,
    MemoryHit,
    MemoryStats,
)
from veracity.nlp.embeddings import Embedder, get_embedder
from veracity.nlp.entities import normalise_entity

__all__ = [
    "EvidenceMemory",
    "EvidenceMemoryError",
    "MatchKind",
    "MemoryConfig",
    "MemoryHit",
    "MemoryStats",
    "normalise_entity",
]


def _now() -> float:
    return time.time()


def _fingerprint(doc: Document) -> str:
    url = (doc.url or "").strip().lower().rstrip("/")
    body = " ".join(f"{doc.title} {doc.text}".split()).casefold()
    return hashlib.sha256(f"{url}\n{body}".encode()).hexdigest()


def _query_key(query: str) -> str:
    return " ".join(query.split()).casefold()


_RANK = {"exact": 0, "normalised": 1, "semantic": 2}


class EvidenceMemory:
    """SQLite-backed evidence memory bound to one namespace.

    Args:
        config: options; keyword overrides are applied on top.
        embedding_model: an embedder object to use instead of loading ``config.embedder``.
        **overrides: fields of `MemoryConfig`.

    Raises:
        ValueError: no ``path`` given (nothing here picks a default location).
        EvidenceMemoryError: the database cannot be opened.
        StorageError: it is damaged, its folder read-only or the disk full (naming the
            file and the fix).
    """

    def __init__(
        self,
        config: MemoryConfig | None = None,
        *,
        embedding_model: Embedder | None = None,
        **overrides: object,
    ):
        base = (config or MemoryConfig()).model_dump()
        base.update(overrides)
        self.config = MemoryConfig.model_validate(base)
        if self.config.path is None:  # the home's default is the caller's to pass
            raise ValueError("EvidenceMemory needs a path (e.g. HomePaths.default_memory)")
        self.path = self.config.path
        self.namespace = self.config.namespace
        self._embedder = embedding_model if self.config.embedder is not None else None
        self._shared = SharedConnection.open(self.path)
        self._vectors: tuple[tuple[int, int], list[str], np.ndarray] | None = None

    def with_namespace(self, namespace: str) -> EvidenceMemory:
        """A view of the same database in another namespace."""
        return EvidenceMemory(self.config, embedding_model=self._embedder, namespace=namespace)

    @property
    def embedder(self) -> Embedder | None:
        if self._embedder is None and self.config.embedder is not None:
            self._embedder = get_embedder(self.config.embedder)
        return self._embedder

    # ----------------------------------------------------------------- storing

    def store(
        self,
        entities: Iterable[str],
        documents: Iterable[Document],
        *,
        query: str | None = None,
        source: str | None = None,
    ) -> int:
        """File `documents` under every entity; returns how many were new.

        A document already stored (same URL and text) is linked to the new entities and
        marked as seen now instead of being stored again. With `query` and `source`, the
        search itself is remembered too, so `lookup_search` can replay it.
        """
        names = {e.strip(): normalise_entity(e) for e in entities if e and e.strip()}
        names = {raw: norm for raw, norm in names.items() if norm}
        docs = list(documents)
        vectors = self._embed_new([n for n in dict.fromkeys(names.values())])
        now = _now()
        with self._shared.transaction() as db:
            ids, new = self._upsert(db, docs, query, source, now)
            dup = len(ids) - new
            db.executemany(
                "INSERT OR IGNORE INTO entity_link VALUES (?,?,?,?)",
                [(self.namespace, norm, raw, i) for raw, norm in names.items() for i in ids],
            )
            db.executemany(
                "INSERT OR REPLACE INTO entity_vec VALUES (?,?,?,?)",
                [(self.namespace, n, self._embedder_key(), v.tobytes()) for n, v in vectors],
            )
            if vectors:
                self._shared.vec_version += 1
            if query and source:
                db.execute(
                    "INSERT OR REPLACE INTO searches VALUES (?,?,?,?,?)",
                    (self.namespace, _query_key(query), source, json.dumps(ids), now),
                )
            self._bump(db, stored=new, duplicates=dup)
        context.current().emit(
            MemoryAccess(
                name="evidence_memory",
                action="store",
                new=new,
                duplicates=dup,
                entities=list(names),
            )
        )
        return new

    def _upsert(
        self,
        db: sqlite3.Connection,
        docs: list[Document],
        query: str | None,
        source: str | None,
        now: float,
    ) -> tuple[list[int], int]:
        """Row ids of `docs` (inserting new ones, touching known ones) and how many were new."""
        ids: list[int] = []
        new = 0
        for doc in docs:
            key = _fingerprint(doc)
            row = db.execute(
                "SELECT id FROM evidence WHERE namespace=? AND fingerprint=?",
                (self.namespace, key),
            ).fetchone()
            if row:
                db.execute("UPDATE evidence SET last_seen=? WHERE id=?", (now, row[0]))
                ids.append(row[0])
                continue
            cur = db.execute(
                "INSERT INTO evidence (namespace, fingerprint, document, query, source,"
                " created_at, last_seen) VALUES (?,?,?,?,?,?,?)",
                (self.namespace, key, doc.model_dump_json(), query, source, now, now),
            )
            ids.append(int(cur.lastrowid or 0))
            new += 1
        return ids, new

    # ----------------------------------------------------------------- recall

    def recall(self, entities: Iterable[str], *, limit: int | None = None) -> list[MemoryHit]:
        """Evidence filed under these entities (exact, normalised or similar names).

        Each entity contributes at most ``max_per_entity`` items, newest first; the
        result holds at most `limit` (default ``max_results``) distinct documents,
        strongest matches first. Expired evidence is never returned.
        """
        asked = [e.strip() for e in entities if e and e.strip()]
        targets: dict[str, tuple[str, MatchKind, float]] = {}  # entity_norm -> (asked, kind, sim)
        for raw in asked:
            norm = normalise_entity(raw)
            if norm:
                targets.setdefault(norm, (raw, "normalised", 1.0))
        for norm, raw, sim in self._similar(list(targets)):
            targets.setdefault(norm, (raw, "semantic", sim))
        hits = self._fetch(targets)
        hits.sort(key=lambda h: (_RANK[h.match], -h.similarity, -h.stored_at.timestamp()))
        out: dict[str, MemoryHit] = {}
        for hit in hits:
            out.setdefault(hit.document.id + "\x00" + (hit.document.url or ""), hit)
        result = list(out.values())[: limit or self.config.max_results]
        with self._shared.transaction() as db:
            self._bump(db, recalls=1, hits=int(bool(result)), misses=int(not result))
        context.current().emit(
            MemoryAccess(name="evidence_memory", action="recall", entities=asked, hits=len(result))
        )
        return result

    def _fetch(self, targets: dict[str, tuple[str, MatchKind, float]]) -> list[MemoryHit]:
        cutoff = _now() - self.config.ttl_s if self.config.ttl_s else 0.0
        hits: list[MemoryHit] = []
        with self._shared.lock:
            db = self._shared.db
            for norm, (raw, kind, sim) in targets.items():
                rows = db.execute(
                    "SELECT l.entity, e.document, e.query, e.source, e.last_seen"
                    " FROM entity_link l JOIN evidence e ON e.id = l.evidence_id"
                    " WHERE l.namespace=? AND l.entity_norm=? AND e.last_seen>=?"
                    " ORDER BY e.last_seen DESC, e.id DESC LIMIT ?",
                    (self.namespace, norm, cutoff, self.config.max_per_entity),
                ).fetchall()
                for entity, doc, query, source, seen in rows:
                    match: MatchKind = "exact" if kind != "semantic" and entity == raw else kind
                    hits.append(
                        MemoryHit(
                            document=Document.model_validate_json(doc),
                            entity=entity,
                            matched=raw,
                            match=match,
                            similarity=round(float(sim), 4),
                            query=query,
                            source=source,
                            stored_at=datetime.fromtimestamp(seen, tz=timezone.utc),
                        )
                    )
        return hits

    def _embedder_key(self) -> str:
        model = self.embedder
        return model.name if model is not None else ""

    def _embed_new(self, norms: Sequence[str]) -> list[tuple[str, np.ndarray]]:
        model = self.embedder
        if model is None or not norms:
            return []
        with self._shared.lock:
            have = {
                r[0]
                for r in self._shared.db.execute(
                    "SELECT entity_norm FROM entity_vec WHERE namespace=? AND embedder=?",
                    (self.namespace, model.name),
                )
            }
        todo = [n for n in norms if n not in have]
        if not todo:
            return []
        return list(zip(todo, np.asarray(model.embed(todo), dtype=np.float32), strict=True))

    def _similar(self, norms: list[str]) -> list[tuple[str, str, float]]:
        """(stored entity_norm, asked entity, similarity) above the threshold."""
        model = self.embedder
        if model is None or not norms:
            return []
        names, matrix = self._load_vectors(model.name)
        if not names:
            return []
        asked = np.asarray(model.embed(norms), dtype=np.float32)
        sims = asked @ matrix.T
        out = []
        for row, norm in zip(sims, norms, strict=True):
            for j in np.flatnonzero(row >= self.config.similarity_threshold):
                if names[j] != norm:
                    out.append((names[j], norm, float(row[j])))
        out.sort(key=lambda t: -t[2])
        return out

    def _load_vectors(self, key: str) -> tuple[list[str], np.ndarray]:
        with self._shared.lock:
            count = self._shared.db.execute(
                "SELECT COUNT(*) FROM entity_vec WHERE namespace=? AND embedder=?",
                (self.namespace, key),
            ).fetchone()[0]
            version = (self._shared.vec_version, count)
            if self._vectors is None or self._vectors[0] != version:
                rows = self._shared.db.execute(
                    "SELECT entity_norm, vector FROM entity_vec WHERE namespace=? AND embedder=?",
                    (self.namespace, key),
                ).fetchall()
                names = [r[0] for r in rows]
                matrix = (
                    np.stack([np.frombuffer(r[1], dtype=np.float32) for r in rows])
                    if rows
                    else np.zeros((0, 0), dtype=np.float32)
                )
                self._vectors = (version, names, matrix)
            return self._vectors[1], self._vectors[2]

    # ----------------------------------------------------------------- searches

    def lookup_search(self, query: str, source: str) -> list[Document] | None:
        """Documents an identical earlier search returned, or None when not remembered.

        A replayed search counts as a search saved and is recorded in the check's trace
        as a cached search of ``memory:<source>``.
        """
        cutoff = _now() - self.config.ttl_s if self.config.ttl_s else 0.0
        with self._shared.lock:
            row = self._shared.db.execute(
                "SELECT evidence_ids FROM searches WHERE namespace=? AND query_key=?"
                " AND source=? AND created_at>=?",
                (self.namespace, _query_key(query), source, cutoff),
            ).fetchone()
            if row is None:
                return None
            ids = json.loads(row[0])
            marks = ",".join("?" * len(ids))
            found = dict(
                self._shared.db.execute(
                    f"SELECT id, document FROM evidence WHERE id IN ({marks})", ids
                ).fetchall()
            )
        docs = [Document.model_validate_json(found[i]) for i in ids if i in found]
        with self._shared.transaction() as db:
            self._bump(db, searches_saved=1)
        context.current().record_search(
            name=f"memory:{source}", cached=True, query=query, results=[d.id for d in docs]
        )
        return docs

    # ----------------------------------------------------------------- upkeep

    def purge_expired(self) -> int:
        """Delete evidence older than the TTL in this namespace; returns how many."""
        if not self.config.ttl_s:
            return 0
        cutoff = _now() - self.config.ttl_s
        with self._shared.transaction() as db:
            n = db.execute(
                "DELETE FROM evidence WHERE namespace=? AND last_seen<?", (self.namespace, cutoff)
            ).rowcount
            db.execute(
                "DELETE FROM searches WHERE namespace=? AND created_at<?", (self.namespace, cutoff)
            )
            self._bump(db, purged=n)
        return n

    def clear(self) -> int:
        """Delete everything in this namespace (evidence, links, vectors, counters)."""
        with self._shared.transaction() as db:
            n = db.execute("DELETE FROM evidence WHERE namespace=?", (self.namespace,)).rowcount
            for table in ("entity_link", "entity_vec", "searches", "counters"):
                db.execute(f"DELETE FROM {table} WHERE namespace=?", (self.namespace,))
            self._shared.vec_version += 1
        self._vectors = None
        return n

    def stats(self) -> MemoryStats:
        with self._shared.lock:
            db, ns = self._shared.db, self.namespace
            counts = dict(db.execute("SELECT name, value FROM counters WHERE namespace=?", (ns,)))
            entries = db.execute("SELECT COUNT(*) FROM evidence WHERE namespace=?", (ns,))
            entities = db.execute(
                "SELECT COUNT(DISTINCT entity_norm) FROM entity_link WHERE namespace=?", (ns,)
            )
            n_entries, n_entities = entries.fetchone()[0], entities.fetchone()[0]
        names = ("stored", "duplicates", "recalls", "hits", "misses", "searches_saved", "purged")
        return MemoryStats(
            namespace=ns,
            entries=n_entries,
            entities=n_entities,
            **{k: int(counts.get(k, 0)) for k in names},
        )

    def _bump(self, db: sqlite3.Connection, **deltas: int) -> None:
        db.executemany(
            "INSERT INTO counters VALUES (?,?,?) ON CONFLICT(namespace, name)"
            " DO UPDATE SET value = value + excluded.value",
            [(self.namespace, k, v) for k, v in deltas.items() if v],
        )

    # ----------------------------------------------------------------- async

    async def astore(self, entities: Iterable[str], documents: Iterable[Document], **kw) -> int:
        return await asyncio.to_thread(self.store, list(entities), list(documents), **kw)

    async def arecall(self, entities: Iterable[str], **kw) -> list[MemoryHit]:
        return await asyncio.to_thread(self.recall, list(entities), **kw)

    async def alookup_search(self, query: str, source: str) -> list[Document] | None:
        return await asyncio.to_thread(self.lookup_search, query, source)
