"""Errors of the command line, one clear line each (issue 38, item 7).

- a document check against an endpoint that does not answer is told as a claim check
  tells it (one ``error:`` line, exit 1), not with a traceback;
- a run option (`veracity.cli.plugins.RunOption`) whose package code raises is one line
  naming the flag;
- two run options are two parameters: a value given to one never reaches the other;
- a run option declared without ``--`` is the long flag of that name; one that cannot be
  a long flag is refused with a warning that says so (not "already has it").

Each probe is tallied: clear (the outcome the user needs, or one line naming the fault),
crashed (a traceback) or silently wrong (a value refused or sent to the wrong option, a
misleading message). Goal: 0 crashed, 0 silently wrong.
"""

from __future__ import annotations

import socket
import sys
import types
from importlib import metadata

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.cli.plugins import RUN_OPTIONS_GROUP, RunOption
from veracity.core.errors import ConfigError

from .conftest import run_cli
from .tally import Tally

runner = CliRunner()
PLUGIN = "veracity_cli_errors_plugin"
MEMORY = "veracity.cli.methods.mermaid:MEMORY_OPTION"


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _one_clear_line(output: str, *needles: str) -> bool:
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    return "Traceback" not in output and len(lines) == 1 and all(n in output for n in needles)


def test_an_unreachable_endpoint_is_one_line_for_documents_as_for_claims(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    model = ["--method", "direct", "--base-url", url, "--model", "m"]
    tally = Tally()
    cases = {
        "document": ["check", "--kind", "document", *model, "Rome is in Italy. Oslo is cold."],
        "document --json": ["check", "--kind", "document", "--json", *model, "Rome is in Italy."],
    }
    for name, args in cases.items():
        tally.tried += 1
        done = run_cli(args, tmp_path / "home")
        err = done.stderr.decode("utf-8", "replace")
        if "Traceback" in err:
            tally.crashed.append(f"{name}: {err.strip().splitlines()[-1]}")
        elif done.returncode == 1 and _one_clear_line(err, "connection failed", url):
            tally.clear += 1
        else:
            tally.silent.append(f"{name}: exit {done.returncode}: {err[-300:]}")
    tally.tried += 1  # the claim check it is compared with: a box with the error, exit 1
    claim = run_cli(["check", *model, "Rome is in Italy."], tmp_path / "home")
    if claim.returncode == 1 and b"connection failed" in claim.stdout + claim.stderr:
        tally.clear += 1
    else:
        tally.silent.append(f"claim: exit {claim.returncode}")
    print(tally.line("unreachable endpoint"))
    tally.assert_clean()


# ------------------------------------------------------------------------------ run options

APPLIED: list[tuple[str, str]] = []


def _recorder(flag: str):
    def apply(config, value):
        APPLIED.append((flag, value))
        return config

    return apply


def _stop(config, value):
    raise ConfigError(f"stopped after {APPLIED}")  # no model runs in these probes


def _boom(config, value):
    raise RuntimeError("the plugin's own bug")


def _module() -> types.ModuleType:
    module = types.ModuleType(PLUGIN)
    module.TONE = RunOption("--tone", "a tone", _recorder("--tone"), ("warm", "cold"))
    module.SHADE = RunOption("--shade", "a shade", _recorder("--shade"), ("light", "dark"))
    module.BARE = RunOption("bare", "declared without dashes", _recorder("--bare"))
    module.SHORT = RunOption("-q", "a short flag", _recorder("-q"))
    module.CLASH = RunOption("--method", "a second --method", _recorder("--method"))
    module.BOOM = RunOption("--boom", "raises", _boom)
    module.STOP = RunOption("--stop", "ends the run before the model", _stop)
    return module


@pytest.fixture
def run_options(monkeypatch):
    """The installed run options are MERMAID's --memory and the dummy module's."""
    monkeypatch.setitem(sys.modules, PLUGIN, _module())
    APPLIED.clear()
    names = ("TONE", "SHADE", "BARE", "SHORT", "CLASH", "BOOM", "STOP")
    entries = {"memory": MEMORY, **{n.lower(): f"{PLUGIN}:{n}" for n in names}}
    real = metadata.entry_points

    def entry_points(*, group: str):
        if group != RUN_OPTIONS_GROUP:
            return real(group=group)
        return [metadata.EntryPoint(n, v, group) for n, v in entries.items()]

    monkeypatch.setattr("veracity.cli.plugins.metadata.entry_points", entry_points)


def _check(*args: str, stop: bool = True):
    """`veracity check` with run options; with `stop`, the last option ends it before a
    model is called (the values applied so far are in its message and in `APPLIED`)."""
    APPLIED.clear()
    end = ["--stop", "x"] if stop else []
    return runner.invoke(app, ["check", "--method", "direct", *args, *end, "A claim."])


def test_run_options_are_one_clear_line_each(run_options):
    tally = Tally()

    def probe(name: str, result, ok: bool) -> None:
        tally.tried += 1
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            tally.crashed.append(f"{name}: {type(result.exception).__name__}")
        elif "Traceback" in result.output:
            tally.crashed.append(f"{name}: a traceback")
        elif ok:
            tally.clear += 1
        else:
            tally.silent.append(f"{name}: exit {result.exit_code}: {result.output[-300:]!r}")

    both = _check("--memory", "off", "--tone", "warm")
    probe("--memory off --tone warm", both, APPLIED == [("--tone", "warm")])
    three = _check("--tone", "cold", "--shade", "dark", "--memory", "read-only")
    probe("three options", three, APPLIED == [("--tone", "cold"), ("--shade", "dark")])
    alone = _check("--shade", "light")
    probe("--shade alone", alone, APPLIED == [("--shade", "light")])
    wrong = _check("--tone", "dark", stop=False)
    probe("--tone dark", wrong, wrong.exit_code == 2 and "'--tone'" in wrong.output)

    boom = _check("--boom", "x", stop=False)
    probe("apply raises", boom, boom.exit_code == 2 and _one_clear_line(
        boom.output, "--boom", "RuntimeError: the plugin's own bug"
    ))  # fmt: skip
    refused = runner.invoke(app, ["check", "--method", "direct", "--memory", "maybe", "x"])
    probe("--memory maybe", refused, refused.exit_code == 2 and "'maybe'" in refused.output)

    bare = _check("--bare", "yes")
    probe("flag declared as 'bare'", bare, APPLIED == [("--bare", "yes")])
    shown = runner.invoke(app, ["eval", "--help"])
    probe("'-q' refused", shown, "run option '-q'" in shown.stderr and "long option" in (
        shown.stderr
    ) and "already has it" not in shown.stderr)  # fmt: skip
    probe("'--method' refused", shown, "run option '--method'" in shown.stderr and (
        "already has --method" in shown.stderr
    ))  # fmt: skip
    print(tally.line("run options"))
    tally.assert_clean()
