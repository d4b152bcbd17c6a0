"""The scripts in benchmarks/ name only what veracity still has: every ``from veracity…
import NAME`` (at module level or inside a function) resolves. A rename in the package
(``core.config.data_dir`` moving to ``runtime.environment``) broke six of them once, and
nothing ran them to notice."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).parents[2] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_every_veracity_name_a_benchmark_imports_exists(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_try = {id(n) for t in ast.walk(tree) if isinstance(t, ast.Try) for n in ast.walk(t)}
    missing = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or id(node) in in_try:
            continue
        if not (node.module or "").startswith("veracity"):
            continue
        module = importlib.import_module(node.module)
        for alias in node.names:
            if not hasattr(module, alias.name):
                try:
                    importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    missing.append(f"{path.name}:{node.lineno} {node.module}.{alias.name}")
    assert not missing, missing
