"""`veracity methods` and `veracity doctor` at 80 columns: no line wider, nothing cut with
"…", every method listed by its full name, every command of a fix whole on one line."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from typer.testing import CliRunner

from veracity.cli import app
from veracity.cli.plain_listing import wrap
from veracity.core import registry
from veracity.doctor import Finding

runner = CliRunner()
NARROW = {"COLUMNS": "80"}


def invoke(args: list[str]):
    return runner.invoke(app, args, env=NARROW, terminal_width=80)


def assert_fits(output: str) -> list[str]:
    lines = output.splitlines()
    too_wide = [line for line in lines if len(line) > 80]
    assert not too_wide, too_wide
    assert "…" not in output
    return lines


def test_methods_fit_80_columns_and_list_every_method_whole():
    result = invoke(["methods"])
    assert result.exit_code == 0, result.output
    lines = assert_fits(result.stdout)
    listed = {line.split()[0] for line in lines if line.startswith("  ") and line[2] != " "}
    assert set(registry.methods.names()) <= listed
    for group in ("The papers' methods", "Compared systems", "Simple baselines"):
        assert any(line.startswith(group) for line in lines), group
    text = " ".join(result.stdout.split())
    assert "docs/methods.md" in text
    assert "`veracity index build --dataset scifact`" in result.stdout  # whole, on one line
    from veracity.runtime.listing import list_methods

    for entry in list_methods():  # each description whole, only wrapped
        assert " ".join(entry.description.split()) in text, entry.name
    assert "post · rumor · no search" in text  # s2mad: its input kind and that it searches none
    assert "claim · true_half_false · searches web" in text  # radar


def test_methods_json_is_complete():
    result = invoke(["methods", "--json"])
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert set(rows) == set(registry.methods.names())
    keys = {"description", "default_labels", "label_spaces", "input_kinds", "options",
            "searches", "offline", "group", "error"}  # fmt: skip
    assert all(keys <= set(row) for row in rows.values())
    assert rows["direct"]["searches"] == [] and rows["direct"]["offline"] == ""
    assert rows["react"]["searches"] == ["web search", "Wikipedia"]
    assert rows["react"]["offline"] == "the default index (needed), without Wikipedia"
    assert rows["radar"]["group"].startswith("The papers' methods")


LONG_PIP = 'pip install -e "/home/someone/projects/checkouts/veracity[server,ray]"'


def test_doctor_fix_commands_are_never_cut(monkeypatch):
    findings = [
        Finding(check="optional packages", status="warn",
                detail="missing: fastapi (extra server), ray (extra ray)",
                fix=f'{LONG_PIP}; pip install -e "/home/someone/projects/checkouts/veracity"'),
        Finding(check="default index", status="warn",
                detail="not built (/home/someone/.cache/veracity/indexes/default): offline, a "
                "retrieving method given no source has nothing to search",
                fix="`veracity index build ./my-docs` or `veracity index build --dataset "
                "scifact`"),
        Finding(check="model", status="fail", detail="smollm2-135m is not downloaded",
                fix="veracity models pull smollm2-135m"),
    ]  # fmt: skip
    monkeypatch.setattr("veracity.doctor.diagnose", lambda cfg, network: findings)
    result = invoke(["doctor", "--offline"])
    assert result.exit_code == 1
    lines = assert_fits(result.stdout)
    for command in (
        LONG_PIP,
        'pip install -e "/home/someone/projects/checkouts/veracity"',
        "`veracity index build ./my-docs`",
        "`veracity index build --dataset scifact`",
        "veracity models pull smollm2-135m",
    ):
        assert any(command in line for line in lines), command
    assert any(line.strip() == LONG_PIP for line in lines)  # a line of its own


def test_a_command_longer_than_the_line_is_kept_whole(monkeypatch):
    very_long = 'pip install -e "/' + "deep/" * 20 + 'veracity[server]"'
    found = [Finding(check="optional packages", status="warn", detail="missing", fix=very_long)]
    monkeypatch.setattr("veracity.doctor.diagnose", lambda cfg, network: found)
    result = invoke(["doctor", "--offline"])
    assert very_long in result.stdout.splitlines()


def test_doctor_on_a_fresh_home_fits_80_columns(monkeypatch):
    home = Path(tempfile.mkdtemp(prefix="vh-"))  # a path of ordinary length
    monkeypatch.setenv("VERACITY_HOME", str(home / "h"))
    monkeypatch.setenv("VERACITY_MODELS_DIR", str(home / "models"))
    result = invoke(["doctor", "--offline"])
    lines = assert_fits(result.stdout)
    assert any("veracity models pull smollm2-135m" in line for line in lines)
    assert any("`veracity datasets get NAME`" in line for line in lines)
    shutil.rmtree(home)


def test_wrap_breaks_between_words_never_inside_a_command():
    text = "run `veracity index build --dataset scifact` once, then check again " * 3
    lines = wrap(text, 30, "  ")
    assert all(len(line) <= 30 or line.startswith("`") for line in lines)
    assert " ".join(" ".join(lines).split()) == " ".join(text.split())
    assert sum("`veracity index build --dataset scifact`" in line for line in lines) == 3


def test_wrap_puts_a_long_path_whole_on_a_line_from_the_first_column():
    path = "/tmp/" + "x" * 70
    lines = wrap(f"stored at {path} today", 80, " " * 8)
    assert lines == ["        stored at", path, "        today"]
