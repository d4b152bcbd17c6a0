"""The repository stands alone: no tracked file points at a folder beside the checkout.

Our own working layout keeps benchmark data, papers and notes in a sibling folder; users
have none of it. Product code reads data only from the data directory, docs cite papers by
their published reference, and the design document lives in `docs/`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SIBLING = "sha" + "red"  # spelled in two pieces so that this file does not match itself
PATTERN = re.compile(
    rf"\.\./{SIBLING}\b"  # ../<sibling>
    rf"|\b{SIBLING}/(data|papers|notes|tools|hooks|DESIGN)\b"  # <sibling>/data, ...
    rf"|[\"']{SIBLING}[\"']\s*/\s*[\"']data[\"']"  # Path(...) / "<sibling>" / "data"
)
# CI runs on our own machines, where the benchmark data sits beside the checkout; `.ci/run`
# hands that folder to the suite when it exists (and runs the data tests without it too).
ALLOWED = {".ci/run"}
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "__pycache__", ".pytest_cache", "build"}


def _tracked_files() -> list[Path]:
    """Files git tracks, or every file of the tree outside build folders (a tarball)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, timeout=30
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return [
            p
            for p in ROOT.rglob("*")
            if p.is_file() and not SKIP_DIRS & set(p.relative_to(ROOT).parts)
        ]
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_the_pattern_catches_each_form():
    for line in (
        f"see ../{SIBLING}/DESIGN.md",
        f"VERACITY_DATA_DIR=../{SIBLING}/data",
        f"the text in `{SIBLING}/papers/s2mad.txt`",
        f'Path.cwd().parent / "{SIBLING}" / "data"',
    ):
        assert PATTERN.search(line), line
    for line in ("a shared cache", "shared_limit", "the shared HTTP client", "shared/ folder"):
        assert not PATTERN.search(line), line


def test_no_tracked_file_names_a_folder_beside_the_checkout():
    files = _tracked_files()
    assert len(files) > 100  # the listing worked
    hits = []
    for path in files:
        if path.relative_to(ROOT).as_posix() in ALLOWED:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # binary (screenshots) or a file removed in the working tree
        for n, line in enumerate(text.splitlines(), 1):
            if PATTERN.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()[:120]}")
    assert not hits, "files point outside the repository:\n" + "\n".join(hits)
