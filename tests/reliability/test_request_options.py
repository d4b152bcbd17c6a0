"""What a request may tune (issue 23, item 1): commands, URLs, file paths and names of
environment variables never come from a request, whatever the operator allowed.

Attacks through the REST server on 127.0.0.1 (``method_config`` with the operator's
``allow_method_config`` on), the MCP server through the official SDK's client (the
``check`` tool's arguments), batch rows, and MCP servers named by URL in the operator's
own config (the address guard). A loopback listener stands in for an attacker's host:
it records every request and its ``Authorization`` header, and a command writes a
marker file if it ever runs.

Each case is classified: refused clearly (422 / INVALID_PARAMS / an error naming the
guard, listing what may be set), crashed (a 5xx or a traceback), silently wrong (a
harmless option accepted that a request may not set) or a hole (a command run, a secret
sent, a path or URL taken). Goal: 0 crashed, 0 silently wrong, 0 holes.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.config import RunConfig
from veracity.mcp.server import build_server
from veracity.server import BackgroundServer, ServerSettings, create_app
from veracity.testing.fake_openai import FakeOpenAIServer
from veracity.testing.schema import schema_llm
from veracity.tools.mcp_client import McpServerConfig, McpToolset, ToolServerError

from .frontdoor import Tally

SECRET = "exfil-secret-value-4242"
CLAIM = "The Eiffel Tower is in Berlin."


class Listener:
    """A loopback HTTP server that records what reaches it (an attacker's host)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str | None]] = []
        seen = self.seen

        class Handler(http.server.BaseHTTPRequestHandler):
            def _record(self) -> None:
                seen.append((self.path, self.headers.get("Authorization")))
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = do_DELETE = _record

            def log_message(self, *args: Any) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener(monkeypatch) -> Iterator[Listener]:
    monkeypatch.setenv("PROBE_SECRET", SECRET)
    with Listener() as found:
        yield found


def attacks(marker: Path, url: str, tmp: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, method, options) a request must not be able to set."""
    command = {"name": "x", "command": sys.executable, "inherit_env": True,
               "args": ["-c", f"open({str(marker)!r}, 'w').write('ran')"]}  # fmt: skip
    remote = {"name": "r", "url": f"{url}/mcp", "bearer_token_env": "PROBE_SECRET"}
    scorer = {"backend": "openai", "base_url": f"{url}/v1", "api_key_env": "PROBE_SECRET",
              "model": "m"}  # fmt: skip
    inprocess = {"memory": "off", "tool_transport": "inprocess"}
    return [
        ("a command to launch", "mermaid", {"mcp_servers": [command], **inprocess}),
        ("a URL with a bearer token", "mermaid", {"mcp_servers": [remote], **inprocess}),
        ("a memory database path", "mermaid", {"memory": {"path": str(tmp / "m.sqlite")}}),
        ("an in-process tool switch", "mermaid", {"tool_transport": "inprocess"}),
        ("tool names", "mermaid", {"tools": ["fetch_page"]}),
        ("a scorer model URL and key variable", "s2mad", {"scorer_llm": scorer}),
        ("a checkpoint folder", "toe", {"checkpoints_dir": str(tmp), "checkpoint": "x"}),
        ("action sources", "toe", {"action_sources": {"web": "web"}}),
        ("a corpus folder", "radar", {"corpus": {"index": "x", "indexes_dir": str(tmp)}}),
        ("an NER model path", "zofia", {"hf_ner_model": str(tmp), "ner_backend": "hf"}),
        ("an embedder name", "zofia", {"embedder": str(tmp)}),
        ("excluded domains", "zofia", {"exclude_domains": []}),
        ("a source name", "rag", {"source": "web"}),
        ("a label space inside options", "cot", {"labels": "true_false"}),
        ("a dotted key", "mermaid", {"memory.mode": "off"}),
        ("an unknown key", "cot", {"nonsense": 1}),
        ("a nested value", "cot", {"temperature": {"a": 1}}),
        ("a temperature out of range", "cot", {"temperature": 9}),
        ("rounds out of range", "radar", {"rounds": 1000}),
    ]


def _item(method: str) -> dict[str, Any]:
    if method == "s2mad":
        return {"kind": "post", "text": CLAIM, "replies": ["a reply"]}
    return {"kind": "claim", "text": CLAIM}


def _classify(tally: Tally, name: str, refused: bool, marker: Path, sink: Listener) -> None:
    tally.tried += 1
    if marker.exists() or any(auth for _, auth in sink.seen):
        tally.holes.append(f"{name}: command ran or secret sent")
        marker.unlink(missing_ok=True)
        sink.seen.clear()
    elif refused:
        tally.clear += 1
    else:
        tally.holes.append(f"{name}: accepted")


@pytest.mark.server
def test_rest_requests_tune_only_declared_options(tmp_path, listener, capsys):
    tally, marker = Tally(), tmp_path / "ran"
    llm = schema_llm()
    config = RunConfig(method="cot", sources={})
    settings = ServerSettings(
        data_dir=tmp_path / "srv", rate_per_minute=0, allow_method_config=True
    )
    with (
        BackgroundServer(create_app(settings, run_config=config, llm=llm)) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        for name, method, options in attacks(marker, listener.url, tmp_path):
            body = {"input": _item(method), "method": method, "method_config": options}
            reply = client.post("/v1/checks", json=body)
            if reply.status_code >= 500:
                tally.crashed.append(f"{name}: {reply.status_code}")
                continue
            problem = reply.json()
            clear = reply.status_code == 422 and (
                "it may set" in problem["detail"] or f"{method} option" in problem["detail"]
            )
            _classify(tally, name, clear, marker, listener)
        offer = client.get("/v1/methods").json()
        safe = client.post(
            "/v1/checks",
            json={"input": {"kind": "claim", "text": CLAIM}, "method_config": {"temperature": 0.3}},
        )
        assert safe.status_code == 202, safe.text
        for _ in range(600):
            if client.get(f"/v1/checks/{safe.json()['id']}").json()["status"] == "done":
                break
            time.sleep(0.05)
    with capsys.disabled():
        print("\n" + tally.line("request options, REST"))
    assert tally.crashed == [] and tally.silent == [] and tally.holes == []
    assert tally.clear == len(attacks(marker, listener.url, tmp_path))
    assert offer["method_config"] is True
    cot = next(m for m in offer["methods"] if m["name"] == "cot")
    assert "temperature" in cot["options"] and "mcp_servers" not in json.dumps(offer)
    assert llm.calls and llm.calls[-1].temperature == 0.3  # the declared option took effect


@pytest.mark.server
def test_a_server_without_the_setting_takes_no_options(tmp_path):
    settings = ServerSettings(data_dir=tmp_path / "srv", rate_per_minute=0)
    app_ = create_app(settings, run_config=RunConfig(method="cot"), llm=schema_llm())
    with BackgroundServer(app_) as server, httpx.Client(base_url=server.url) as client:
        body = {"input": {"kind": "claim", "text": CLAIM}, "method_config": {"temperature": 0.1}}
        reply = client.post("/v1/checks", json=body)
        assert reply.status_code == 422
        assert "VERACITY_SERVER_ALLOW_METHOD_CONFIG" in reply.json()["detail"]
        assert client.get("/v1/methods").json()["method_config"] is False


async def test_mcp_tool_arguments_tune_only_declared_options(tmp_path, listener, capsys):
    tally, marker = Tally(), tmp_path / "ran"
    llm = schema_llm()
    async with Client(build_server(RunConfig(method="cot"), llm=llm)) as client:
        cases = [(n, m, {"options": o}) for n, m, o in attacks(marker, listener.url, tmp_path)]
        cases += [
            ("method_config as an argument", "mermaid", {"method_config": {"memory": "off"}}),
            ("config as an argument", "cot", {"config": {"temperature": 0.1}}),
        ]
        for name, method, extra in cases:
            kind = "post" if method == "s2mad" else "claim"
            try:
                result = await client.call_tool(
                    "check", {"text": CLAIM, "kind": kind, "method": method, **extra}
                )
            except MCPError as exc:
                clear = exc.code == -32602 and ("may set" in exc.message or "option" in exc.message
                                                or "this tool takes" in exc.message)  # fmt: skip
                _classify(tally, name, clear, marker, listener)
                continue
            _classify(tally, name, False, marker, listener)
            if result.is_error:  # refused, but as a tool error rather than INVALID_PARAMS
                tally.holes.pop()
                tally.silent.append(f"{name}: {result.content[0].text[:150]}")
        listed = await client.call_tool("list_methods", {})
        safe = await client.call_tool("check", {"text": CLAIM, "options": {"temperature": 0.4}})
    with capsys.disabled():
        print("\n" + tally.line("request options, MCP"))
    assert tally.crashed == [] and tally.silent == [] and tally.holes == []
    cot = next(m for m in listed.structured_content["methods"] if m["name"] == "cot")
    assert "temperature" in cot["options"]
    assert not safe.is_error and llm.calls[-1].temperature == 0.4


def test_batch_rows_carry_no_method_options(tmp_path):
    marker = tmp_path / "ran"
    command = {"name": "x", "command": sys.executable,
               "args": ["-c", f"open({str(marker)!r}, 'w').write('ran')"]}  # fmt: skip
    rows = tmp_path / "rows.jsonl"
    row = {"text": CLAIM, "method": "mermaid", "method_config": {"mcp_servers": [command]},
           "options": {"mcp_servers": [command]}}  # fmt: skip
    rows.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with FakeOpenAIServer() as fake:
        result = CliRunner().invoke(app, ["batch", str(rows), "-o", str(tmp_path / "o.jsonl"),
                                          "--base-url", fake.url, "--model", "fake",
                                          "--no-progress"])  # fmt: skip
    assert result.exit_code == 0, result.output
    done = json.loads((tmp_path / "o.jsonl").read_text().splitlines()[0])
    assert done["verdict"]["method"] == "direct"  # the batch's method, not the row's
    assert not marker.exists()


@pytest.mark.parametrize(
    "target",
    ["{listener}/mcp", "http://localhost:{port}/mcp", "http://169.254.169.254/mcp",
     "http://[::1]:{port}/mcp", "http://10.1.2.3/mcp", "ftp://{host}/mcp"],
)  # fmt: skip
async def test_mcp_servers_from_config_pass_the_address_guard(target, listener):
    port = listener.server.server_address[1]
    url = target.format(listener=listener.url, port=port, host=f"127.0.0.1:{port}")
    server = McpServerConfig(name="remote", url=url, bearer_token_env="PROBE_SECRET")
    toolset = McpToolset([server])
    with pytest.raises(ToolServerError, match=r"refusing to fetch|only http and https"):
        await toolset.tools()
    await toolset.aclose()
    assert listener.seen == []  # no request, no token


async def test_allow_private_reaches_a_server_on_this_machine(listener):
    server = McpServerConfig(
        name="mine", url=f"{listener.url}/mcp", bearer_token_env="PROBE_SECRET", allow_private=True
    )
    toolset = McpToolset([server])
    with pytest.raises(ToolServerError):  # the listener is no MCP server
        await toolset.tools()
    await toolset.aclose()
    assert (f"Bearer {SECRET}") in [auth for _, auth in listener.seen]
