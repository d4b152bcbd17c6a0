"""The layers of DESIGN.md hold in the source tree, and the checker catches breaches."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from import_contract import LAYERS, SETTINGS_RULE, check_tree

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
        (
            "veracity.retrieval.transport.http",
            "from veracity.core.config import settings\n_HOME = settings().home",
            "settings below veracity.runtime",
        ),
        (
            "veracity.methods.rag",
            "def f():\n    from veracity.core import config as c\n    return c.settings()",
            "settings below veracity.runtime",
        ),
        (
            "veracity.llm.cache",
            "from veracity.core.config import LLMConfig as L\nCFG = L.from_settings()",
            "settings below veracity.runtime",
        ),
        (
            "veracity.core.checkpoints",
            "import veracity.core.config\nHOME = veracity.core.config.settings().home",
            "settings below veracity.runtime",
        ),
    ],
)
def test_a_planted_violation_is_caught(planted, module, line, rule):
    _plant(planted, module, line)
    violations = check_tree(planted)
    assert violations, f"{line!r} in {module} went unnoticed"
    assert any(rule in v.rule for v in violations), [str(v) for v in violations]


def test_the_composition_root_and_entry_points_may_read_settings(planted):
    line = "from veracity.core.config import settings\n_HOME = settings().home"
    allowed = ("veracity.runtime.home", "veracity.cli.app", "veracity.doctor")
    for module in allowed:
        _plant(planted, module, line)
    # a method named `settings` of another object is not the environment's
    _plant(planted, "veracity.llm.cache", "def f(server):\n    return server.settings()")
    found = [v for v in check_tree(planted) if v.rule == SETTINGS_RULE]
    assert not [v for v in found if v.module in (*allowed, "veracity.llm.cache")]


def test_relative_and_package_imports_resolve(tmp_path):
    pkg = tmp_path / "veracity"
    (pkg / "llm").mkdir(parents=True)
    (pkg / "methods").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "llm" / "__init__.py").write_text("from .. import methods\n")
    (pkg / "methods" / "__init__.py").write_text("")
    violations = check_tree(tmp_path)
    assert [v.imported for v in violations] == ["veracity.methods"]


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("veracity.server.runs", "from veracity.methods.options import request_config"),
        ("veracity.api", "from veracity.llm.base import LLM"),
        ("veracity.cli.check", "def f():\n    from veracity.retrieval import registry_setup"),
        ("veracity.mcp.server", "import veracity.tools.evidence"),
        ("veracity.evaluation.batch", "from veracity.llm.client import ManagedLLM"),
    ],
)
def test_a_front_end_reaching_past_the_service_is_caught(planted, module, line):
    _plant(planted, module, line)
    caught = [v for v in check_tree(planted) if "only through veracity.runtime" in v.rule]
    assert [v.module for v in caught] == [module], [str(v) for v in caught]


def test_the_harness_doctor_and_exempt_front_ends_may_use_the_machinery(planted):
    line = "from veracity.llm.base import LLM"
    for module in ("veracity.cli.index", "veracity.doctor", "veracity.evaluation.runner"):
        _plant(planted, module, line)
    assert not [v for v in check_tree(planted) if "only through veracity.runtime" in v.rule]
