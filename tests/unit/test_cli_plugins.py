"""Commands and run options that installed packages add (`veracity.cli.plugins`).

A dummy plugin module is put in ``sys.modules`` and the entry points the CLI reads are
replaced by fakes naming it; the commands then run through the real ``veracity`` group.
The last test installs the plugin as a package would (a dist-info folder on the path) and
runs ``python -m veracity`` in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types
from importlib import metadata

import pytest
import typer
from typer.testing import CliRunner

from veracity.cli import app
from veracity.cli.plugins import COMMANDS_GROUP, RUN_OPTIONS_GROUP, RunOption
from veracity.core.errors import ConfigError

runner = CliRunner()
PLUGIN = "veracity_dummy_plugin"


def _dummy_module() -> types.ModuleType:
    module = types.ModuleType(PLUGIN)
    hello = typer.Typer(help="Say hello from a plugin.")

    @hello.command("greet")
    def greet(name: str = typer.Argument(..., help="who")) -> None:
        """Greet NAME."""
        typer.echo(f"hello {name}")

    @hello.command("count")
    def count(n: int = typer.Option(2, help="how many")) -> None:
        """Count to N."""
        typer.echo(" ".join(str(i) for i in range(1, n + 1)))

    def tune(steps: int = typer.Option(1, help="grid steps")) -> None:
        """Tune the dummy method's thresholds."""
        typer.echo(f"tuned in {steps} steps")

    def refuse(config, value):
        raise ConfigError(f"--shout {value!r} refused for method {config.method}")

    module.hello = hello
    module.tune = tune
    module.not_a_command = 42
    module.SHOUT = RunOption(flag="--shout", help="shout the verdict", apply=refuse)
    module.CLASH = RunOption(flag="--method", help="a second --method", apply=refuse)
    return module


@pytest.fixture
def plugins(monkeypatch):
    """Install fake entry points: ``plugins({"name": "module:attr"}, {...})``."""
    monkeypatch.setitem(sys.modules, PLUGIN, _dummy_module())

    def install(commands: dict[str, str], run_options: dict[str, str] | None = None) -> None:
        groups = {COMMANDS_GROUP: commands, RUN_OPTIONS_GROUP: run_options or {}}

        def entry_points(*, group: str):
            names = groups.get(group, {})
            return [metadata.EntryPoint(n, v, group) for n, v in names.items()]

        monkeypatch.setattr("veracity.cli.plugins.metadata.entry_points", entry_points)

    return install


def test_a_plugins_commands_run_through_the_cli(plugins):
    plugins({"hello": f"{PLUGIN}:hello", "calibrate.dummy": f"{PLUGIN}:tune"})
    listed = runner.invoke(app, ["--help"])
    assert listed.exit_code == 0, listed.output
    assert "Say hello from a plugin." in listed.output
    assert "Calibrate a method's thresholds" in listed.output  # the verb group
    greeted = runner.invoke(app, ["hello", "greet", "Ada"])
    assert greeted.exit_code == 0, greeted.output
    assert greeted.stdout == "hello Ada\n"
    assert runner.invoke(app, ["hello", "count", "--n", "3"]).stdout == "1 2 3\n"
    tuned = runner.invoke(app, ["calibrate", "dummy", "--steps", "4"])
    assert tuned.exit_code == 0, tuned.output
    assert tuned.stdout == "tuned in 4 steps\n"
    verb = runner.invoke(app, ["calibrate", "--help"])
    assert "dummy" in verb.output and "Tune the dummy method's thresholds." in verb.output
    bad = runner.invoke(app, ["hello", "count", "--n", "x"])
    assert bad.exit_code == 2 and "Invalid value for '--n'" in bad.output


def test_a_command_named_like_a_built_in_is_refused_and_the_built_in_runs(plugins):
    plugins(
        {
            "check": f"{PLUGIN}:hello",
            "eval.dummy": f"{PLUGIN}:tune",
            "hello": f"{PLUGIN}:hello",
            "a.b.c": f"{PLUGIN}:tune",
        }
    )
    listed = runner.invoke(app, ["--help"])
    assert listed.exit_code == 0, listed.output
    assert "the command 'check' from an installed package (veracity_dummy_plugin:hello) is " \
        "refused: veracity has a built-in command 'check'" in listed.stderr  # fmt: skip
    assert "the command 'eval.dummy'" in listed.stderr and "built-in command 'eval'" in (
        listed.stderr
    )
    assert "the command 'a.b.c'" in listed.stderr and "name it NAME or VERB.NAME" in (listed.stderr)
    assert "Say hello from a plugin." in listed.stdout  # the other plugin command stays
    built_in = runner.invoke(app, ["check", "--help"])
    assert built_in.exit_code == 0 and "Check a claim, article or post" in built_in.stdout
    assert "--kind" in built_in.stdout and "greet" not in built_in.stdout


def test_two_packages_adding_one_name_keep_the_first_and_a_command_is_no_verb(plugins):
    plugins({"hello": f"{PLUGIN}:hello", "hello.tune": f"{PLUGIN}:tune"})
    listed = runner.invoke(app, ["--help"])
    assert "the command 'hello.tune'" in listed.stderr
    assert "'hello' is a command of its own" in listed.stderr
    assert runner.invoke(app, ["hello", "greet", "Bo"]).stdout == "hello Bo\n"


def test_a_broken_plugin_is_left_out_with_a_warning_and_the_cli_works(plugins):
    plugins(
        {
            "broken": "veracity_no_such_plugin_module:app",
            "number": f"{PLUGIN}:not_a_command",
            "hello": f"{PLUGIN}:hello",
        }
    )
    quiet = runner.invoke(app, ["labels"])  # a built-in command loads no plugin
    assert quiet.exit_code == 0 and "warning" not in quiet.stderr
    listed = runner.invoke(app, ["--help"])
    assert listed.exit_code == 0, listed.output
    assert "the command 'broken' from an installed package " in listed.stderr
    assert "could not be loaded and is left out: ModuleNotFoundError" in listed.stderr
    assert "the command 'number'" in listed.stderr and "int is not a command" in listed.stderr
    assert "broken" not in listed.stdout and "Say hello from a plugin." in listed.stdout
    missing = runner.invoke(app, ["broken"])
    assert missing.exit_code == 2 and "No such command 'broken'" in missing.output
    assert runner.invoke(app, ["hello", "greet", "Cy"]).stdout == "hello Cy\n"


def test_a_run_option_reaches_the_resolved_config(plugins):
    plugins({}, {"shout": f"{PLUGIN}:SHOUT", "clash": f"{PLUGIN}:CLASH", "bad": f"{PLUGIN}:tune"})
    shown = runner.invoke(app, ["eval", "--help"])
    assert "--shout" in shown.stdout and "shout the verdict" in shown.stdout
    assert "the run option '--method' from an installed package" in shown.stderr
    assert "the run option 'bad'" in shown.stderr and "not a veracity.cli.plugins.RunOption" in (
        shown.stderr
    )
    # the option is applied to the resolved config (method direct), before any model runs
    result = runner.invoke(app, ["check", "--method", "direct", "--shout", "loud", "x"])
    assert result.exit_code == 2, result.output
    assert "--shout 'loud' refused for method direct" in result.output
    plain = runner.invoke(app, ["check", "--shout"])
    assert plain.exit_code == 2 and "requires an argument" in plain.output


def test_mermaids_memory_flag_comes_from_its_package():
    for command in ("check", "eval"):
        shown = runner.invoke(app, [command, "--help"])
        assert "--memory" in shown.stdout and "on|off|read-only" in shown.stdout
        assert "warning" not in shown.stderr
    bad = runner.invoke(app, ["check", "--method", "mermaid", "--memory", "maybe", "x"])
    assert bad.exit_code == 2 and "'maybe' is not one of 'on', 'off', 'read-only'" in bad.output


def test_an_installed_package_adds_a_command(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "veracity_hello_plugin.py").write_text(
        textwrap.dedent(
            '''
            import typer

            def hello(name: str = typer.Argument(...)) -> None:
                """Say hello."""
                typer.echo(f"hello {name} from a plugin")
            '''
        ),
        encoding="utf-8",
    )
    info = site / "veracity_hello_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: veracity-hello-plugin\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[veracity.commands]\nhello = veracity_hello_plugin:hello\n"
        "check = veracity_hello_plugin:hello\n",
        encoding="utf-8",
    )
    path = os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path}
    done = subprocess.run(
        [sys.executable, "-m", "veracity", "hello", "Ada"],
        capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "hello Ada from a plugin\n"
    assert "package veracity-hello-plugin (veracity_hello_plugin:hello) is refused" in " ".join(
        done.stderr.split()
    )
