"""MERMAID's evidence tool server, started when the run is built and kept warm per process
(`veracity.methods.mermaid.warm`), spawned for real over stdio.

The server processes are found in /proc (children of this process running the tool
server), so "one server" and "no orphan" are counted on the operating system's side.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.mermaid import warm
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import build_run, resolve_spec
from veracity.runtime.home import home_paths
from veracity.testing import ScriptedLLM, ScriptedReply
from veracity.tools.mcp_client import McpToolset

pytestmark = pytest.mark.slow

DOCS = [
    Document(id="d1", title="Eiffel Tower", text="The Eiffel Tower is a tower in Paris, France."),
    Document(id="d2", title="Berlin", text="Berlin is the capital of Germany."),
]
DECOMPOSED = json.dumps(
    {
        "triplets": [{"subject": "Eiffel Tower", "relation": "is in", "object": "Berlin"}],
        "topics": ["Geography"],
    }
)
CLAIM = Claim(text="The Eiffel Tower is in Berlin.")


@pytest.fixture
def tiny_index(_isolated_home):
    build_local_corpus("tiny", DOCS, mode="bm25", indexes_dir=home_paths().indexes)
    return "tiny"


@pytest.fixture(autouse=True)
def _no_servers_left():
    """Every test starts and ends with no warm server in this process."""
    warm.close_all()
    yield
    warm.close_all()


def scripted() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(".*", DECOMPOSED, tag="decomposer")
    search = {"name": "search_docs", "reason": "look", "input": {"query": "Eiffel Tower"}}
    llm.on(".*", json.dumps({"thought": "I need evidence.", "action": search}), tag="executor:1")
    answer = ScriptedReply(json.dumps({"thought": "Paris.", "answer": "false"}))
    llm.on(".*", answer, tag="executor:2")
    return llm


def build(index: str):
    flags = {
        "method": "mermaid",
        "sources": {"docs": {"type": "local", "index": index}},
        "method_config": {"memory": "off"},
    }
    return build_run(resolve_spec(flags=flags), llm=scripted())


def tool_servers() -> set[int]:
    """Pids of this process's children that run the evidence tool server."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        state = stat.rsplit(")", 1)[1].split()[0]
        joined = b" ".join(argv)
        is_server = b"veracity.mcp.tool_server" in joined or b"mcp tools" in joined
        if parent == os.getpid() and is_server and state != "Z":
            found.add(int(entry.name))
    return found


def gone(pids: set[int], within_s: float = 20.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not pids & tool_servers():
            return True
        time.sleep(0.1)
    return False


def connects(verdict) -> list[dict]:
    return [e.data for e in verdict.trace.of_kind("stage") if e.name == "mcp:evidence"]


async def test_the_server_starts_when_the_run_is_built_not_when_a_check_needs_it(tiny_index):
    run = build(tiny_index)
    # no check has run, no event loop of ours has waited: the server is on its way up
    (server,) = warm.running()
    await server.open()  # as a check's model calls would take this long
    assert server.starts == 1 and len(tool_servers()) == 1
    verdict = await run.check(CLAIM)
    assert verdict.label == "false" and verdict.error is None
    assert verdict.usage.searches == 1
    # the check found the server up, and connected at its first tool call
    (connect,) = connects(verdict)
    assert connect["warm"] is True and connect["starts"] == 1 and not connect["fresh"]
    await run.aclose()


async def test_a_check_waits_for_the_server_only_at_its_first_tool_call(tiny_index):
    run = build(tiny_index)
    verdict = await run.check(CLAIM)
    assert verdict.label == "false" and verdict.error is None
    events = verdict.trace.events
    connect = next(i for i, e in enumerate(events) if e.name == "mcp:evidence")
    decomposed = next(i for i, e in enumerate(events) if e.name == "decomposer")
    first_step = next(
        i for i, e in enumerate(events) if e.kind == "llm_call" and e.name == "executor:1"
    )
    # the tools were offered to the model before the server was waited for
    assert decomposed < first_step < connect
    assert events[connect].data["step"] == "connect"
    await run.aclose()


def test_one_server_per_process_across_event_loops_and_runs(tiny_index):
    first, second = build(tiny_index), build(tiny_index)  # the same tool server spec
    a = asyncio.run(first.check(CLAIM))
    pids = tool_servers()
    b = asyncio.run(first.check(CLAIM))  # a new event loop
    c = asyncio.run(second.check(CLAIM))  # another run
    assert [v.label for v in (a, b, c)] == ["false"] * 3
    assert len(pids) == 1 and tool_servers() == pids
    (server,) = warm.running()
    assert server.starts == 1 and server.users == 2
    assert [connects(v)[0]["warm"] for v in (b, c)] == [True, True]
    # closing one run leaves the server to the other; closing the last stops it
    asyncio.run(first.aclose())
    assert tool_servers() == pids
    asyncio.run(second.aclose())
    assert gone(pids) and warm.running() == []


async def test_no_server_process_is_left_after_the_run_closes(tiny_index):
    run = build(tiny_index)
    assert (await run.check(CLAIM)).label == "false"
    pids = tool_servers()
    assert len(pids) == 1
    await run.aclose()  # while this event loop still runs
    assert gone(pids)
    assert warm.running() == []


def test_a_server_that_died_is_restarted_with_the_fault_recorded(tiny_index):
    run = build(tiny_index)
    assert asyncio.run(run.check(CLAIM)).label == "false"
    (pid,) = tool_servers()
    os.kill(pid, signal.SIGKILL)
    assert gone({pid})
    verdict = asyncio.run(run.check(CLAIM))  # a new loop: the process's server is used
    assert verdict.label == "false" and verdict.error is None
    faults = [e for e in verdict.trace.of_kind("error") if e.name == "mcp:evidence"]
    assert len(faults) == 1 and faults[0].data["attempt"] == 1
    assert any(c["fresh"] and c["starts"] == 2 for c in connects(verdict))
    assert len(tool_servers() - {pid}) == 1
    assert verdict.usage.searches == 1
    asyncio.run(run.aclose())


async def test_the_tools_offered_before_the_server_is_up_are_the_ones_it_lists(tiny_index):
    run = build(tiny_index)
    toolbox = run.method.toolbox
    offered = await toolbox.tools()  # no waiting: described in this process
    plain = McpToolset(toolbox.toolset.servers)  # the server's own listing
    listed = await plain.tools()
    assert [(t.name, t.description, t.input_schema) for t in offered] == [
        (t.name, t.description, t.input_schema) for t in listed
    ]
    await plain.aclose()
    await run.aclose()


async def test_runs_built_under_different_homes_do_not_share_a_server(
    tiny_index, tmp_path, monkeypatch
):
    first = build(tiny_index)  # its index holds the Eiffel Tower page
    other = tmp_path / "other-home"
    monkeypatch.setenv("VERACITY_HOME", str(other))
    moved = Document(id="m1", title="Eiffel Tower replica", text="A replica stands in Las Vegas.")
    build_local_corpus("tiny", [moved], mode="bm25", indexes_dir=other / "indexes")
    second = build(tiny_index)  # the same index name, in another home
    a, b = await first.check(CLAIM), await second.check(CLAIM)
    assert [e.document.title for e in a.evidence] == ["Eiffel Tower"]
    assert [e.document.title for e in b.evidence] == ["Eiffel Tower replica"]
    assert len(warm.running()) == 2 and len(tool_servers()) == 2
    await first.aclose()
    await second.aclose()
