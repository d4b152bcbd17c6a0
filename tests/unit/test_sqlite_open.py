"""Opening the SQLite caches when several processes create one at once."""

from __future__ import annotations

import sqlite3

import pytest

from veracity.infra import _enable_wal, open_sqlite


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
