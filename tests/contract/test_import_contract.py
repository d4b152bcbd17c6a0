"""The layers of docs/design.md hold in the source tree, and the checks catch breaches.

import-linter checks the contracts of ``.importlinter``; `import_contract` runs it and
checks the one rule it cannot express (no ambient settings below veracity.runtime).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from import_contract import SETTINGS_RULE, lint, settings_reads, unlayered

SRC = Path(__file__).resolve().parents[2] / "src"

LAYERS = "Layers: a module imports its own layer and those below it, never one above"
CYCLES = "No import cycle between the top-level parts (nor between the foundation's modules)"
METHODS = "No method imports another (only the shared plumbing of veracity.methods)"
TESTING = "Only veracity.testing imports veracity.testing (tests live outside the package)"
COMMANDS = "A method's commands module is loaded through its entry points, never imported"
FRONT_ENDS = "Front ends reach the machinery only through veracity.runtime"
SOURCES = "Methods use sources through the Source protocol, never a source implementation"


def test_the_source_tree_keeps_the_import_contract():
    report = lint(SRC)
    assert not report.broken, "import contract broken:\n" + report.details()
    reads = settings_reads(SRC)
    assert not reads, "import contract broken:\n" + "\n".join(map(str, reads))


def test_every_top_level_part_and_foundation_module_has_a_layer():
    assert not unlayered(SRC), f"not in any layer of .importlinter: {unlayered(SRC)}"


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    shutil.copytree(SRC / "veracity", tmp_path / "veracity")
    return tmp_path


def _plant(root: Path, module: str, line: str) -> None:
    path = root / (module.replace(".", "/") + ".py")
    if not path.is_file():
        path = path.with_suffix("") / "__init__.py"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("module", "line", "contract", "named"),
    [
        ("veracity.retrieval.base", "from veracity.methods.base import BaseMethod", LAYERS, ""),
        ("veracity.llm.cache", "import veracity.deliberation.debate", LAYERS, ""),
        ("veracity.methods.radar.pool", "from veracity.methods.zofia import config", METHODS, ""),
        ("veracity.methods.rag", "from veracity.methods.react import ReActMethod", METHODS, ""),
        (
            "veracity.evidence.memory",
            "def f():\n    from veracity.testing import ScriptedLLM",
            TESTING,
            "",
        ),
        ("veracity.cli.app", "import veracity.testing", TESTING, "veracity.cli.app"),
        (
            "veracity.retrieval.local.corpus",
            "from veracity.datasets import get_dataset",
            LAYERS,
            "",
        ),
        ("veracity.core.infra", "from veracity.core import types", LAYERS, "veracity.core.infra"),
        ("veracity.llm.cache", "from .. import methods", LAYERS, "veracity.llm.cache"),
        # the package's __init__ (the public API) stands above every layer
        ("veracity.llm.cache", "from veracity import check", LAYERS, "veracity.llm.cache"),
        ("veracity.nlp.text", "from veracity.evidence import memory", CYCLES, ".nlp"),
        ("veracity.core.errors", "from veracity.core import storage", CYCLES, ".errors"),
        ("veracity.methods.radar.method", "from veracity.cli.methods import radar", COMMANDS, ""),
        ("veracity.cli.app", "import veracity.cli.methods.toe", COMMANDS, ""),
        (
            "veracity.methods.radar.calibration",
            "from veracity.cli.app import console",
            LAYERS,
            "veracity.methods.radar.calibration",
        ),
        # a method learns the checked claim's binding from its context, not from the source
        (
            "veracity.methods.folk.method",
            "from veracity.retrieval.recorded.source import RecordedSource",
            SOURCES,
            "veracity.methods.folk.method",
        ),
        (
            "veracity.methods.zofia.retrieval",
            "def f():\n    from veracity.retrieval.engines.wikipedia import WikipediaSource",
            SOURCES,
            "veracity.methods.zofia.retrieval",
        ),
    ],
)
def test_a_planted_violation_is_caught(planted, module, line, contract, named):
    _plant(planted, module, line)
    report = lint(planted)
    assert contract in report.broken, f"{line!r} in {module} went unnoticed:\n{report.text}"
    assert named in report.details()


@pytest.mark.parametrize(
    ("module", "line"),
    [
        (
            "veracity.core.infra",
            "from veracity.core.config import settings\n_HOME = settings().home",
        ),
        (
            "veracity.methods.rag",
            "def f():\n    from veracity.core import config as c\n    return c.settings()",
        ),
        (
            "veracity.llm.cache",
            "from veracity.core.config import LLMConfig as L\nCFG = L.from_settings()",
        ),
        (
            "veracity.methods.checkpoints",
            "import veracity.core.config\nHOME = veracity.core.config.settings().home",
        ),
        ("veracity.documents", "from veracity.core.config import settings as s\nX = s()"),
        # the foundation's config module holds values and reads nothing either
        ("veracity.core.config", "import os\nX = os.environ.get('VERACITY_OFFLINE', '')"),
        ("veracity.retrieval.base", "import os\nX = os.getenv('VERACITY_DATA_DIR')"),
        ("veracity.llm.cache", "from os import environ\nX = environ['VERACITY_HOME']"),
        ("veracity.core.config", "from pydantic_settings import BaseSettings"),
        ("veracity.nlp", "import pydantic_settings"),
    ],
)
def test_reading_settings_below_the_composition_root_is_caught(planted, module, line):
    _plant(planted, module, line)
    found = settings_reads(planted)
    assert [r.module for r in found] == [module], [str(r) for r in found]
    assert SETTINGS_RULE in str(found[0])


def test_the_composition_root_and_entry_points_may_read_settings(planted):
    line = "from veracity.core.config import settings\n_HOME = settings().home"
    for module in ("veracity.runtime.home", "veracity.cli.app", "veracity.doctor"):
        _plant(planted, module, line)
    _plant(planted, "veracity.cli.methods.radar", line)
    _plant(planted, "veracity.datasets.fetch", "import os\nX = os.environ.get('VERACITY_HOME')")
    # a method named `settings` of another object is not the environment's, a variable
    # of another name is not a setting, and a message may name a variable
    _plant(planted, "veracity.llm.cache", "def f(server):\n    return server.settings()")
    _plant(planted, "veracity.nlp", "import os\nos.environ.setdefault('HF_HUB_OFFLINE', '1')")
    _plant(planted, "veracity.core.errors", "X = 'set VERACITY_DATA_DIR'.upper()")
    assert not settings_reads(planted)


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
    report = lint(planted)
    assert report.broken == (FRONT_ENDS,), report.text
    assert f"{module} -> " in report.details()


def test_the_harness_doctor_and_exempt_front_ends_may_use_the_machinery(planted):
    line = "from veracity.llm.base import LLM"
    for module in ("veracity.cli.index", "veracity.doctor", "veracity.evaluation.runner"):
        _plant(planted, module, line)
    report = lint(planted)
    assert not report.broken, report.details()


def test_a_part_in_no_layer_is_caught(planted):
    (planted / "veracity/core/newpart.py").write_text("X = 1\n", encoding="utf-8")
    (planted / "veracity/widgets").mkdir()
    (planted / "veracity/widgets/__init__.py").write_text("", encoding="utf-8")
    assert unlayered(planted) == ["veracity.widgets", "veracity.core.newpart"]
