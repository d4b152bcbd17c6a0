"""Tools from MCP servers: an agent's tools as an MCP client (official `mcp` SDK).

`McpToolset` connects to the servers of its config — a command spoken to over stdio,
or a streamable-HTTP URL — lists their tools and wraps each as a `Tool` whose argument
model is built from the tool's JSON input schema. Tool names are namespaced by server
(``<server>_<tool>``) except for servers configured with an empty ``prefix`` (veracity's
own evidence tool server keeps the plain names).

Connections: one per server and event loop, held open by a background task of that
loop (the SDK's streams belong to the task that opened them), so concurrent checks in
one loop share the server process and a new loop (each `asyncio.run`) starts its own.

Each call carries the check's retrieval rules in the request ``_meta``
(`call_meta`): the evaluation guards (date cutoff, excluded domains) and the claim
being checked, which our tool server applies on its side. Failures:

- a tool error (bad arguments, the tool failed) is an observation with the error;
- a timeout is an observation with the error;
- every failed call counts as a failed search of the check (our tool server reports
  the failures of the searches it made; another server's error result, a timeout or a
  failed call count once), so a check whose evidence calls all failed says so;
- a server that died is restarted once and the call repeated; if that fails too,
  `ToolServerError` is raised, which the check records as its error.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import time
import weakref
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from veracity.core import context
from veracity.core.bounds import Seconds
from veracity.core.errors import SourceError
from veracity.core.events import Fault, SearchDone, Stage, TraceEvent
from veracity.retrieval.guards import EvalGuards, current_guards, eval_guards
from veracity.tools.base import Observation
from veracity.tools.mcp_http import check_server_url, http_streams
from veracity.tools.schema import model_from_schema

META_KEY = "veracity/call"


class ToolServerError(SourceError):
    """An MCP tool server cannot be reached (after one restart)."""

    def __init__(self, server: str, message: str):
        super().__init__(f"mcp:{server}", message)


class McpServerConfig(BaseModel):
    """One MCP server an agent uses.

    Attributes:
        name: the server's name in traces and the default tool-name prefix.
        command, args, env, cwd: launch the server and talk over its stdin/stdout.
        url: a streamable-HTTP endpoint instead of a command; every request to it passes
            the public-address guard (`veracity.tools.mcp_http`).
        bearer_token_env: environment variable holding a bearer token for `url`.
        allow_private: reach `url` on a loopback or private address (a server you run
            yourself); only the operator's run config can say so.
        prefix: tool-name prefix (None: ``<name>_``; "" for none).
        tools: only these of the server's tools (None: all).
        timeout_s: seconds a call may take before it is an error observation.
        inherit_env: pass this process's whole environment to a launched server
            (veracity's own tool server needs its settings and API keys); otherwise
            only the SDK's safe defaults plus `env`.
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_-]+$")
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    bearer_token_env: str | None = None
    prefix: str | None = None
    tools: list[str] | None = None
    timeout_s: Seconds = Field(default=120.0, gt=0)
    inherit_env: bool = False
    allow_private: bool = False

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"mcp server {self.name!r}: give exactly one of command or url")
        return self

    def tool_name(self, remote: str) -> str:
        prefix = f"{self.name}_" if self.prefix is None else self.prefix
        return f"{prefix}{remote}"

    def target(self) -> Any:
        """What `mcp.Client` connects to: stdio parameters or a streamable-HTTP transport."""
        if self.command is not None:
            from mcp import StdioServerParameters

            env = {**os.environ, **self.env} if self.inherit_env else dict(self.env)
            return StdioServerParameters(
                command=self.command, args=list(self.args), env=env or None, cwd=self.cwd
            )
        assert self.url is not None
        token = None
        if self.bearer_token_env:
            token = os.environ.get(self.bearer_token_env)
            if not token:
                raise ToolServerError(self.name, f"{self.bearer_token_env} is not set")
        return http_streams(
            self.url, source=f"mcp:{self.name}", token=token, allow_private=self.allow_private
        )


def call_meta() -> dict[str, Any]:
    """The retrieval rules of the running check, to send with a tool call."""
    g = current_guards()
    rules: dict[str, Any] = {}
    if g is not None:
        rules["before"] = g.before.isoformat() if g.before else None
        rules["exclude_domains"] = list(g.exclude_domains)
        rules["drop_undated"] = g.drop_undated
    claim = context.current().claim
    if claim is not None:
        rules["claim"] = claim
    return {META_KEY: rules} if rules else {}


def applied_meta(meta: Any) -> contextlib.ExitStack:
    """Server side: a context manager applying the rules `call_meta` sent (or nothing);
    the claim goes to the running check (the tool server runs each call as one)."""
    rules = (meta or {}).get(META_KEY) if isinstance(meta, dict) else None
    stack = contextlib.ExitStack()
    if isinstance(rules, dict):
        if "before" in rules or "exclude_domains" in rules:
            before = rules.get("before")
            stack.enter_context(
                eval_guards(
                    EvalGuards(
                        before=dt.date.fromisoformat(before) if before else None,
                        exclude_domains=tuple(rules.get("exclude_domains") or ()),
                        drop_undated=bool(rules.get("drop_undated")),
                    )
                )
            )
        check = context.active()
        if isinstance(rules.get("claim"), str) and check is not None:
            before, check.claim = check.claim, rules["claim"]
            stack.callback(setattr, check, "claim", before)
    return stack


class _Connection:
    """One open client session, held by a background task of the current loop."""

    def __init__(self, config: McpServerConfig):
        self.config = config
        self.client: Any = None
        self.tools: list[Any] = []
        self.error: BaseException | None = None
        self._stop = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task | None = None

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._hold())
        await self._ready.wait()
        if self.error is not None:
            raise ToolServerError(self.config.name, f"cannot start: {_describe(self.error)}")

    async def _hold(self) -> None:
        from mcp import Client

        try:
            if self.config.url is not None:  # refused here with a clear error, not mid-stream
                await check_server_url(
                    self.config.url,
                    source=f"mcp:{self.config.name}",
                    allow_private=self.config.allow_private,
                )
            async with Client(
                self.config.target(), read_timeout_seconds=self.config.timeout_s
            ) as client:
                listed = await client.list_tools()
                self.client, self.tools = client, list(listed.tools)
                self._ready.set()
                await self._stop.wait()
        except BaseException as exc:
            self.error = exc
            if isinstance(exc, asyncio.CancelledError):
                raise
        finally:
            self.client = None
            self._ready.set()

    @property
    def alive(self) -> bool:
        return self._task is not None and not self._task.done() and self.client is not None

    async def close(self) -> None:
        self._stop.set()
        if self._task is not None:
            await asyncio.wait({self._task}, timeout=10)


class McpTool:
    """A tool of an MCP server, callable like a local `Tool`."""

    def __init__(self, toolset: McpToolset, server: McpServerConfig, spec: Any):
        self.toolset = toolset
        self.server = server
        self.remote_name = spec.name
        self.name = server.tool_name(spec.name)
        self.description = (spec.description or spec.title or spec.name).strip()
        self.input_schema = dict(spec.input_schema or {})
        self.input_model = model_from_schema(self.name, self.input_schema)

    async def call(self, arguments: BaseModel) -> Observation:
        payload = arguments.model_dump(mode="json", exclude_none=True)
        return await self.toolset.call(self.server, self.remote_name, payload)


class McpToolset:
    """The tools of several MCP servers (see the module docstring)."""

    def __init__(self, servers: list[McpServerConfig]):
        names = [s.name for s in servers]
        if len(set(names)) != len(names):
            raise ValueError(f"mcp server names must be unique: {names}")
        self.servers = list(servers)
        self._by_loop: weakref.WeakKeyDictionary[Any, dict[str, _Connection]] = (
            weakref.WeakKeyDictionary()
        )
        self._locks: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()

    def _lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop not in self._locks:
            self._locks[loop] = asyncio.Lock()
        return self._locks[loop]

    async def _connection(self, server: McpServerConfig, *, fresh: bool = False) -> _Connection:
        async with self._lock():
            conns = self._by_loop.setdefault(asyncio.get_running_loop(), {})
            conn = conns.get(server.name)
            if conn is not None and conn.alive and not fresh:
                return conn
            if conn is not None:
                await conn.close()
            conn = _Connection(server)
            conns[server.name] = conn
            context.current().emit(
                Stage(name=f"mcp:{server.name}", step="connect", detail={"fresh": fresh})
            )
            await conn.start()
            return conn

    async def tools(self) -> list[McpTool]:
        """Every (selected) tool of every server, connecting where needed.

        Raises:
            ToolServerError: a server cannot be started or reached.
            ValueError: two tools end up with the same name.
        """
        out: list[McpTool] = []
        for server in self.servers:
            wanted = set(server.tools) if server.tools is not None else None
            listed = [t for t in await self._listing(server) if wanted is None or t.name in wanted]
            missing = sorted((wanted or set()) - {t.name for t in listed})
            if missing:
                raise ToolServerError(server.name, f"has no tools named {missing}")
            out += [McpTool(self, server, spec) for spec in listed]
        names = [t.name for t in out]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ValueError(f"tools from different MCP servers share the names {dup}")
        return out

    async def _listing(self, server: McpServerConfig) -> list[Any]:
        """The tools `server` offers (its connection's listing)."""
        return (await self._connection(server)).tools

    async def call(
        self, server: McpServerConfig, name: str, arguments: dict[str, Any]
    ) -> Observation:
        """Call tool `name` of `server`; see the module docstring for failures."""
        ctx = context.current()
        started = time.perf_counter()
        conn = await self._connection(server)
        try:
            result = await self._call(conn, name, arguments)
        except (TimeoutError, asyncio.TimeoutError):
            return _failed(ctx, server, name, f"timed out after {server.timeout_s:g} s")
        except Exception as exc:
            if conn.alive and not _is_connection_error(exc):
                return _failed(ctx, server, name, f"failed: {_describe(exc)}")
            ctx.emit(Fault(name=f"mcp:{server.name}", error=_describe(exc), attempt=1))
            try:
                conn = await self._connection(server, fresh=True)
                result = await self._call(conn, name, arguments)
            except Exception as again:
                ctx.record_search_failure(
                    name=f"mcp:{server.name}", error=_describe(again), tool=name, attempts=2
                )
                raise ToolServerError(
                    server.name, f"died and did not recover: {_describe(again)}"
                ) from again
        return _observation(result, ctx, f"mcp:{server.name}", time.perf_counter() - started)

    @staticmethod
    async def _call(conn: _Connection, name: str, arguments: dict[str, Any]) -> Any:
        if not conn.alive:
            raise ToolServerError(conn.config.name, f"not connected: {_describe(conn.error)}")
        meta = call_meta()
        return await conn.client.call_tool(
            name, arguments, read_timeout_seconds=conn.config.timeout_s, meta=meta or None
        )

    async def aclose(self) -> None:
        """Close this loop's connections (stopping launched servers)."""
        loop = asyncio.get_running_loop()
        for conn in list(self._by_loop.pop(loop, {}).values()):
            await conn.close()


def _stored(cls: type[TraceEvent], kind: str, record: dict[str, Any]) -> dict[str, Any]:
    """The fields of a search record from the server process, read as a stored event of
    `cls` (a field this version does not declare lands in ``detail``)."""
    head = {"kind": kind, "name": record.get("name", "mcp")}
    event = cls.model_validate({**head, "data": {k: v for k, v in record.items() if k != "name"}})
    given = event.model_fields_set - {"kind", "t"}
    return {"name": event.name, **{k: getattr(event, k) for k in given}}


def _observation(
    result: Any, ctx: context.CheckContext, server: str, latency: float
) -> Observation:
    """An observation from a tool result, replaying our server's search records.

    A result without them (an external server's tool) counts as one evidence call: an
    error result as a failed search, any other as an answer (`CheckContext.tool_answers`).
    """
    structured = result.structured_content if isinstance(result.structured_content, dict) else {}
    for record in structured.get("searches") or []:
        data = _stored(SearchDone, "search", {**record, "cached": bool(record.get("cached"))})
        ctx.record_search(**data)
    for record in structured.get("errors") or []:
        name, error = str(record.get("name", "mcp")), str(record.get("error"))
        if record.get("search_failed"):  # a search that failed in the server process
            data = _stored(Fault, "error", {**record, "name": name, "error": error})
            ctx.record_search_failure(**{k: v for k, v in data.items() if k != "search_failed"})
        else:
            ctx.emit(Fault(name=name, error=error))
    text = "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")
    reported = "searches" in structured or "errors" in structured
    if result.is_error:
        message = text or "the tool reported an error"
        if not reported:
            ctx.record_search_failure(name=server, error=message)
        return _error(message)
    if not reported:
        ctx.tool_answers += 1
    if "text" in structured and "documents" in structured:
        fields = {k: structured[k] for k in ("text", "documents", "error") if k in structured}
        return Observation.model_validate(fields)
    return Observation(text=text or "(empty result)")


def _error(message: str) -> Observation:
    return Observation(text=f"(tool error: {message})", error=message)


def _failed(
    ctx: context.CheckContext, server: McpServerConfig, tool: str, what: str
) -> Observation:
    """The observation of a call that got no result, counted as a failed search."""
    message = f"{server.name}.{tool} {what}"
    ctx.record_search_failure(name=f"mcp:{server.name}", error=message, tool=tool)
    return _error(message)


def _describe(exc: BaseException | None) -> str:
    if exc is None:
        return "unknown error"
    inner = getattr(exc, "exceptions", None)  # an exception group
    if isinstance(inner, tuple | list) and inner:
        return "; ".join(_describe(e) for e in inner)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _is_connection_error(exc: BaseException) -> bool:
    import anyio

    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError | ToolServerError):
        return True
    code = getattr(getattr(exc, "error", None), "code", None)
    return code == -32000  # CONNECTION_CLOSED
