"""docs/baselines.md and the method READMEs say the same about each compared system."""

import re
from pathlib import Path

from veracity.cli.plain_listing import GROUPS

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| [^|]+\(\[`([a-z_0-9]+)`\]\(methods/\1\.md\)\) \|.*\| ([a-z ()-]+) \|$")


def rows() -> dict[str, str]:
    text = (ROOT / "docs" / "baselines.md").read_text(encoding="utf-8")
    found = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            found[match.group(1)] = match.group(2).split(" (")[0]
    return found


def fidelity(method: str) -> str:
    """The README's fidelity line, which opens its first paragraphs."""
    text = (ROOT / "src" / "veracity" / "methods" / method / "README.md").read_text("utf-8")
    head = " ".join(text.split("\n\n")[:3])
    start = head.index("**Fidelity:")
    return head[start : head.index("**", start + 2) + 2].lower()


def compared_systems() -> set[str]:
    """The methods `veracity methods` lists as compared systems (one list for both)."""
    return next(set(names) for title, names in GROUPS if title.startswith("Compared systems"))


def test_every_compared_system_has_one_row_whose_verdict_its_readme_states():
    table = rows()
    assert set(table) == compared_systems()
    for method, verdict in table.items():
        assert verdict in ("faithful", "reconstruction"), (method, verdict)
        line = fidelity(method)
        assert verdict in line, (method, verdict, line)
        other = "reconstruction" if verdict == "faithful" else "faithful"
        assert other not in line, (method, verdict, line)
