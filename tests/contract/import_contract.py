"""The import contract of docs/design.md: import-linter checks it (``.importlinter`` at the
repository root holds the contracts); this module runs it and checks what it cannot
express.

import-linter (`lint-imports`) checks, on every import including those inside functions
and TYPE_CHECKING blocks, and on chains of imports:

1. layers (a module imports its own layer and those below, never one above);
2. no import cycle between the top-level parts, nor between the foundation's modules;
3. no method imports another (only the shared plumbing of ``veracity.methods``);
4. only ``veracity.testing`` imports ``veracity.testing``;
5. a method's command-line front end (``veracity.cli.methods.<m>``, loaded through the
   ``veracity.commands`` and ``veracity.run_options`` entry points) is never imported;
6. the front ends reach the machinery only through ``veracity.runtime``.

Checked here, because import-linter looks at imports and not at calls or at which
modules a contract leaves out:

- the environment is read in ``runtime``: a module of a layer below ``runtime`` (the
  foundation included: ``veracity.core.config`` holds values, no reader) never reads a
  ``VERACITY_*`` variable (``os.environ[...]``, ``os.environ.get(...)``,
  ``os.getenv(...)``), never imports ``pydantic_settings`` (a settings class reads the
  environment when it is made), and never calls a ``settings()`` or ``from_settings()``
  of ``veracity.core.config``; ``veracity.runtime.environment`` reads it and the
  composition root passes paths, switches and model settings down;
- every top-level part and every foundation module is in a layer.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / ".importlinter"
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")  # the environment's script


@dataclass(frozen=True)
class Report:
    """What `lint-imports` said: the names of the broken contracts and its full text."""

    broken: tuple[str, ...]
    text: str

    def details(self) -> str:
        """The broken contracts with the imports that break them (file lines included)."""
        _, sep, tail = self.text.partition("Broken contracts")
        return (sep + tail).strip() if sep else self.text.strip()


def lint(root: Path) -> Report:
    """Run import-linter on the package ``root/veracity`` with the repository's contracts.

    Raises:
        RuntimeError: import-linter itself failed (a contract that no longer parses, a
            layer naming a module that is gone).
    """
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "1000"}  # one line a contract
    done = subprocess.run(
        [str(LINT_IMPORTS) if LINT_IMPORTS.exists() else "lint-imports", "--no-cache", str(CONFIG)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = done.stdout + done.stderr
    broken = tuple(
        m.group(1).strip() for m in re.finditer(r"^(.+?) BROKEN\b", text, flags=re.MULTILINE)
    )
    if done.returncode not in (0, 1) or (done.returncode == 1 and not broken):
        raise RuntimeError(f"lint-imports failed (exit {done.returncode}):\n{text[-3000:]}")
    return Report(broken, text)


def contracts() -> configparser.ConfigParser:
    parser = configparser.ConfigParser()
    parser.read(CONFIG, encoding="utf-8")
    return parser


def layered_modules() -> set[str]:
    """Every module the layers contract names."""
    raw = contracts()["importlinter:contract:layers"]["layers"]
    return {m.strip() for line in raw.splitlines() for m in re.split(r"[:|]", line) if m.strip()}


def unlayered(root: Path) -> list[str]:
    """Top-level parts and foundation modules of ``root/veracity`` that no layer names."""
    named = layered_modules()
    missing = []
    for package in ("veracity", "veracity.core"):
        folder = root / package.replace(".", "/")
        for child in sorted(folder.iterdir()):
            name = child.stem if child.suffix == ".py" else child.name
            is_module = child.suffix == ".py" or (child / "__init__.py").is_file()
            if not is_module or name == "__init__":
                continue
            module = f"{package}.{name}"
            if module not in named and module != "veracity.core":
                missing.append(module)
    return missing


# --- no ambient settings below veracity.runtime -------------------------------------------

CONFIG_MODULE = "veracity.core.config"
SETTINGS_READERS = frozenset({"settings", "from_settings"})  # functions that read VERACITY_*
SETTINGS_RULE = "reads the environment's settings below veracity.runtime (pass it down)"
ENV_PREFIX = "VERACITY_"
SETTINGS_PACKAGE = "pydantic_settings"  # a BaseSettings class reads the environment
# the layers at and above the composition root, where reading the environment is its job
AT_OR_ABOVE_RUNTIME = (
    "veracity.runtime", "veracity.datasets", "veracity.api", "veracity.evaluation",
    "veracity.cli", "veracity.server", "veracity.mcp", "veracity.testing", "veracity.doctor",
    "veracity.__main__",
)  # fmt: skip


@dataclass(frozen=True, order=True)
class SettingsRead:
    module: str
    line: int

    what: str = f"calls {CONFIG_MODULE}.settings()"

    def __str__(self) -> str:
        return f"{self.module}:{self.line} {self.what} — {SETTINGS_RULE}"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def below_runtime(module: str) -> bool:
    if module == "veracity":
        return False  # the package's __init__ is an entry point
    return not any(module == m or module.startswith(m + ".") for m in AT_OR_ABOVE_RUNTIME)


def settings_reads(root: Path) -> list[SettingsRead]:
    """Reads of the environment in modules below ``runtime``: calls of
    `SETTINGS_READERS`, ``VERACITY_*`` variables read, `SETTINGS_PACKAGE` imported."""
    found = []
    for path in sorted((root / "veracity").rglob("*.py")):
        module = module_name(path, root)
        if not below_runtime(module):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for line in settings_calls(tree, module, path.name == "__init__.py"):
            found.append(SettingsRead(module, line))
        for line, what in environment_reads(tree):
            found.append(SettingsRead(module, line, what))
    return sorted(found)


def environment_reads(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each ``VERACITY_*`` variable read through ``os.environ`` or
    ``os.getenv`` (its name a literal), and each import of `SETTINGS_PACKAGE`."""

    def named(node: ast.expr | None) -> str | None:
        ok = isinstance(node, ast.Constant) and isinstance(node.value, str)
        return node.value if ok and node.value.startswith(ENV_PREFIX) else None

    def is_environ(node: ast.expr) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
            isinstance(node, ast.Name) and node.id == "environ"
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_environ(node.value) and named(node.slice):
            yield node.lineno, f"reads {named(node.slice)}"
        elif isinstance(node, ast.Call) and node.args and named(node.args[0]):
            func = node.func
            getenv = (isinstance(func, ast.Attribute) and func.attr == "getenv") or (
                isinstance(func, ast.Name) and func.id == "getenv"
            )
            environ_get = (
                isinstance(func, ast.Attribute)
                and func.attr in ("get", "pop", "setdefault")
                and is_environ(func.value)
            )
            if getenv or environ_get:
                yield node.lineno, f"reads {named(node.args[0])}"
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n.split(".")[0] == SETTINGS_PACKAGE for n in names):
                yield node.lineno, f"imports {SETTINGS_PACKAGE}"


def settings_calls(tree: ast.AST, module: str, is_package: bool) -> Iterator[int]:
    """Lines that call ``settings()`` or ``X.from_settings()``, where the name was imported
    from `CONFIG_MODULE` (directly, as the module, or as a class of it)."""
    package = module if is_package else module.rpartition(".")[0]
    direct: set[str] = set()  # names bound to a settings reader
    owners: set[str] = set()  # names bound to the config module or one of its classes
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = node.module or ""
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                bound = alias.asname or alias.name
                if target == CONFIG_MODULE and alias.name in SETTINGS_READERS:
                    direct.add(bound)
                elif target == CONFIG_MODULE or f"{target}.{alias.name}" == CONFIG_MODULE:
                    owners.add(bound)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == CONFIG_MODULE and alias.asname:
                    owners.add(alias.asname)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        named = isinstance(func, ast.Name) and func.id in direct
        reached = (
            isinstance(func, ast.Attribute)
            and func.attr in SETTINGS_READERS
            and _root_name(func.value) in owners | {"veracity"}
        )
        if named or reached:
            yield node.lineno


def _root_name(node: ast.expr) -> str | None:
    """The leftmost name of ``a.b.c`` (``a``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None
