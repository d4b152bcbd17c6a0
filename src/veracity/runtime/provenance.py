"""Where a run came from, as its run record keeps it (`veracity.runtime.record`): the
package version, and the source revision when the package runs from a git checkout (an
editable install; absent otherwise, never an error).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path


def package_version() -> str | None:
    """The installed veracity version (None when it is not installed as a package)."""
    try:
        return metadata.version("veracity")
    except metadata.PackageNotFoundError:
        return None


def source_revision(start: Path | None = None) -> str | None:
    """The git commit of the checkout the package runs from, or None (an installed wheel,
    no git metadata, anything unreadable). Reads ``.git`` directly: no git process."""
    here = (start or Path(__file__)).resolve()
    for folder in list(here.parents)[:5]:  # src/veracity/runtime/provenance.py
        git = folder / ".git"
        if git.exists():
            try:
                return _head(git)
            except (OSError, ValueError):
                return None
    return None


def _head(git: Path) -> str | None:
    if git.is_file():  # a worktree: "gitdir: PATH"
        target = git.read_text(encoding="utf-8").strip().removeprefix("gitdir:").strip()
        git = (git.parent / target).resolve()
    head = (git / "HEAD").read_text(encoding="utf-8").strip()
    if not head.startswith("ref:"):
        return head or None  # a detached head holds the commit itself
    ref = head.removeprefix("ref:").strip()
    common = git / "commondir"
    roots = [git] + ([(git / common.read_text().strip()).resolve()] if common.is_file() else [])
    for root in roots:
        loose = root / ref
        if loose.is_file():
            return loose.read_text(encoding="utf-8").strip() or None
        packed = root / "packed-refs"
        if packed.is_file():
            for line in packed.read_text(encoding="utf-8").splitlines():
                sha, _, name = line.partition(" ")
                if name == ref:
                    return sha
    return None
