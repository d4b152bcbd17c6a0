"""SQLite plumbing of the evidence memory: schema and a shared, locked connection."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import ClassVar

from veracity.core.errors import EvidenceMemoryError
from veracity.core.infra import open_sqlite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS evidence (
    id INTEGER PRIMARY KEY, namespace TEXT NOT NULL, fingerprint TEXT NOT NULL,
    document TEXT NOT NULL, query TEXT, source TEXT,
    created_at REAL NOT NULL, last_seen REAL NOT NULL, UNIQUE (namespace, fingerprint));
CREATE TABLE IF NOT EXISTS entity_link (
    namespace TEXT NOT NULL, entity_norm TEXT NOT NULL, entity TEXT NOT NULL,
    evidence_id INTEGER NOT NULL REFERENCES evidence(id) ON DELETE CASCADE,
    PRIMARY KEY (namespace, entity_norm, evidence_id));
CREATE TABLE IF NOT EXISTS entity_vec (
    namespace TEXT NOT NULL, entity_norm TEXT NOT NULL, embedder TEXT NOT NULL,
    vector BLOB NOT NULL, PRIMARY KEY (namespace, entity_norm, embedder));
CREATE TABLE IF NOT EXISTS searches (
    namespace TEXT NOT NULL, query_key TEXT NOT NULL, source TEXT NOT NULL,
    evidence_ids TEXT NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (namespace, query_key, source));
CREATE TABLE IF NOT EXISTS counters (
    namespace TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL,
    PRIMARY KEY (namespace, name));
"""


class SharedConnection:
    """One SQLite connection per database file in this process, shared behind a lock."""

    _open: ClassVar[dict[Path, SharedConnection]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, path: Path):
        try:
            self.db = open_sqlite(path, autocommit=True, what="evidence memory")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(_SCHEMA)
        except (OSError, sqlite3.Error) as exc:
            raise EvidenceMemoryError(f"cannot open evidence memory at {path}: {exc}") from exc
        self.lock = threading.RLock()
        self.vec_version = 0  # bumped when entity vectors are written (cache invalidation)

    @classmethod
    def open(cls, path: Path) -> SharedConnection:
        key = path.expanduser().resolve()
        with cls._registry_lock:
            if key not in cls._open:
                cls._open[key] = cls(key)
            return cls._open[key]

    def transaction(self) -> _Transaction:
        """A write transaction (BEGIN IMMEDIATE) holding the lock; rolls back on error."""
        return _Transaction(self)


class _Transaction:
    def __init__(self, conn: SharedConnection):
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.lock.acquire()
        try:
            self.conn.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            self.conn.lock.release()
            raise EvidenceMemoryError(f"evidence memory is busy or unusable: {exc}") from exc
        return self.conn.db

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self.conn.db.execute("COMMIT")
            else:
                self.conn.db.execute("ROLLBACK")
        finally:
            self.conn.lock.release()
