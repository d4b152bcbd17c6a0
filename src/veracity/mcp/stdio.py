"""MCP over stdio that answers every line, and keeps serving whatever it is sent.

The SDK's stdio transport drops a line it cannot read (it logs it and goes on), so the
client that sent it waits forever. Here each line is screened before the SDK sees it
(`screen`), and what the SDK would drop gets a JSON-RPC error instead:

- -32700 parse error: not JSON (including bytes that are not UTF-8 outside a string, a
  nesting or a number past `veracity.core.textio`'s bounds, a line over `MAX_LINE_BYTES`);
- -32600 invalid request: JSON that is not one JSON-RPC 2.0 message (a batch, a scalar,
  a wrong ``jsonrpc``, an ``id`` that is not a string or an integer, a ``method`` that is
  not text);
- -32602 invalid params: a request whose ``params`` is not an object, or holds text that
  is not Unicode (a lone surrogate, written as an escape or as bytes that are not UTF-8).

An error answer carries the request's id when it could be read, else null. A broken
notification, or a broken answer of the client's, gets no answer (JSON-RPC forbids one);
it is logged. Blank lines are skipped. Lines that pass reach the SDK unchanged.

While serving, file descriptor 0 reads nothing and 1 goes to stderr: the wire runs on
private duplicates, so stray output of handlers or child processes never corrupts it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
from mcp.server.stdio import stdio_server
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError

from veracity.core.errors import InputError
from veracity.core.textio import parse_json

log = logging.getLogger("veracity.mcp")

PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
MAX_LINE_BYTES = 16 * 1024**2  # one message; a longer line is refused, not buffered whole
_SURROGATE = re.compile(r"[\ud800-\udfff]")


@dataclass(frozen=True)
class Rejected:
    """A line answered with a JSON-RPC error (`id` None: answered with a null id; `reply`
    False: a notification, logged and not answered)."""

    code: int
    message: str
    id: str | int | None = None
    reply: bool = True

    def line(self) -> str:
        error = {"code": self.code, "message": self.message}
        return json.dumps({"jsonrpc": "2.0", "id": self.id, "error": error}) + "\n"


def screen(line: bytes) -> str | Rejected | None:
    """What to do with one line read from the client.

    Returns:
        the text to hand to the SDK, a `Rejected` to answer with, or None (a blank line).
    """
    if not line.strip():
        return None
    if len(line) > MAX_LINE_BYTES:
        return Rejected(PARSE_ERROR, f"parse error: a message is limited to {MAX_LINE_BYTES} bytes")
    text = line.decode("utf-8", errors="surrogateescape")  # bad bytes become lone surrogates
    try:
        message = parse_json(text, "the message")
    except InputError as exc:
        return Rejected(PARSE_ERROR, f"parse error: {exc}")
    if isinstance(message, list):
        return Rejected(INVALID_REQUEST, "invalid request: batches are not supported")
    if not isinstance(message, dict):
        return Rejected(INVALID_REQUEST, "invalid request: a message is a JSON object")
    problem = _problem(message)
    return problem if problem is not None else text


def _problem(message: dict[str, Any]) -> Rejected | None:
    """Why `message` cannot be handed on, or None."""
    rid = message.get("id")
    valid_id = isinstance(rid, (str, int)) and not isinstance(rid, bool)
    if "id" in message and not valid_id:
        return Rejected(INVALID_REQUEST, "invalid request: an id is a string or an integer")
    answer = rid if valid_id else None
    is_answer = "method" not in message and ("result" in message or "error" in message)
    # notifications and the client's answers are never answered; anything else is
    reply = not is_answer and (valid_id or "method" not in message)

    def rejected(code: int, why: str) -> Rejected:
        return Rejected(code, why, answer, reply)

    if message.get("jsonrpc") != "2.0":
        return rejected(INVALID_REQUEST, 'invalid request: "jsonrpc" must be "2.0"')
    if "method" in message and not isinstance(message["method"], str):
        return rejected(INVALID_REQUEST, 'invalid request: "method" must be a string')
    if _has_surrogate(message.get("method")) or _has_surrogate(message.get("id")):
        return rejected(INVALID_REQUEST, "invalid request: the method or id is not valid Unicode")
    if "params" in message and not isinstance(message["params"], dict):
        return rejected(INVALID_PARAMS, 'invalid params: "params" must be an object')
    if any(_has_surrogate(v) for k, v in message.items() if k not in ("method", "id")):
        where = "params" if _has_surrogate(message.get("params")) else "message"
        return rejected(
            INVALID_PARAMS if where == "params" else INVALID_REQUEST,
            f"invalid {where}: text that is not valid Unicode (a lone surrogate or bytes "
            "that are not UTF-8); send UTF-8",
        )
    try:
        jsonrpc_message_adapter.validate_python(message, by_name=False)
    except ValidationError as exc:
        in_params = any("params" in e["loc"] for e in exc.errors())
        code = INVALID_PARAMS if in_params and "method" in message else INVALID_REQUEST
        return rejected(code, "invalid request: not a JSON-RPC request, notification or reply")
    return None


def _has_surrogate(value: Any) -> bool:
    """Whether a string anywhere in `value` (keys included) holds a lone surrogate."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if _SURROGATE.search(node):
                return True
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


class _Wire:
    """The client's end of stdout: whole lines, one writer at a time (the SDK's answers
    and ours). The SDK writes each message with one `write` call."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._lock = threading.Lock()

    def _put(self, text: str) -> None:
        with self._lock:
            self._raw.write(text.encode("utf-8", errors="replace"))
            self._raw.flush()

    async def write(self, text: str) -> None:
        await anyio.to_thread.run_sync(self._put, text, abandon_on_cancel=True)

    async def flush(self) -> None:
        return None


def _read_line(raw: BinaryIO) -> bytes:
    """The next line (b"" at the end); a line past the limit is read off and cut."""
    line = raw.readline(MAX_LINE_BYTES + 1)
    if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
        while (rest := raw.readline(1 << 20)) and not rest.endswith(b"\n"):
            pass  # discarded: only its length matters
    return line


async def _lines(raw: BinaryIO, wire: _Wire) -> AsyncIterator[str]:
    """The lines the SDK may read; the others are answered (or logged) here."""
    while line := await anyio.to_thread.run_sync(_read_line, raw, abandon_on_cancel=True):
        verdict = screen(line)
        if isinstance(verdict, str):
            yield verdict
        elif isinstance(verdict, Rejected):
            if verdict.reply:
                await wire.write(verdict.line())
            else:
                log.warning("a message without an id was dropped: %s", verdict.message)


@contextlib.contextmanager
def _claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The wire on private duplicates of fds 0 and 1, which meanwhile read nothing and
    write to stderr. The duplicates stay open: a reading thread may outlive the server."""
    sys.stdout.flush()
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield (
            os.fdopen(wire_in, "rb", closefd=False),
            os.fdopen(wire_out, "wb", closefd=False),
        )
    finally:
        sys.stdout.flush()
        os.dup2(wire_in, 0)
        os.dup2(wire_out, 1)


async def serve_stdio(server: Any) -> None:
    """Serve `server` (an `MCPServer` or a low-level `Server`) on stdin and stdout."""
    lowlevel = getattr(server, "_lowlevel_server", server)  # what MCPServer runs on stdio
    with _claimed_stdio() as (wire_in, wire_out):
        wire = _Wire(wire_out)
        streams: Any = {"stdin": _lines(wire_in, wire), "stdout": wire}
        async with stdio_server(**streams) as (read, write):
            await lowlevel.run(read, write, lowlevel.create_initialization_options())
