"""MCP over stdio (issue 23, item 14): every broken line gets a JSON-RPC error, and the
server keeps serving.

The servers run as real subprocesses (`veracity mcp tools` and `veracity mcp`). The
official SDK client drives each one over its pipes; between the client's own messages,
raw lines are written to the same pipe (not JSON, not UTF-8, lone surrogates, malformed
``params``, batches, bad ids, a line past the size limit, nesting and numbers past the
parser's bounds). Each must be answered with the right code (-32700 parse error, -32600
invalid request, -32602 invalid params; -32601 where the SDK itself answers), carrying
the request's id when it has a valid one; a broken notification gets no answer. After
all of them the SDK client still lists tools and calls one.

Outcomes per case: clear error (the expected code and id), silently wrong (no answer,
or another code or id), crashed (the server died or stopped answering).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.message import SessionMessage
from mcp.types import (
    CLIENT_CAPABILITIES_META_KEY,
    LATEST_PROTOCOL_VERSION,
    PROTOCOL_VERSION_META_KEY,
    jsonrpc_message_adapter,
)

from veracity.core.types import Document
from veracity.mcp.stdio import MAX_LINE_BYTES
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime.home import home_paths
from veracity.testing.fake_openai import FakeOpenAIServer

PARSE, INVALID, PARAMS, NO_METHOD = -32700, -32600, -32602, -32601
ANSWER_S = 15.0  # how long an answer may take on a loaded machine
SILENCE_S = 1.5  # how long to wait for the answer that must not come


# what a request of the protocol the SDK client negotiates carries in params._meta
ENVELOPE = {
    "_meta": {PROTOCOL_VERSION_META_KEY: LATEST_PROTOCOL_VERSION, CLIENT_CAPABILITIES_META_KEY: {}}
}


def req(rid: Any, method: str, params: Any = None, **extra: Any) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method, **extra}
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


CALL = '{"jsonrpc":"2.0","id":"raw-%d","method":"tools/call","params":%s}'


def call(n: int, params: str) -> bytes:
    return (CALL % (n, params)).encode()


# name, raw line, expected code (None: no answer), expected id ("same": the line's id)
CASES: list[tuple[str, bytes, int | None, Any]] = [
    ("not JSON", b"this is not json", PARSE, None),
    ("truncated JSON", b'{"jsonrpc":"2.0","id":"raw-1","method":"tools/list"', PARSE, None),
    ("bytes not UTF-8 outside a string", b'{"jsonrpc":"2.0",\xff"id":"raw-2"}', PARSE, None),
    ("bytes not UTF-8 in an argument", call(3, '{"name":"x","arguments":{"q":"\xff\xfe"}}'),
     PARAMS, "same"),
    ("lone surrogate in an argument", call(4, r'{"name":"x","arguments":{"q":"\ud800"}}'),
     PARAMS, "same"),
    ("lone surrogate in a key", call(5, r'{"name":"x","arguments":{"\udfff":"q"}}'),
     PARAMS, "same"),
    ("lone surrogate in the method", rb'{"jsonrpc":"2.0","id":"raw-6","method":"tools/\udc00"}',
     INVALID, "same"),
    ("params a string", req("raw-7", "tools/call", "oops"), PARAMS, "same"),
    ("params a list", req("raw-8", "tools/call", [1, 2]), PARAMS, "same"),
    ("params a number", req("raw-9", "tools/list", 5), PARAMS, "same"),
    ("tool name a number", req("raw-10", "tools/call", {"name": 5, **ENVELOPE}), PARAMS, "same"),
    ("arguments a string",
     req("raw-11", "tools/call", {"name": "x", "arguments": "q", **ENVELOPE}), PARAMS, "same"),
    ("no _meta envelope", req("raw-22", "tools/list", {}), PARAMS, "same"),
    ("no jsonrpc member", b'{"id":"raw-12","method":"tools/list"}', INVALID, "same"),
    ("jsonrpc 1.0", b'{"jsonrpc":"1.0","id":"raw-13","method":"tools/list"}', INVALID, "same"),
    ("id an object", req({"a": 1}, "tools/list"), INVALID, None),
    ("id a fraction", req(1.5, "tools/list"), INVALID, None),
    ("id a boolean", req(True, "tools/list"), INVALID, None),
    ("a batch", b"[" + req("raw-17", "tools/list") + b"]", INVALID, None),
    ("a JSON number", b"42", INVALID, None),
    ("an empty object", b"{}", INVALID, None),
    ("method a number", b'{"jsonrpc":"2.0","id":"raw-20","method":5}', INVALID, "same"),
    ("unknown method", req("raw-21", "no/such", ENVELOPE), NO_METHOD, "same"),
    ("nesting 100,000 deep", b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}", PARSE, None),
    ("a 5,000-digit id", b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"x"}', PARSE,
     None),
    ("a line past the size limit", b'{"x":"' + b"a" * (MAX_LINE_BYTES + 10) + b'"}', PARSE,
     None),
    ("a notification with params a string",
     b'{"jsonrpc":"2.0","method":"notifications/initialized","params":"x"}', None, None),
    ("a notification with a lone surrogate",
     rb'{"jsonrpc":"2.0","method":"notifications/roots/list_changed","params":{"a":"\ud800"}}',
     None, None),
    ("a blank line", b"   ", None, None),
]  # fmt: skip


@dataclass
class Tap:
    """The pipe under the SDK client: raw lines go in, answers to them come out here."""

    write: Any = None
    answers: Any = None
    lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def send_raw(self, raw: bytes) -> None:
        async with self.lock:
            await self.write(raw + b"\n")

    async def exchange(self, raw: bytes, expect: bool) -> dict | None:
        """Send `raw`; its answer, or None when none came in time."""
        await self.send_raw(raw)
        with anyio.move_on_after(ANSWER_S if expect else SILENCE_S):
            return await self.answers.receive()
        return None


def _tapped(msg: dict[str, Any]) -> bool:
    """An answer to one of the raw lines (their ids start with raw-, or it has none)."""
    rid = msg.get("id")
    return ("error" in msg and rid is None) or (isinstance(rid, str) and rid.startswith("raw-"))


@asynccontextmanager
async def tapped_stdio(command: list[str], tap: Tap, log: Path) -> AsyncIterator[Any]:
    """An SDK client transport over a subprocess's stdio, with `tap` on the same pipe."""
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](100)
    client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](100)
    tapped_send, tap.answers = anyio.create_memory_object_stream[dict](100)
    with open(log, "wb") as err:
        proc = await anyio.open_process(command, stderr=err, env=dict(os.environ))
        tap.write = proc.stdin.send

        async def from_server() -> None:
            buffer = b""
            async for chunk in proc.stdout:
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    msg = json.loads(line)
                    if _tapped(msg):
                        await tapped_send.send(msg)
                    else:
                        message = jsonrpc_message_adapter.validate_python(msg, by_name=False)
                        await to_client.send(SessionMessage(message))

        async def to_server() -> None:
            async for item in from_client:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                await tap.send_raw(text.encode())

        async with anyio.create_task_group() as tg:
            tg.start_soon(from_server)
            tg.start_soon(to_server)
            try:
                yield client_reads, client_writes
            finally:
                await proc.stdin.aclose()
                with anyio.move_on_after(10):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                tg.cancel_scope.cancel()


def veracity(*args: str) -> list[str]:
    return [sys.executable, "-m", "veracity", *args]


@pytest.fixture
def tiny_index(_isolated_home) -> str:
    docs = [Document(id="d1", title="Berlin", text="Berlin is the capital of Germany.")]
    build_local_corpus("tiny", docs, mode="bm25", indexes_dir=home_paths().indexes)
    return "tiny"


async def run_cases(client: Client, tap: Tap) -> tuple[list[str], list[str], int]:
    """Every case through `tap`; (silently wrong, crashed, clear errors)."""
    silent, crashed, clear = [], [], 0
    for name, raw, code, rid in CASES:
        answer = await tap.exchange(raw, expect=code is not None)
        if code is None:
            if answer is None:
                clear += 1
            else:
                silent.append(f"{name}: answered {answer}")
            continue
        want_id = (
            json.loads(raw.decode("utf-8", "surrogateescape"))["id"] if rid == "same" else None
        )
        got = (answer or {}).get("error", {}).get("code")
        if answer is not None and got == code and answer.get("id") == want_id:
            clear += 1
        elif answer is None and not (await _alive(client)):
            crashed.append(f"{name}: the server stopped answering")
        else:
            silent.append(f"{name}: wanted {code} (id {want_id!r}), got {answer}")
    return silent, crashed, clear


async def _alive(client: Client) -> bool:
    with anyio.move_on_after(ANSWER_S):
        await client.list_tools()
        return True
    return False


def _report(capsys, server: str, clear: int, silent: list[str], crashed: list[str]) -> None:
    with capsys.disabled():
        print(f"\nMCP stdio ({server}): tried {len(CASES)}, clear error {clear}, crashed "
              f"{len(crashed)}, silently wrong {len(silent)}")  # fmt: skip


async def test_the_tool_server_answers_every_broken_line_and_keeps_serving(
    tiny_index, tmp_path, capsys
):
    tap = Tap()
    command = veracity("mcp", "tools", "--source", f"docs=local:{tiny_index}")
    async with Client(tapped_stdio(command, tap, tmp_path / "stderr.log")) as client:
        silent, crashed, clear = await run_cases(client, tap)
        tools = [t.name for t in (await client.list_tools()).tools]
        result = await client.call_tool("search_docs", {"query": "Berlin"})
    _report(capsys, "mcp tools", clear, silent, crashed)
    assert crashed == [] and silent == [], "\n".join(crashed + silent)
    assert clear == len(CASES)
    assert tools == ["search_docs"]
    assert not result.is_error and result.structured_content["documents"][0]["title"] == "Berlin"
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


async def test_the_check_server_answers_every_broken_line_and_still_checks(
    tiny_index, tmp_path, capsys
):
    tap = Tap()
    with FakeOpenAIServer() as fake:
        command = veracity("mcp", "--base-url", fake.url, "--model", "fake", "--method",
                           "direct", "--source", f"docs=local:{tiny_index}")  # fmt: skip
        async with Client(tapped_stdio(command, tap, tmp_path / "stderr.log")) as client:
            silent, crashed, clear = await run_cases(client, tap)
            # a lone surrogate inside the check tool's own text, through the raw pipe
            bad = call(900, r'{"name":"check","arguments":{"text":"Rain \ud83d is wet."}}')
            refused = await tap.exchange(bad, expect=True)
            result = await client.call_tool("check", {"text": "Rain is wet."})
    _report(capsys, "mcp", clear, silent, crashed)
    assert crashed == [] and silent == [], "\n".join(crashed + silent)
    assert refused == {"jsonrpc": "2.0", "id": "raw-900", "error": refused["error"]}
    assert refused["error"]["code"] == PARAMS
    assert not result.is_error, result.content
    assert result.structured_content["method"] == "direct"


def test_a_server_whose_client_goes_away_mid_line_exits_cleanly(tiny_index, tmp_path):
    proc = subprocess.run(
        veracity("mcp", "tools", "--source", f"docs=local:{tiny_index}"),
        input=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"',  # no newline, then EOF
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert "Traceback" not in proc.stderr.decode()
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert answers == [{"jsonrpc": "2.0", "id": None, "error": answers[0]["error"]}]
    assert answers[0]["error"]["code"] == PARSE
