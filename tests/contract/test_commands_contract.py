"""Rule 6 of the import contract: a method's ``commands`` module (its command-line front
end) is an entry point, loaded through entry points only, never imported."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from import_contract import COMMANDS_RULE, check_tree, layer_of, part_of

SRC = Path(__file__).resolve().parents[2] / "src"


def test_a_methods_commands_module_is_an_entry_point():
    assert part_of("veracity.methods.radar.commands") == "commands"
    assert part_of("veracity.methods.toe.commands.advfact") == "commands"  # a package too
    assert part_of("veracity.methods.radar.calibration") == "methods"
    assert layer_of("commands") == layer_of("cli") > layer_of("runtime")
    assert (SRC / "veracity/methods/radar/commands.py").is_file()


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
    caught = [v for v in check_tree(tmp_path) if v.module == module]
    assert any(v.rule == COMMANDS_RULE for v in caught), [str(v) for v in caught]
