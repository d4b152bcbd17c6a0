"""Failed searches reach every front end: `veracity check` (one warning line on stderr,
the fields in --json), `veracity batch` (result lines and the closing summary) and the MCP
``check`` tool (structured content). The REST server and web UI are tested in
tests/integration/test_search_failures_server.py."""

from __future__ import annotations

import json

import pytest
from mcp import Client
from typer.testing import CliRunner

from failing_sources import REFUSED, register
from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.llm.client import ManagedLLM
from veracity.mcp.server import build_server
from veracity.testing.schema import schema_llm

runner = CliRunner()
ALL_FAILED = f"warning: all 2 searches failed; first error: SourceUnreachable: web: {REFUSED}"
GARBLED = "SourceBadResponse: web: garbled answer [bold]x[/bold]"  # markup stays text


@pytest.fixture(autouse=True)
def model(monkeypatch):
    register()
    llm = schema_llm()
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda *a, **kw: ManagedLLM(llm))
    for command in ("check", "batch"):
        monkeypatch.setattr(f"veracity.cli.{command}.ensure_model", lambda cfg: None)
    return llm


def check(*args: str):
    argv = ["check", "The town council approved the budget.", "--method", "react", *args]
    return runner.invoke(app, argv, env={"COLUMNS": "200"})


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning:")]


def test_check_whose_searches_all_fail_abstains_and_warns_once():
    result = check("--source", "web=always_down", "--set", "max_steps=2")
    assert result.exit_code == 0, result.output
    assert "ABSTAINED" in result.stdout and "every search failed" in result.stdout
    assert warnings(result.stderr) == [ALL_FAILED]
    assert "0 searches (2 failed)" in result.stdout


def test_check_json_carries_the_failures_and_stderr_the_warning():
    result = check("--source", "web=always_down", "--set", "max_steps=2", "--json")
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["label"] is None and verdict["abstained"] is True
    assert verdict["usage"]["failed_searches"] == 2
    assert verdict["metadata"]["search_failures"] == {
        "failed": 2,
        "answered": 0,
        "first_error": f"SourceUnreachable: web: {REFUSED}",
        "all_failed": True,
    }
    assert verdict["metadata"]["unsupported_label"] in ("true", "false")
    assert warnings(result.stderr) == [ALL_FAILED]


def test_check_with_some_failed_searches_keeps_the_label_and_warns():
    result = check("--source", "web=every_other_down", "--set", "max_steps=2", "--json")
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["label"] is not None and not verdict["abstained"]
    assert warnings(result.stderr) == [f"warning: 1 of 2 searches failed; first error: {GARBLED}"]


def test_check_that_stops_at_a_failed_search_exits_1_with_the_warning():
    argv = ["check", "A claim.", "--method", "rag", "--source", "web=always_down"]
    result = runner.invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 1 and "ERROR" in result.stdout
    expected = f"warning: all 1 searches failed; first error: SourceUnreachable: web: {REFUSED}"
    assert warnings(result.stderr) == [expected]


def test_a_check_without_failures_prints_no_warning():
    argv = ["check", "A claim.", "--method", "direct"]
    result = runner.invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 0 and warnings(result.stderr) == []


def test_batch_lines_carry_the_warning_and_the_summary_counts_all_failed_checks(tmp_path):
    rows = tmp_path / "claims.jsonl"
    rows.write_text("".join(json.dumps({"text": f"claim {i}"}) + "\n" for i in range(3)))
    out = tmp_path / "out.jsonl"
    argv = ["batch", str(rows), "--out", str(out), "--method", "rag", "--concurrency", "1",
            "--source", "web=every_other_down", "--no-progress"]  # fmt: skip
    result = runner.invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    # rag searches once per row: the second row's search fails, the others answer
    assert [r["status"] for r in lines] == ["ok", "error", "ok"]
    assert [r.get("warning") for r in lines] == [
        None,
        f"all 1 searches failed; first error: {GARBLED}",
        None,
    ]
    assert "checks whose searches all failed │ 1" in result.stderr
    assert "│ 2 (1 failed)" in result.stderr  # searches answered, and failed


async def test_the_mcp_check_tool_returns_the_warning_in_its_structured_content():
    config = RunConfig(
        method="react",
        sources={"web": {"type": "always_down"}},
        method_config={"max_steps": 2},
    )
    async with Client(build_server(config, llm=schema_llm())) as client:
        result = await client.call_tool("check", {"text": "The council approved the budget."})
    assert not result.is_error, result.content
    verdict = result.structured_content
    assert verdict["label"] is None and verdict["abstained"] is True
    assert verdict["warning"] == ALL_FAILED.removeprefix("warning: ")
    assert verdict["search_failures"]["failed"] == 2
    assert verdict["search_failures"]["all_failed"] is True
    assert verdict["usage"]["failed_searches"] == 2


def test_eval_counts_checks_whose_searches_all_failed_as_abstentions(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    data = Path(__file__).resolve().parents[1] / "data" / "datasets"
    argv = ["eval", "--method", "react", "--dataset", "scifact", "--data-dir", str(data),
            "--limit", "2", "--source", "web=always_down", "--out", str(tmp_path / "run"),
            "--no-progress"]  # fmt: skip
    result = runner.invoke(app, argv, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["n"] == 2 and metrics["abstention_rate"] == 1.0
    records = [json.loads(line) for line in (tmp_path / "run" / "predictions.jsonl").open()]
    assert all(r["status"] == "abstained" for r in records)
    assert all(r["verdict"]["metadata"]["search_failures"]["all_failed"] for r in records)
