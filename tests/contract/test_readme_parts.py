"""The README's "Where things are" stays true: one row for every top-level part of the
package, each in the layer ``.importlinter`` puts it in (layer 1 the highest; the
foundation's two tiers are one row, ``core/``)."""

from __future__ import annotations

import re
from pathlib import Path

from import_contract import contracts

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "veracity"
ROW = re.compile(r"^\| (\d+) \| (.+?) \| .+ \|$")


def readme_layers() -> dict[str, int]:
    """Each part the README's section names, with its layer number."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    found: dict[str, int] = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            for part in re.findall(r"`([^`]+)`", match.group(2)):
                name = part.removesuffix("/").removesuffix(".py")
                assert name not in found, f"{name} is named twice"
                found[name] = int(match.group(1))
    return found


def contract_layers() -> dict[str, int]:
    """Each top-level part with its layer in the layers contract (the foundation's
    modules are one part, ``core``, in the last layer)."""
    raw = contracts()["importlinter:contract:layers"]["layers"]
    rows = [line for line in raw.splitlines() if line.strip()]
    found: dict[str, int] = {}
    for number, row in enumerate(rows, start=1):
        for module in re.split(r"[:|]", row):
            part = module.strip().split(".")[1]
            found.setdefault(part, number)
    return found


def test_every_part_is_in_the_readme_in_its_layer():
    parts = {
        p.stem if p.suffix == ".py" else p.name
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" or (p / "__init__.py").is_file()) and p.stem != "__init__"
    }
    parts.discard("__main__")  # `python -m veracity`, the command line's other door
    named = readme_layers()
    assert set(named) == parts
    layers = contract_layers()
    wrong = {part: (number, layers[part]) for part, number in named.items()
             if number != layers[part]}  # fmt: skip
    assert not wrong, f"README layer != .importlinter layer: {wrong}"
