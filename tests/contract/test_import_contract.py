"""The layers of DESIGN.md hold in the source tree, and the checker catches breaches."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from import_contract import LAYERS, check_tree

SRC = Path(__file__).resolve().parents[2] / "src"


def test_the_source_tree_keeps_the_import_contract():
    violations = check_tree(SRC)
    assert not violations, "import contract broken:\n" + "\n".join(map(str, violations))


def test_every_top_level_part_has_a_layer():
    parts = {p.stem if p.is_file() else p.name for p in (SRC / "veracity").iterdir()}
    parts = {p for p in parts if not p.startswith(".") and p not in ("py", "__pycache__")}
    placed = set().union(*LAYERS)
    assert parts - {"__init__", "__main__"} <= placed, parts - placed


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    shutil.copytree(SRC / "veracity", tmp_path / "veracity")
    return tmp_path


def _plant(root: Path, module: str, line: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("module", "line", "rule"),
    [
        ("veracity.retrieval.base", "from veracity.methods.base import BaseMethod", "higher layer"),
        ("veracity.llm.cache", "import veracity.deliberation.debate", "higher layer"),
        ("veracity.methods.radar.pool", "from veracity.methods.zofia import config", "another"),
        ("veracity.methods.rag", "from veracity.methods.react import ReActMethod", "another"),
        (
            "veracity.evidence.memory",
            "def f():\n    from veracity.testing import ScriptedLLM",
            "only tests",
        ),
        (
            "veracity.retrieval.local.corpus",
            "from veracity.datasets import get_dataset",
            "higher layer",
        ),
        ("veracity.core.infra", "from veracity.core import types", "higher layer"),
        ("veracity.nlp.text", "from veracity.evidence import memory", "import cycle"),
    ],
)
def test_a_planted_violation_is_caught(planted, module, line, rule):
    _plant(planted, module, line)
    violations = check_tree(planted)
    assert violations, f"{line!r} in {module} went unnoticed"
    assert any(rule in v.rule for v in violations), [str(v) for v in violations]


def test_relative_and_package_imports_resolve(tmp_path):
    pkg = tmp_path / "veracity"
    (pkg / "llm").mkdir(parents=True)
    (pkg / "methods").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "llm" / "__init__.py").write_text("from .. import methods\n")
    (pkg / "methods" / "__init__.py").write_text("")
    violations = check_tree(tmp_path)
    assert [v.imported for v in violations] == ["veracity.methods"]
