"""Input made only of invisible characters is empty (issue 23, item 13): the command line
(argument, standard input, ``--file``, ``batch``), the REST server on 127.0.0.1 and the
MCP server through the official SDK's client all refuse it with the same message, and
text with invisible characters inside visible words is still checked.

Each case is classified: refused clearly (exit 2 / 422 / a tool error naming the empty
text), crashed (a traceback or a 5xx), or silently wrong (a verdict for nothing, or a
refused control). Goal: 0 crashed, 0 silently wrong.
"""

from __future__ import annotations

import json

import httpx
import pytest
from mcp import Client
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.core.textio import is_blank
from veracity.mcp.server import build_server
from veracity.server import BackgroundServer, ServerSettings, create_app
from veracity.testing.fake_openai import FakeOpenAIServer
from veracity.testing.schema import schema_llm

from .tally import Tally

runner = CliRunner()

INVISIBLE = {
    "zero-width spaces": "\u200b\u200b\u200b",
    "word joiner": "\u2060",
    "byte-order mark": "\ufeff",
    "joiners, soft hyphen and spaces": " \u200c\u200d\u00ad \n\t",
    "Hangul fillers": "\u3164\u115f\u1160",
    "tag characters": "\U000e0041\U000e0042\U000e007f",
    "variation selector and CGJ": "\ufe0f\u034f",
    "direction marks": "\u200e\u200f\u061c",
    "Braille blank": "\u2800 \u2800",
}
VISIBLE = {  # controls: checked as usual
    "a word split by a zero-width space": "Water\u200b boils at 100 degrees.",
    "a BOM before the claim": "\ufeffThe moon is made of rock.",
}
EMPTY = "is empty"


def test_the_shared_rule():
    assert all(is_blank(text) for text in INVISIBLE.values())
    assert not any(is_blank(text) for text in VISIBLE.values())
    assert not is_blank("\u0301") and not is_blank("\u3164x")  # a lone mark shows


def _cli(tally: Tally, name: str, args: list[str], stdin: str | None, invisible: bool) -> None:
    tally.tried += 1
    result = runner.invoke(app, args, input=stdin)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        tally.crashed.append(f"{name}: {type(result.exception).__name__}: {result.exception}")
    elif invisible and result.exit_code == 2 and EMPTY in result.output:
        tally.clear += 1
    elif not invisible and result.exit_code == 0:
        pass
    else:
        tally.silent.append(f"{name}: exit {result.exit_code}: {result.output[-200:]}")


def test_the_command_line_refuses_invisible_input(tmp_path, capsys):
    tally = Tally()
    with FakeOpenAIServer() as server:
        model = ["--base-url", server.url, "--model", "fake"]
        cases = {**{k: (v, True) for k, v in INVISIBLE.items()},
                 **{k: (v, False) for k, v in VISIBLE.items()}}  # fmt: skip
        for n, (name, (text, invisible)) in enumerate(cases.items()):
            _cli(tally, f"argument: {name}", ["check", text, *model], None, invisible)
            _cli(tally, f"stdin: {name}", ["check", "-", *model], text, invisible)
            claim = tmp_path / f"claim{n}.json"
            claim.write_text(json.dumps({"text": text}), encoding="utf-8")
            _cli(tally, f"--file: {name}", ["check", "--file", str(claim), *model], None, invisible)
            rows = tmp_path / f"rows{n}.jsonl"
            rows.write_text(json.dumps({"text": text}) + "\n", encoding="utf-8")
            out = ["-o", str(tmp_path / f"out{n}.jsonl"), "--no-progress"]
            _cli(tally, f"batch: {name}", ["batch", str(rows), *out, *model], None, invisible)
    with capsys.disabled():
        print("\n" + tally.line("invisible input, CLI"))
    assert tally.crashed == [] and tally.silent == []
    assert tally.clear == 4 * len(INVISIBLE)


def test_a_batch_names_the_row_that_is_invisible(tmp_path):
    rows = tmp_path / "rows.jsonl"
    lines = [{"text": "The moon is made of rock."}, {"text": "\u200b\u2060"}]
    rows.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    result = runner.invoke(app, ["batch", str(rows), "-o", str(tmp_path / "o.jsonl")])
    assert result.exit_code == 2, result.output
    assert "rows.jsonl: line 2" in result.output.replace("\n", "") and EMPTY in result.output


@pytest.mark.server
def test_the_rest_server_refuses_invisible_input(tmp_path, capsys):
    tally = Tally()
    settings = ServerSettings(data_dir=tmp_path / "server", rate_per_minute=0)
    config = RunConfig(method="cot")
    with (
        BackgroundServer(create_app(settings, run_config=config, llm=schema_llm())) as server,
        httpx.Client(base_url=server.url, timeout=30) as client,
    ):
        for name, text in {**INVISIBLE, **VISIBLE}.items():
            for item in (
                {"kind": "claim", "text": text},
                {"kind": "article", "title": "A title", "body": text},
                {"kind": "post", "text": text, "replies": ["a reply"]},
            ):
                tally.tried += 1
                reply = client.post("/v1/checks", json={"input": item})
                where = f"{item['kind']}: {name}"
                if reply.status_code >= 500:
                    tally.crashed.append(f"{where}: {reply.status_code}")
                elif name in INVISIBLE and reply.status_code == 422 and EMPTY in reply.text:
                    tally.clear += 1
                elif name in VISIBLE and reply.status_code == 202:
                    pass
                else:
                    tally.silent.append(f"{where}: {reply.status_code} {reply.text[:200]}")
    with capsys.disabled():
        print("\n" + tally.line("invisible input, REST"))
    assert tally.crashed == [] and tally.silent == []
    assert tally.clear == 3 * len(INVISIBLE)


async def test_the_mcp_server_refuses_invisible_input(capsys):
    tally = Tally()
    async with Client(build_server(RunConfig(method="cot"), llm=schema_llm())) as client:
        for name, text in {**INVISIBLE, **VISIBLE}.items():
            for kind in ("claim", "article", "post"):
                tally.tried += 1
                result = await client.call_tool("check", {"text": text, "kind": kind})
                shown = result.content[0].text if result.content else ""
                if name in INVISIBLE and result.is_error and EMPTY in shown:
                    tally.clear += 1
                elif name in VISIBLE and not result.is_error:
                    pass
                else:
                    tally.silent.append(f"{kind}: {name}: {shown[:200]}")
    with capsys.disabled():
        print("\n" + tally.line("invisible input, MCP"))
    assert tally.silent == [] and tally.clear == 3 * len(INVISIBLE)
