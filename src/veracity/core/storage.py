"""Faults of the files veracity keeps, each told in one message naming the file and the fix.

SQLite stores (the LLM and HTTP caches, the evidence memory, the server's job database)
and run files fail in a few ways: the file is damaged or not a database, its folder is
read-only, the disk is full, or the device fails. `storage_error` turns what SQLite or
the OS raised into a `StorageError` that says which, and what to do (`fault` makes one).
`move_aside` renames a damaged cache out of the way (with a timestamp) so a new one can
be built in its place; `write_atomically` replaces a file whole or not at all and leaves
no temp file behind; `check_store` opens an existing store read-only and checks its
integrity (for `veracity doctor`); `StoreHealth` remembers a store's last fault for
readiness probes. `StoreConnection`, the connection `veracity.core.infra.open_sqlite` makes
for every SQLite store, applies all this to each statement, commit and fetch.

This module imports only `veracity.core.errors`, so every layer may use it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shlex
import shutil
import sqlite3
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Literal

from veracity.core.errors import StorageError

Kind = Literal["corrupt", "read-only", "full", "io"]
LOW_SPACE_BYTES = 1024**2  # less free space than this: writes fail, the disk counts as full
ROOMY_BYTES = 16 * 1024**2  # after a full disk, this much free space counts as room again
LARGE_STORE_BYTES = 512 * 1024**2  # doctor checks bigger stores by header and schema only

# SQLite's primary result codes (the low byte of an extended code)
_SQLITE_CORRUPT = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN = 8, 10, 13, 14
_OS_KINDS: dict[int, Kind] = {
    errno.ENOSPC: "full",
    errno.EDQUOT: "full",
    errno.EFBIG: "full",
    errno.EROFS: "read-only",
    errno.EACCES: "read-only",
    errno.EPERM: "read-only",
    errno.EIO: "io",
}


def fault_kind(exc: BaseException, folder: Path | None = None) -> Kind | None:
    """Which storage fault `exc` is (None: not one, e.g. a busy database or a bad query).

    Args:
        exc: what SQLite or the OS raised.
        folder: where the file lives; an I/O error on a full disk counts as ``full``, a
            file that cannot be opened in a read-only folder as ``read-only``.
    """
    if isinstance(exc, OSError):
        return _OS_KINDS.get(exc.errno or 0)
    if not isinstance(exc, sqlite3.Error):
        return None
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    primary = code & 0xFF if isinstance(code, int) else None
    text = str(exc).lower()
    if primary in _SQLITE_CORRUPT or "not a database" in text or "malformed" in text:
        return "corrupt"
    if primary == _SQLITE_FULL or "disk is full" in text:
        return "full"
    if primary == _SQLITE_READONLY or "readonly database" in text:
        return "read-only"
    if primary == _SQLITE_CANTOPEN or "unable to open" in text:
        return "read-only" if folder is not None and not writable(folder) else "io"
    if primary == _SQLITE_IOERR or "disk i/o error" in text:
        return "full" if folder is not None and low_space(folder) else "io"
    return None


def storage_error(exc: BaseException, path: Path, what: str) -> StorageError | None:
    """`exc` told as a `StorageError` naming `path` and the fix (None: not a storage fault).

    Args:
        exc: what SQLite or the OS raised.
        path: the file being opened, read or written.
        what: what the file is, in words ("LLM cache", "job database", "results file").
    """
    path = Path(path)
    kind = fault_kind(exc, path.parent)
    if kind is None:
        return None
    return fault(kind, path, what, exc)


def fault(kind: Kind, path: Path, what: str, exc: BaseException | None = None) -> StorageError:
    """A `StorageError` of `kind` on `path`: its message says what happened, then what to
    do (`StorageError.fix`)."""
    problem, fix = _parts(kind, path, what, exc)
    return StorageError(f"{problem}. {fix}", path=path, kind=kind, fix=fix)


def _parts(kind: Kind, path: Path, what: str, exc: BaseException | None) -> tuple[str, str]:
    why = f" ({_reason(exc)})" if exc is not None else ""
    elsewhere = "(VERACITY_HOME, or the command's output or data directory option)"
    if kind == "corrupt":
        aside = f"mv {shlex.quote(str(path))} {shlex.quote(f'{path}.bad')}"
        return (
            f"the {what} {path} is damaged or not a SQLite database{why}",
            f"Move it aside ({aside}) or restore it from a backup; a new, empty one is "
            "then made in its place",
        )
    if kind == "read-only":
        return (
            f"cannot write the {what} {path}: {_nearest(path.parent)} is read-only{why}",
            f"Make it writable, or point veracity at a writable folder {elsewhere}",
        )
    if kind == "full":
        return (
            f"no space left to write the {what} {path}{why}{_free_text(path.parent)}",
            f"Free some disk space, or point veracity at a disk with room {elsewhere}",
        )
    return (
        f"cannot read or write the {what} {path}{why}",
        "Check the disk, and keep the file on a local file system (SQLite's locks fail on "
        "many network file systems)",
    )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _free_text(folder: Path) -> str:
    free = free_bytes(folder)
    return "" if free is None else f"; {free / 1024**2:.1f} MB free there"


def free_bytes(folder: Path) -> int | None:
    """Free bytes on the disk holding `folder` (or its nearest existing parent)."""
    try:
        return shutil.disk_usage(_nearest(folder)).free
    except OSError:
        return None


def _nearest(folder: Path) -> Path:
    """`folder`, or its nearest parent that exists."""
    where = Path(folder)
    while not where.exists() and where != where.parent:
        where = where.parent
    return where


def low_space(folder: Path) -> bool:
    """Less than `LOW_SPACE_BYTES` free where `folder` is."""
    free = free_bytes(folder)
    return free is not None and free < LOW_SPACE_BYTES


def writable(folder: Path) -> bool:
    """Files can be created in `folder` (or, when it does not exist yet, its parent)."""
    where = _nearest(folder)
    try:
        if os.statvfs(where).f_flag & os.ST_RDONLY:
            return False
    except (OSError, AttributeError):
        pass
    return os.access(where, os.W_OK | os.X_OK)


def move_aside(path: Path) -> Path:
    """Rename a damaged store (and its -wal and -journal files) to
    ``NAME.corrupt-<UTC time>``; drop its -shm file, which SQLite rebuilds. Returns the new
    path of the store."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.rename(path, target)
    for suffix in ("-wal", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.rename(f"{path}{suffix}", f"{target}{suffix}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(f"{path}-shm")
    return target


def write_atomically(path: Path, write: Callable[[IO[str]], None], what: str) -> None:
    """Write `path` through `write(file)`, replacing it whole or not at all.

    The text goes to a temp file beside `path` that replaces it once complete and synced; when
    anything fails the temp file is removed, and a storage fault is raised as a
    `StorageError` naming `path`.

    Raises:
        StorageError: the disk is full, the folder read-only, or the device failing.
    """
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp")
    try:
        with tmp.open("w", encoding="utf-8") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        fault = storage_error(exc, path, what) if isinstance(exc, OSError) else None
        if fault is not None:
            raise fault from exc
        raise


def check_store(path: Path, what: str) -> StorageError | None:
    """Open an existing SQLite store read-only and check its integrity (None: it is sound).

    Stores over `LARGE_STORE_BYTES` get a header and schema check only: a full check
    reads every page and would take minutes.
    """
    path = Path(path)
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error as exc:
        return storage_error(exc, path, what) or fault("io", path, what, exc)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        if path.stat().st_size <= LARGE_STORE_BYTES:
            problems = [r[0] for r in conn.execute("PRAGMA quick_check(5)").fetchall()]
            if problems != ["ok"]:
                found = " ".join(" ".join(problems).split())  # one line
                raise sqlite3.DatabaseError(f"malformed: {found[:200]}")
    except sqlite3.Error as exc:
        if "locked" in str(exc) or "busy" in str(exc):
            return None  # another process is writing it: usable, checked another time
        return storage_error(exc, path, what) or fault("io", path, what, exc)
    finally:
        conn.close()
    return None


def sqlite_writable(folder: Path) -> str | None:
    """None when a SQLite database can be written in `folder` (which is created)."""
    scratch = folder / f".doctor-{os.getpid()}.sqlite"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(scratch, timeout=5)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE t (x INTEGER)")
            conn.execute("INSERT INTO t VALUES (1)")
            conn.commit()
        finally:
            conn.close()
        return None
    except (OSError, sqlite3.Error) as exc:
        return str(exc)
    finally:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                Path(f"{scratch}{suffix}").unlink(missing_ok=True)


class StoreHealth:
    """The last storage fault a store hit, for readiness probes.

    A fault ends when a write to the store succeeds again, or (``full``) once the disk
    has `ROOMY_BYTES` free, or (``read-only``) once the folder is writable again;
    ``corrupt`` and ``io`` otherwise last until the process restarts (the operator must
    act). With no fault recorded, a disk with less than `LOW_SPACE_BYTES` free already
    counts as ``full``.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.fault: StorageError | None = None

    def failed(self, fault: StorageError) -> None:
        self.fault = fault

    def wrote(self) -> None:
        """A write succeeded: whatever the fault was, it is over."""
        self.fault = None

    def state(self) -> str:
        """``ok``, or the kind of fault (``full``, ``read-only``, ``corrupt``, ``io``)."""
        folder = self.path.parent
        if self.fault is None:
            return "full" if low_space(folder) else "ok"
        kind = self.fault.kind
        free = free_bytes(folder)
        roomy = free is not None and free >= ROOMY_BYTES
        if (kind == "full" and roomy) or (kind == "read-only" and writable(folder)):
            self.fault = None
            return "ok"
        return kind


class StoreConnection(sqlite3.Connection):
    """A connection whose storage faults raise `StorageError` naming its file and the fix,
    on statements, commits and fetches alike (`open_sqlite` makes them)."""

    store_path: Path
    store_what: str
    health: StoreHealth

    def _fault(self, exc: sqlite3.Error) -> StorageError | None:
        fault = storage_error(exc, self.store_path, self.store_what)
        if fault is not None:
            self.health.failed(fault)
        return fault

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        try:
            cursor = self.cursor(_StoreCursor).execute(sql, parameters)
        except sqlite3.Error as exc:
            if (fault := self._fault(exc)) is None:
                raise
            raise fault from exc
        if self.health.fault is not None and not self.in_transaction and _writes(sql):
            self.health.wrote()  # a write went through to the file: the fault is over
        return cursor

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor:
        try:
            return self.cursor(_StoreCursor).executemany(sql, parameters)
        except sqlite3.Error as exc:
            if (fault := self._fault(exc)) is None:
                raise
            raise fault from exc

    def executescript(self, script: str, /) -> sqlite3.Cursor:
        try:
            return super().executescript(script)
        except sqlite3.Error as exc:
            if (fault := self._fault(exc)) is None:
                raise
            raise fault from exc

    def commit(self) -> None:
        pending = self.in_transaction
        try:
            super().commit()
        except sqlite3.Error as exc:
            if (fault := self._fault(exc)) is None:
                raise
            raise fault from exc
        if pending and self.health.fault is not None:
            self.health.wrote()


def _writes(sql: str) -> bool:
    return sql.lstrip()[:6].upper() in ("INSERT", "UPDATE", "DELETE", "REPLAC", "COMMIT")


class _StoreCursor(sqlite3.Cursor):
    """A cursor of a `StoreConnection`: a fault met while fetching is told the same way."""

    def _fault(self, exc: sqlite3.Error) -> StorageError | None:
        conn = self.connection
        return conn._fault(exc) if isinstance(conn, StoreConnection) else None

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            if (fault := self._fault(exc)) is None:
                raise
            raise fault from exc

    def fetchmany(self, size: int | None = None) -> list[Any]:
        try:
            return super().fetchmany(self.arraysize if size is None else size)
        except sqlite3.Error as exc:
            if (fault := self._fault(exc)) is None:
                raise
            raise fault from exc

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            if (fault := self._fault(exc)) is None:
                raise
            raise fault from exc

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            if (fault := self._fault(exc)) is None:
                raise
            raise fault from exc
