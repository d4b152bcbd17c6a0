"""MCP for real: the official SDK's client against spawned `veracity mcp` / tool servers.

Every server here is a separate process spoken to over stdio (or streamable HTTP on
127.0.0.1); models are scripted (in-process, or behind a loopback OpenAI-compatible
endpoint for spawned servers).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

from scripted_openai import scripted_endpoint
from veracity.core import context
from veracity.core.types import Claim, Document
from veracity.retrieval.guards import EvalGuards, eval_guards
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import build_run, managed_sources, resolve_spec
from veracity.runtime.home import home_paths
from veracity.testing import ScriptedLLM, ScriptedReply
from veracity.tools.evidence import evidence_tools
from veracity.tools.launch import ToolServerSpec
from veracity.tools.mcp_client import McpServerConfig, McpToolset, ToolServerError

pytestmark = pytest.mark.slow

ECHO_SERVER = Path(__file__).resolve().parents[1] / "mcp_servers" / "echo_server.py"
DOCS = [
    Document(id="d1", title="Eiffel Tower", text="The Eiffel Tower is a tower in Paris, France."),
    Document(id="d2", title="Berlin", text="Berlin is the capital of Germany."),
]


def veracity_command(*args: str) -> tuple[str, list[str]]:
    """`veracity ARGS` from this interpreter's environment."""
    exe = shutil.which("veracity", path=str(Path(sys.executable).parent))
    return (exe, list(args)) if exe else (sys.executable, ["-m", "veracity", *args])


@pytest.fixture
def tiny_index(_isolated_home):
    build_local_corpus("tiny", DOCS, mode="bm25", indexes_dir=home_paths().indexes)
    return "tiny"


def stdio(*args: str, **env: str) -> StdioServerParameters:
    command, argv = veracity_command(*args)
    return StdioServerParameters(command=command, args=argv, env={**os.environ, **env})


def step(tool: str, **arguments) -> str:
    action = {"name": tool, "reason": "gather evidence", "input": arguments}
    return json.dumps({"thought": "I need evidence.", "action": action})


def answer(label: str) -> ScriptedReply:
    return ScriptedReply(json.dumps({"thought": "Settled.", "answer": label}))


DECOMPOSED = json.dumps(
    {
        "triplets": [{"subject": "Eiffel Tower", "relation": "is in", "object": "Berlin"}],
        "topics": ["Geography"],
    }
)


# ----------------------------------------------------------------------- tool server


async def test_tool_server_lists_tools_with_schemas_and_answers_calls(tiny_index):
    async with Client(stdio("mcp", "tools", "--source", f"docs=local:{tiny_index}")) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert list(tools) == ["search_docs"]
        schema = tools["search_docs"].input_schema
        assert schema["required"] == ["query"] and "query" in schema["properties"]
        assert tools["search_docs"].description.startswith("Search docs")
        result = await client.call_tool("search_docs", {"query": "Eiffel Tower"})
        assert not result.is_error
        assert result.structured_content["documents"][0]["title"] == "Eiffel Tower"
        assert result.structured_content["searches"][0]["name"] == "docs"
        assert "Paris" in result.content[0].text
        bad = await client.call_tool("search_docs", {"q": "x"})
        assert bad.is_error and "query" in bad.content[0].text
        # the server is still there after a bad call
        assert not (await client.call_tool("search_docs", {"query": "Berlin"})).is_error


async def test_mermaid_runs_its_loop_over_mcp_stdio(tiny_index, tmp_path):
    llm = ScriptedLLM()
    llm.on(".*", DECOMPOSED, tag="decomposer")
    llm.on(".*", step("search_docs", query="Eiffel Tower"), tag="executor:1")
    llm.on(".*", answer("false"), tag="executor:2")
    llm.on(".*", json.dumps({"relevant": [1]}), tag="retain")  # keeps the one document found
    flags = {
        "method": "mermaid",
        "sources": {"docs": {"type": "local", "index": tiny_index}},
        "method_config": {"memory": {"path": str(tmp_path / "m.sqlite"), "embedder": None}},
    }
    run = build_run(resolve_spec(flags=flags), llm=llm)
    assert run.method.config.tool_transport == "stdio"
    verdict = await run.check(Claim(text="The Eiffel Tower is in Berlin.", date="2024-01-01"))
    assert verdict.label == "false" and verdict.error is None
    assert [e.document.title for e in verdict.evidence] == ["Eiffel Tower"]
    # the search made in the server process is accounted for in this check
    assert verdict.usage.searches == 1
    search = verdict.trace.of_kind("search")[0]
    assert search.name == "docs" and search.data["query"]["before"] == "2024-01-01"
    assert verdict.trace.of_kind("tool_call")[0].data["tool"] == "search_docs"
    assert any(e.name == "mcp:evidence" for e in verdict.trace.of_kind("stage"))
    assert verdict.metadata["memory"]["kept"] == 1
    await run.method.toolbox.aclose()


def _recording(path: Path) -> Path:
    """A trace file in the exact shape of MERMAID's recorded GPT-4o runs."""
    results = {
        "query": "Eiffel Tower location",
        "results": [
            {
                "title": "Eiffel Tower - Wikipedia",
                "link": "https://en.wikipedia.org/wiki/Eiffel_Tower",
                "snippet": "The Eiffel Tower is a wrought-iron lattice tower in Paris, France.",
                "position": 1,
            }
        ],
    }
    observation = f"Observation: [TextContent(type='text', text={json.dumps(results)!r}, annotations=None, meta=None)]"  # noqa: E501
    record = {
        "claim": "The Eiffel Tower is in Berlin.",
        "label": "false",
        "decomposition": {},
        "prediction": "False",
        "react_trace": [
            "Thought: find its location",
            "Action: Used search_google with input: Eiffel Tower location",
            observation,
        ],
    }
    file = path / "factool_qa_gpt-4o.json"
    file.write_text(json.dumps([record]))
    return file


async def test_inprocess_and_stdio_tools_observe_the_same_on_recorded_data(tmp_path):
    spec = {"google": {"type": "recorded", "path": str(_recording(tmp_path))}}
    sources = managed_sources(spec)
    local = {t.name: t for t in evidence_tools(sources)}
    remote_set = McpToolset([ToolServerSpec.from_sources(sources).server_config()])
    remote = {t.name: t for t in await remote_set.tools()}
    assert list(local) == list(remote) == ["search_google"]
    outcomes = []
    for tool in (local["search_google"], remote["search_google"]):
        ctx = context.CheckContext(claim="The Eiffel Tower is in Berlin.")
        with context.check_context(ctx):
            obs = await tool.call(tool.input_model(query="where is the Eiffel Tower"))
        outcomes.append((obs, ctx.usage.searches))
    (a, n_a), (b, n_b) = outcomes
    assert a.text == b.text and "wrought-iron" in a.text
    assert [d.id for d in a.documents] == [d.id for d in b.documents]
    assert [d.metadata["claim_matched"] for d in b.documents] == [True]
    assert n_a == n_b == 1
    await remote_set.aclose()


# ----------------------------------------------------------------------- external servers


def facts_server(marker: Path, **extra) -> McpServerConfig:
    return McpServerConfig(
        name="facts", command=sys.executable, args=[str(ECHO_SERVER), str(marker)], **extra
    )


async def test_an_external_server_from_config_adds_namespaced_tools(tmp_path):
    llm = ScriptedLLM()
    llm.on(".*", DECOMPOSED, tag="decomposer")
    llm.on(".*", step("facts_lookup", topic="Eiffel Tower"), tag="executor:1")
    llm.on(".*", answer("false"), tag="executor:2")
    server = facts_server(tmp_path / "starts").model_dump()
    flags = {
        "method": "mermaid",
        "method_config": {"mcp_servers": [server], "tools": ["facts_lookup"], "memory": "off"},
    }
    run = build_run(resolve_spec(flags=flags), llm=llm)
    verdict = await run.check(Claim(text="The Eiffel Tower is in Berlin."))
    assert verdict.label == "false"
    schema = json.dumps(llm.calls_tagged("executor:1")[0].json_schema)
    assert "facts_lookup" in schema and "facts_crash" not in schema
    step_two = llm.calls_tagged("executor:2")[0].messages[-1].content
    assert "Champ de Mars" in step_two
    await run.method.toolbox.aclose()


async def test_a_dead_server_is_restarted_once(tmp_path):
    marker = tmp_path / "starts"
    toolset = McpToolset([facts_server(marker)])
    await toolset.tools()
    server = toolset.servers[0]
    ok = await toolset.call(server, "lookup", {"topic": "berlin"})
    assert "capital" in ok.text
    # the server dies between calls: the next call restarts it and succeeds
    pid = int(marker.read_text().split()[-1])
    os.kill(pid, signal.SIGKILL)
    await asyncio.sleep(0.5)
    again = await toolset.call(server, "lookup", {"topic": "berlin"})
    assert "capital" in again.text and len(marker.read_text().split()) == 2
    # a call that kills the server every time: restarted once, then an error
    with pytest.raises(ToolServerError, match="did not recover"):
        await toolset.call(server, "crash", {})
    assert len(marker.read_text().split()) == 3
    await toolset.aclose()


async def test_timeouts_and_bad_arguments_are_observations(tmp_path):
    toolset = McpToolset([facts_server(tmp_path / "starts", timeout_s=1.0)])
    await toolset.tools()
    server = toolset.servers[0]
    slow = await toolset.call(server, "slow", {"seconds": 5})
    assert slow.error and "timed out" in slow.error
    bad = await toolset.call(server, "lookup", {})
    assert bad.error and "topic" in bad.text
    await toolset.aclose()


async def test_a_server_that_cannot_start_is_the_checks_error(tmp_path):
    broken = {"name": "broken", "command": sys.executable, "args": ["-c", "raise SystemExit(1)"]}
    llm = ScriptedLLM().on(".*", DECOMPOSED, tag="decomposer")
    flags = {"method": "mermaid", "method_config": {"mcp_servers": [broken], "memory": "off"}}
    run = build_run(resolve_spec(flags=flags), llm=llm)
    verdict = await run.check(Claim(text="The Eiffel Tower is in Berlin."))
    assert verdict.label is None and "broken" in verdict.error


# ----------------------------------------------------------------------- veracity mcp


def _direct_script() -> ScriptedLLM:
    return ScriptedLLM().on(
        r"Eiffel",
        ScriptedReply('{"label": "false"}', alternatives={"false": 0.9, "true": 0.1}, at="false"),
    )


async def test_veracity_mcp_checks_claims_for_an_mcp_client(tiny_index):
    with scripted_endpoint(_direct_script()) as base_url:
        params = stdio(
            "mcp", "--base-url", base_url, "--model", "scripted", "--method", "direct",
            "--source", f"docs=local:{tiny_index}",
        )  # fmt: skip
        async with Client(params) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names == {
                "check",
                "check_document",
                "search_evidence",
                "list_methods",
                "list_sources",
            }
            progress: list[str] = []

            async def on_progress(done, total, message):
                progress.append(message)

            result = await client.call_tool(
                "check",
                {"text": "The Eiffel Tower is in Berlin.", "labels": "true_false"},
                progress_callback=on_progress,
            )
            assert not result.is_error, result.content
            verdict = result.structured_content
            assert verdict["label"] == "false" and verdict["method"] == "direct"
            assert verdict["confidence"] == pytest.approx(0.9, abs=0.01)
            assert verdict["usage"]["llm_calls"] == 1
            assert any("llm_call" in m for m in progress)
            # bad input: a tool error, and the server keeps serving
            empty = await client.call_tool("check", {"text": " "})
            assert empty.is_error and "empty" in empty.content[0].text
            unknown = await client.call_tool("check", {"text": "x", "method": "nope"})
            assert unknown.is_error and "unknown method" in unknown.content[0].text
            found = await client.call_tool("search_evidence", {"query": "Berlin capital"})
            assert found.structured_content["documents"][0]["title"] == "Berlin"
            methods = await client.call_tool("list_methods", {})
            listed = {m["name"] for m in methods.structured_content["methods"]}
            assert {"direct", "mermaid", "mermaid_single"} <= listed


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read().decode()[-2000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("server did not start listening")


@pytest.mark.server
async def test_streamable_http_with_a_bearer_token(tiny_index, monkeypatch):
    port = _free_port()
    command, argv = veracity_command(
        "mcp", "tools", "--source", f"docs=local:{tiny_index}", "--http", "--port", str(port),
        "--token-env", "TEST_MCP_TOKEN",
    )  # fmt: skip
    env = {**os.environ, "TEST_MCP_TOKEN": "s3cret"}
    proc = subprocess.Popen([command, *argv], env=env, stderr=subprocess.PIPE)
    try:
        _wait_for_port(port, proc)
        url = f"http://127.0.0.1:{port}/mcp"
        monkeypatch.setenv("CLIENT_TOKEN", "wrong")
        refused = McpToolset(
            [
                McpServerConfig(
                    name="h", url=url, bearer_token_env="CLIENT_TOKEN", allow_private=True
                )
            ]
        )
        with pytest.raises(ToolServerError, match=r"401|cannot start"):
            await refused.tools()
        monkeypatch.setenv("CLIENT_TOKEN", "s3cret")
        toolset = McpToolset(
            [
                McpServerConfig(
                    name="h", url=url, bearer_token_env="CLIENT_TOKEN", allow_private=True
                )
            ]
        )
        tools = await toolset.tools()
        assert [t.name for t in tools] == ["h_search_docs"]
        with eval_guards(EvalGuards(exclude_domains=("example.org",))):
            obs = await tools[0].call(tools[0].input_model(query="Berlin"))
        assert obs.documents[0].title == "Berlin"
        await toolset.aclose()
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_veracity_check_runs_mermaid_from_the_command_line(tiny_index):
    llm = ScriptedLLM()
    llm.on(r"Claim to analyse", DECOMPOSED)
    llm.on(r"Steps so far:\n\(none yet\)", step("search_docs", query="Eiffel Tower"))
    llm.on(r"Observation 1", answer("false"))
    with scripted_endpoint(llm) as base_url:
        command, argv = veracity_command(
            "check", "The Eiffel Tower is in Berlin.", "--method", "mermaid", "--json",
            "--base-url", base_url, "--model", "scripted", "--source", f"docs=local:{tiny_index}",
            "--memory", "off",
        )  # fmt: skip
        done = subprocess.run([command, *argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    verdict = json.loads(done.stdout)
    assert verdict["label"] == "false" and verdict["metadata"]["memory"]["mode"] == "off"
    assert verdict["metadata"]["counters"]["tool_calls"] == 1
