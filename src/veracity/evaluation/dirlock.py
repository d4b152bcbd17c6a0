"""One process at a time in a directory: an OS file lock (``flock``) on ``DIR/.lock``.

Run directories (`veracity eval`) and the server's data directory (`veracity serve`) use
it. The holder writes who it is (pid, host, since when) into the lock file, so a refused
process can say who holds the directory. The OS drops the lock when the holder exits,
killed or not: a lock file left behind by a dead process is never in the way.

Why not filelock: its native lock (``FileLock``, ``flock`` on POSIX as here) says only
that the lock is taken, not by whom: the holder's pid and host are kept only by its soft
fallback marker (its soft locks record an owner, but as a marker file that the OS does not
drop when the holder is killed), so a refusal could not name the run or server in the
way. And it has no
way to ask whether another process holds the lock without trying to take it: `holder`
probes with a shared lock, so ``veracity serve`` checking its data directory before it
says "serving" and the run store asking whether a run is live never take the directory,
nor see each other's probe as a holder, as an exclusive try-and-release would.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timezone
from pathlib import Path

from veracity.core.errors import DirLocked
from veracity.core.storage import storage_error

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt


def _try_lock(fd: int, shared: bool = False) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        else:  # pragma: no cover - Windows
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


class DirLock:
    """The exclusive lock of one directory.

    Args:
        folder: the directory (created on `acquire`).
        user: what holds it, as the refusal names it (e.g. "another veracity eval").
        hint: what the refused user can do (e.g. "choose another --out directory").
        error: the error raised when another process holds it.
    """

    def __init__(
        self,
        folder: Path,
        *,
        user: str = "another process",
        hint: str = "wait for it to finish or stop it",
        error: type[DirLocked] = DirLocked,
    ):
        self.path = folder / ".lock"
        self.user = user
        self.hint = hint
        self.error = error
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock (no-op when held).

        Raises:
            DirLocked: (or the configured subclass) another process holds it; the
                message names its pid, host and start time.
            StorageError: the lock file cannot be written (a read-only folder, a full
                disk).
        """
        if self._fd is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:  # a read-only folder, a full disk: named, with the fix
            if (fault := storage_error(exc, self.path, "lock file")) is None:
                raise
            raise fault from exc
        if not _try_lock(fd):
            holder = _holder(fd)
            os.close(fd)
            raise self._refusal(holder)
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}, since {stamp}\n".encode())
        except OSError as exc:
            os.close(fd)
            if (fault := storage_error(exc, self.path, "lock file")) is None:
                raise
            raise fault from exc
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the descriptor drops the lock

    def holder(self) -> str | None:
        """Who holds the lock when another process does (pid, host, since), else None."""
        if self._fd is not None or not self.path.is_file():
            return None
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return None if _try_lock(fd, shared=True) else _holder(fd)
        finally:
            os.close(fd)

    def held_elsewhere(self) -> bool:
        """Whether another process holds the lock right now."""
        return self.holder() is not None

    def ensure_free(self) -> None:
        """Raise the refusal `acquire` would raise now, without taking the lock."""
        holder = self.holder()
        if holder is not None:
            raise self._refusal(holder)

    def _refusal(self, holder: str) -> DirLocked:
        return self.error(f"{self.path.parent} is in use by {self.user} ({holder}); {self.hint}")


def _holder(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    text = os.read(fd, 200).decode("utf-8", "replace").strip()
    return text or "a process that has not said who it is"
