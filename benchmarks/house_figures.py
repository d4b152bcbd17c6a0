"""Figures of the package's shape (issue 39): arrows running back up the house, imports
hidden inside functions, and which layers use each foundation module.

Run: python benchmarks/house_figures.py [--list]

- **Arrows up**: direct imports (importer module -> imported module, counted once per pair,
  imports inside functions and TYPE_CHECKING blocks included) from a module of a lower
  layer to a module of a higher one, by the layer order of ``.importlinter``'s layers
  contract, *ignoring* that contract's ``ignore_imports`` (the exemptions are what is
  counted). The package's ``__init__`` (the public API) stands with the highest layer.
- **Imports inside functions**: ``import``/``from ... import`` statements nested in a
  function of ``src/veracity`` (all modules, and those naming a ``veracity`` module), and
  those that hide nothing: every veracity module they name is loaded anyway when their
  own module is imported (its top-level imports, followed), and none of those loads
  their module back, so the import could stand at the top without slowing start-up or
  making a cycle (``--list`` names them).
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


class _Imports:
    """The package's imports read from the source: each module's top-level imports (those
    that run when it is imported; ``if TYPE_CHECKING:`` blocks left out) and the import
    statements inside its functions (one in a nested function counted once)."""

    def __init__(self, src: Path = SRC):
        self.src = src
        self.paths = {self.name(p): p for p in sorted((src / PACKAGE).rglob("*.py"))}
        self.top: dict[str, set[str]] = {}
        self.inner: dict[str, list[tuple[int, str, list[str]]]] = {}
        for module, path in self.paths.items():
            tree = ast.parse(path.read_text(encoding="utf-8"))
            package = path.name == "__init__.py"
            top: set[str] = set()
            self._top(tree.body, module, package, top)
            self.top[module] = {t for t in top if t.split(".")[0] == PACKAGE}
            seen: set[int] = set()
            inner = []
            for fn in ast.walk(tree):
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    continue
                for node in ast.walk(fn):
                    if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in seen:
                        seen.add(id(node))
                        named = self.targets(module, node, package)
                        inner.append((node.lineno, ast.unparse(node), named))
            self.inner[module] = inner
        self._closures: dict[str, set[str]] = {}

    def name(self, path: Path) -> str:
        parts = list(path.relative_to(self.src).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    def targets(self, module: str, node: ast.Import | ast.ImportFrom, package: bool) -> list:
        """The modules an import statement names (a name that is a module counts)."""
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = node.module or ""
        if node.level:
            parts = module.split(".")[: None if package else -1]
            parts = parts[: len(parts) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in self.paths]
        return [base, *subs]

    def _top(self, body: list[ast.stmt], module: str, package: bool, out: set[str]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update(self.targets(module, node, package))
            elif isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                self._top(node.body, module, package, out)
                self._top(node.orelse, module, package, out)
            elif isinstance(node, ast.Try):
                self._top(node.body, module, package, out)

    def loaded_with(self, module: str) -> set[str]:
        """The veracity modules importing `module` loads (its packages' too)."""
        if module not in self._closures:
            seen: set[str] = set()
            todo = [module]
            while todo:
                current = todo.pop()
                parts = current.split(".")
                for m in [".".join(parts[:i]) for i in range(1, len(parts) + 1)]:
                    if m not in seen:
                        seen.add(m)
                        todo.extend(self.top.get(m, ()))
            self._closures[module] = seen
        return self._closures[module]

    def counts(self) -> tuple[int, int, list[str]]:
        """(imports inside functions, those naming a veracity module, and those that hide
        nothing: each module they name is loaded anyway with their own module, and none
        of them loads their module back, so the import could stand at the top)."""
        total = ours = 0
        idle = []
        for module, inner in self.inner.items():
            for line, text, named in inner:
                total += 1
                named = [n for n in named if n.split(".")[0] == PACKAGE]
                if not named:
                    continue
                ours += 1
                loaded = self.loaded_with(module)
                if set(named) <= loaded and not any(module in self.loaded_with(n) for n in named):
                    idle.append(f"{module}:{line} {text}")
        return total, ours, idle


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
    total, ours, idle = _Imports().counts()
    print(f"imports inside functions: {total} (naming a veracity module: {ours}; hiding")
    print(f"  nothing: {len(idle)}, the module named is loaded with theirs anyway)")
    if args.list:
        for line in idle:
            print(f"    {line}")
    print("foundation modules and the parts that import them:")
    for name, parts in sorted(foundation_users(graph).items()):
        print(f"  {name}: {len(parts)} ({', '.join(sorted(parts)) or '-'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
