"""A method's command-line front end (``veracity.cli.methods.<m>``) lives above the
machinery and is loaded through entry points only, never imported; nothing in
``veracity.methods`` imports the layers above it (import-linter: ``.importlinter``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import tomllib
from import_contract import lint

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
COMMANDS = "A method's commands module is loaded through its entry points, never imported"
LAYERS = "Layers: a module imports its own layer and those below it, never one above"
FRONT_END_GROUPS = ("veracity.commands", "veracity.run_options")


def test_method_front_ends_live_in_the_command_line_package():
    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    groups = entry_points["project"]["entry-points"]
    targets = [value for g in FRONT_END_GROUPS for value in groups[g].values()]
    assert targets
    assert all(t.startswith("veracity.cli.methods.") for t in targets), targets
    assert not sorted((SRC / "veracity/methods").rglob("commands.py"))


def test_a_method_front_end_left_in_its_method_package_is_caught(tmp_path):
    # what every method's commands module did before they moved to veracity.cli.methods
    shutil.copytree(SRC / "veracity", tmp_path / "veracity")
    path = tmp_path / "veracity/methods/radar/commands.py"
    path.write_text("from veracity.cli.app import console\n", encoding="utf-8")
    report = lint(tmp_path)
    assert LAYERS in report.broken, report.text
    assert "veracity.methods.radar.commands -> veracity.cli.app" in report.details()


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("veracity.methods.radar.method", "from veracity.cli.methods import radar"),
        ("veracity.cli.app", "import veracity.cli.methods.toe"),
        ("veracity.evaluation.advfact", "from veracity.cli.methods.toe import train_toe"),
    ],
)
def test_importing_a_method_front_end_is_caught(tmp_path, module, line):
    shutil.copytree(SRC / "veracity", tmp_path / "veracity")
    path = tmp_path / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    report = lint(tmp_path)
    assert COMMANDS in report.broken, report.text
    assert f"{module} -> " in report.details()
