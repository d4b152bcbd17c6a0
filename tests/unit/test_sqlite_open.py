"""Opening the SQLite stores: when several processes create one at once, and their storage
faults (a damaged file, a full disk, a read-only folder) told as one `StorageError`."""

from __future__ import annotations

import errno
import os
import sqlite3

import pytest

from veracity.core import storage
from veracity.core.errors import StorageError
from veracity.core.infra import _enable_wal, open_sqlite
from veracity.core.storage import StoreHealth, fault_kind, write_atomically


class _Refusing:
    """A connection whose journal-mode switch is refused `n` times, as SQLite does when
    another process holds the lock at that moment."""

    def __init__(self, n: int, message: str = "database is locked"):
        self.n, self.message, self.calls = n, message, 0

    def execute(self, sql: str):
        self.calls += 1
        if self.calls <= self.n:
            raise sqlite3.OperationalError(self.message)


def test_wal_switch_is_retried_while_the_database_is_locked():
    conn = _Refusing(3)
    _enable_wal(conn, timeout_s=5)  # type: ignore[arg-type]
    assert conn.calls == 4


def test_wal_switch_gives_up_at_the_time_limit_and_other_errors_pass_at_once():
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _enable_wal(_Refusing(10**6), timeout_s=0.05)  # type: ignore[arg-type]
    other = _Refusing(1, "disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        _enable_wal(other, timeout_s=5)  # type: ignore[arg-type]
    assert other.calls == 1


def test_open_sqlite_gives_a_wal_database(tmp_path):
    conn = open_sqlite(tmp_path / "a" / "c.sqlite", "CREATE TABLE IF NOT EXISTS t (x)")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# ---------------------------------------------------------------- storage faults


GARBAGE = bytes(range(256)) * 16


def test_a_garbage_cache_is_moved_aside_and_a_new_one_started(tmp_path, caplog):
    path = tmp_path / "llm.sqlite"
    path.write_bytes(GARBAGE)
    with caplog.at_level("WARNING", logger="veracity.core.storage"):
        conn = open_sqlite(path, "CREATE TABLE IF NOT EXISTS t (x)", what="LLM cache", rebuild=True)
    conn.execute("INSERT INTO t VALUES (1)")
    conn.commit()
    moved = list(tmp_path.glob("llm.sqlite.corrupt-*"))
    assert [m.read_bytes() for m in moved] == [GARBAGE]
    assert "LLM cache" in caplog.text and str(moved[0]) in caplog.text


def test_a_garbage_store_that_is_not_a_cache_is_refused_and_kept(tmp_path):
    path = tmp_path / "jobs.sqlite"
    path.write_bytes(GARBAGE)
    with pytest.raises(StorageError) as caught:
        open_sqlite(path, "CREATE TABLE IF NOT EXISTS t (x)", what="job database")
    assert caught.value.kind == "corrupt" and caught.value.path == path
    assert str(caught.value).startswith(f"the job database {path} is damaged")
    assert f"mv {path}" in caught.value.fix
    assert path.read_bytes() == GARBAGE and list(tmp_path.iterdir()) == [path]


def test_a_full_database_names_the_file_and_a_later_write_ends_the_fault(tmp_path):
    path = tmp_path / "jobs.sqlite"
    conn = open_sqlite(path, "CREATE TABLE IF NOT EXISTS t (x)", autocommit=True,
                       what="job database")  # fmt: skip
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count={pages + 2}")  # SQLite's own "database or disk is full"
    with pytest.raises(StorageError) as caught:
        conn.execute("INSERT INTO t VALUES (?)", (b"x" * 100_000,))
    assert caught.value.kind == "full" and str(path) in str(caught.value)
    assert "Free some disk space" in caught.value.fix
    assert conn.health.fault is caught.value
    conn.execute("INSERT INTO t VALUES (1)")  # room again
    assert conn.health.fault is None and conn.health.state() == "ok"


def test_a_busy_database_is_not_a_storage_fault(tmp_path):
    path = tmp_path / "db.sqlite"
    first = open_sqlite(path, "CREATE TABLE IF NOT EXISTS t (x)", autocommit=True)
    first.execute("BEGIN IMMEDIATE")
    second = open_sqlite(path, autocommit=True, timeout_s=0.05)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        second.execute("INSERT INTO t VALUES (1)")
    assert second.health.fault is None
    first.execute("ROLLBACK")


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (OSError(errno.ENOSPC, "No space left on device"), "full"),
        (OSError(errno.EDQUOT, "Disk quota exceeded"), "full"),
        (OSError(errno.EROFS, "Read-only file system"), "read-only"),
        (OSError(errno.EACCES, "Permission denied"), "read-only"),
        (OSError(errno.EIO, "Input/output error"), "io"),
        (OSError(errno.ENOENT, "No such file"), None),
        (sqlite3.DatabaseError("file is not a database"), "corrupt"),
        (sqlite3.DatabaseError("database disk image is malformed"), "corrupt"),
        (sqlite3.OperationalError("database or disk is full"), "full"),
        (sqlite3.OperationalError("attempt to write a readonly database"), "read-only"),
        (sqlite3.OperationalError("database is locked"), None),
        (sqlite3.OperationalError("no such table: t"), None),
        (ValueError("not storage"), None),
    ],
)
def test_fault_kinds(exc, kind):
    assert fault_kind(exc) == kind


def test_an_atomic_write_on_a_full_disk_leaves_the_old_file_and_no_temp_file(tmp_path):
    path = tmp_path / "out.jsonl"
    path.write_text("old\n")

    def write(f):
        f.write("new\n")
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(StorageError) as caught:
        write_atomically(path, write, "results file")
    assert caught.value.kind == "full" and f"results file {path}" in str(caught.value)
    assert path.read_text() == "old\n" and sorted(tmp_path.iterdir()) == [path]


def test_store_health_counts_a_nearly_full_disk_as_full(tmp_path, monkeypatch):
    health = StoreHealth(tmp_path / "jobs.sqlite")
    assert health.state() == "ok"
    monkeypatch.setattr(storage, "free_bytes", lambda folder: 1000)
    assert health.state() == "full"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_folder_is_named_with_the_fix(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(StorageError) as caught:
            open_sqlite(folder / "cache" / "llm.sqlite", what="LLM cache")
    finally:
        folder.chmod(0o755)
    assert caught.value.kind == "read-only" and "writable" in caught.value.fix
