"""A method's ``commands`` module (its command-line front end) is an entry point, loaded
through entry points only, never imported (import-linter: ``.importlinter``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from import_contract import command_packages, lint

SRC = Path(__file__).resolve().parents[2] / "src"
COMMANDS = "A method's commands module is loaded through its entry points, never imported"


def test_a_methods_commands_module_is_one_module():
    assert (SRC / "veracity/methods/radar/commands.py").is_file()
    assert not command_packages(SRC)


def test_a_commands_package_is_caught(tmp_path):
    folder = tmp_path / "veracity/methods/toe/commands"
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    assert command_packages(tmp_path) == ["veracity.methods.toe.commands"]


@pytest.mark.parametrize(
    ("module", "line"),
    [
        ("veracity.methods.radar.method", "from veracity.methods.radar import commands"),
        ("veracity.cli.app", "import veracity.methods.toe.commands"),
        ("veracity.evaluation.advfact", "from veracity.methods.toe.commands import train_toe"),
    ],
)
def test_importing_a_commands_module_is_caught(tmp_path, module, line):
    shutil.copytree(SRC / "veracity", tmp_path / "veracity")
    path = tmp_path / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")
    report = lint(tmp_path)
    assert COMMANDS in report.broken, report.text
    assert f"{module} -> " in report.details()
