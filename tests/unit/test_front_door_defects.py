"""Small front-door defects a newcomer saw (issue 41, the last bullet of "What was found"),
each pinned by a test: counts in the right number, the MCP server's version."""

from __future__ import annotations

import pytest
from mcp.client import Client

from veracity import __version__
from veracity.cli.render import usage_line
from veracity.core.config import RunConfig
from veracity.core.textio import plural
from veracity.core.types import Trace, Usage, Verdict
from veracity.mcp.server import build_server


@pytest.mark.parametrize(
    ("n", "word", "shown"),
    [
        (0, "search", "0 searches"),
        (1, "search", "1 search"),
        (2, "LLM call", "2 LLM calls"),
        (1, "LLM call", "1 LLM call"),
        (1200, "box", "1,200 boxes"),
    ],
)
def test_plural_agrees_with_the_count(n, word, shown):
    assert plural(n, word) == shown


def test_usage_line_says_one_call_and_one_search():
    verdict = Verdict(
        label="true",
        label_space="true_false",
        method="cot",
        score=0.9,
        rationale="",
        trace=Trace(),
        usage=Usage(llm_calls=1, searches=1),
    )
    line = usage_line(verdict)
    assert "1 LLM call " in line + " " and "1 search " in line + " "
    assert "calls" not in line and "searches" not in line


async def test_mcp_server_reports_the_package_version():
    async with Client(build_server(RunConfig(method="cot"))) as client:
        assert client.server_info.name == "veracity"
        assert client.server_info.version == __version__ != ""


def test_a_missing_document_file_is_the_first_and_only_thing_said(tmp_path, monkeypatch):
    # the input error came after an unrelated notice about rag's sources
    from typer.testing import CliRunner

    from veracity.cli import app

    monkeypatch.setenv("VERACITY_OFFLINE", "1")
    monkeypatch.setenv("VERACITY_HOME", str(tmp_path / "home"))
    missing = tmp_path / "nosuch.md"
    result = CliRunner().invoke(app, ["check", "--kind", "document", "--file", str(missing)])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert said.startswith(f"error: document file {missing} not found"), said
    assert "source" not in said


def test_the_model_download_notice_fits_a_line_and_says_the_size():
    from veracity.cli.common import pull_notice
    from veracity.llm import models as catalog

    for name, spec in catalog.CATALOG.items():
        notice = pull_notice(name)
        assert len(notice) < 80 and name in notice
        assert f"{spec.size / 1e6:.0f} MB" in notice
