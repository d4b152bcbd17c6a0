"""Figures of the package's shape (issue 39): arrows running back up the house, imports
hidden inside functions, and which layers use each foundation module.

Run: python benchmarks/house_figures.py [--list]

- **Arrows up**: direct imports (importer module -> imported module, counted once per pair,
  imports inside functions and TYPE_CHECKING blocks included) from a module of a lower
  layer to a module of a higher one, by the layer order of ``.importlinter``'s layers
  contract, *ignoring* that contract's ``ignore_imports`` (the exemptions are what is
  counted). The package's ``__init__`` (the public API) stands with the highest layer.
- **Imports inside functions**: ``import``/``from ... import`` statements nested in a
  function of ``src/veracity`` (all modules, and those naming a ``veracity`` module).
- **Foundation users**: for each module of ``veracity.core``, the top-level parts that
  import it directly (a module that serves one part belongs in that part).

The figures are read from the source tree (grimp, import-linter's graph builder; ``ast``),
so they need no model and run in a few seconds.
"""

from __future__ import annotations

import argparse
import ast
import configparser
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = "veracity"


def layers(config: Path = ROOT / ".importlinter") -> list[list[str]]:
    """The layers contract's layers, highest first, each a list of module names."""
    parser = configparser.ConfigParser()
    parser.read(config, encoding="utf-8")
    raw = parser["importlinter:contract:layers"]["layers"]
    rows = [line.strip() for line in raw.splitlines() if line.strip()]
    return [[m.strip() for m in re.split(r"[:|]", row) if m.strip()] for row in rows]


def layer_of(module: str, table: list[list[str]]) -> int | None:
    """The index of `module`'s layer (0 is the highest, where the package's own
    ``__init__``, the public API, stands too), or None when no layer names it or an
    ancestor."""
    if module == PACKAGE:
        return 0
    best: tuple[int, int] | None = None  # (length of the matching name, layer)
    for index, row in enumerate(table):
        for name in row:
            matches = module == name or module.startswith(name + ".")
            if matches and (best is None or len(name) > best[0]):
                best = (len(name), index)
    return None if best is None else best[1]


def arrows_up(graph: grimp.ImportGraph, table: list[list[str]]) -> list[tuple[str, str]]:
    """Every direct import from a lower layer to a higher one, sorted."""
    found = []
    for importer in graph.modules:
        low = layer_of(importer, table)
        if low is None:
            continue
        for imported in graph.find_modules_directly_imported_by(importer):
            high = layer_of(imported, table)
            if high is not None and high < low:
                found.append((importer, imported))
    return sorted(found)


def function_imports(src: Path = SRC) -> tuple[int, int]:
    """Import statements inside a function (one in a nested function counted once):
    (all, those naming a veracity module)."""
    total = ours = 0
    for path in sorted((src / PACKAGE).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        seen: set[int] = set()
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(fn):
                if id(inner) in seen or not isinstance(inner, (ast.Import, ast.ImportFrom)):
                    continue
                seen.add(id(inner))
                total += 1
                if isinstance(inner, ast.Import):
                    ours += any(a.name.split(".")[0] == PACKAGE for a in inner.names)
                else:
                    ours += bool(inner.level) or (inner.module or "").split(".")[0] == PACKAGE
    return total, ours


def foundation_users(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    """Each ``veracity.core`` module with the top-level parts that import it directly."""
    users: dict[str, set[str]] = defaultdict(set)
    for module in graph.modules:
        if not module.startswith(PACKAGE + ".core."):
            continue
        top = module.split(".")[2]
        name = f"{PACKAGE}.core.{top}"
        users.setdefault(name, set())
        for importer in graph.find_modules_that_directly_import(module):
            parts = importer.split(".")
            if parts[:2] == [PACKAGE, "core"]:
                continue
            users[name].add(parts[1] if len(parts) > 1 else PACKAGE)
    return dict(users)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--list", action="store_true", help="print every arrow up")
    args = parser.parse_args()
    sys.path.insert(0, str(SRC))
    graph = grimp.build_graph(PACKAGE, include_external_packages=False, cache_dir=None)
    table = layers()
    arrows = arrows_up(graph, table)
    by_part = Counter(
        (a.split(".")[1], b.split(".")[1] if "." in b else PACKAGE) for a, b in arrows
    )
    print(f"arrows up (module pairs): {len(arrows)}")
    print(f"arrows up (part pairs): {len(by_part)}")
    for (low, high), n in sorted(by_part.items()):
        print(f"  {low} -> {high}: {n}")
    if args.list:
        for a, b in arrows:
            print(f"    {a} -> {b}")
    total, ours = function_imports()
    print(f"imports inside functions: {total} (naming a veracity module: {ours})")
    print("foundation modules and the parts that import them:")
    for name, parts in sorted(foundation_users(graph).items()):
        print(f"  {name}: {len(parts)} ({', '.join(sorted(parts)) or '-'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
