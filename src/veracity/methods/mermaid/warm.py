"""MCP tool servers kept warm per process, started when the method is built.

Launching the evidence tool server (a Python process that imports the MCP SDK and builds
its sources) takes seconds, and on a busy machine far more. A check should not wait for
that before its first model call, and two checks or two runs with the same server
should not each start one. So every stdio server of a MERMAID toolbox is held here:

- one connection per server config and process (`acquire` counts the users; the last
  `release` closes it and the server process with it; whatever is left is closed when
  the process exits); the environment a server inherits is part of its config, taken
  when the run is built, so runs built under different settings never share one;
- the connections live on one background thread with its own event loop, so a server
  can start while no loop runs yet (the method is built before ``asyncio.run``) and is
  shared by every loop of the process (a batch, a service, ``asyncio.run`` per check);
- `WarmToolset` is an `McpToolset` that uses them: its calls cross to that loop and
  back, so cancelling a check cancels its call; a server that died is started again
  once and the call repeated, with the fault in the check's trace, as `McpToolset` does.

Tools a toolbox can describe itself (veracity's own evidence tools, built in this process
from the same sources) are offered without waiting for the server; a check then waits
only at its first tool call, and only for what is left of the start. The trace of that
call's check holds a ``connect`` stage of ``mcp:<server>`` saying whether the server was
ready (``warm``), how long the call waited (``waited_s``) and whether it was restarted.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import hashlib
import os
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from veracity.core import context
from veracity.core.events import Stage
from veracity.tools.mcp_client import (
    McpServerConfig,
    McpToolset,
    ToolServerError,
    _Connection,
    _describe,
    _is_connection_error,
    call_meta,
)

CLOSE_TIMEOUT_S = 15.0  # closing waits this long for a server to stop (the SDK's own waits are
# shorter: it closes stdin, waits 2 s, then kills the process tree)


@dataclass(frozen=True)
class ToolListing:
    """What a server lists for one tool (name, description, JSON input schema)."""

    name: str
    description: str | None
    input_schema: dict[str, Any]
    title: str | None = None


class _Host:
    """A daemon thread running the event loop that holds the warm connections."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._run, name="veracity-tool-servers", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def submit(self, coro: Any) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


@dataclass
class _Handle:
    """One connection of a warm server, as a check got it."""

    warm: WarmServer
    conn: _Connection
    generation: int

    @property
    def config(self) -> McpServerConfig:
        return self.warm.config

    @property
    def tools(self) -> list[Any]:
        return self.conn.tools

    @property
    def alive(self) -> bool:
        return self.conn.alive


@dataclass
class WarmServer:
    """One server's connection, held on the host loop; `starts` counts the launches."""

    config: McpServerConfig
    host: _Host
    users: int = 0
    starts: int = 0
    generation: int = 0
    _conn: _Connection | None = None
    _lock: asyncio.Lock | None = None  # made on the host loop
    _failed: set[int] = field(default_factory=set)  # generations a call found broken

    @property
    def ready(self) -> bool:
        """Connected, and no call has found this connection broken."""
        conn = self._conn
        return conn is not None and conn.alive and self.generation not in self._failed

    def start_soon(self) -> concurrent.futures.Future[Any]:
        """Start the server in the background (a failed start is retried on first use)."""
        return self.host.submit(self._open(fresh=False))

    async def open(self, *, fresh: bool = False) -> _Handle:
        """The connection, started or restarted on the host loop if it must be.

        Raises:
            ToolServerError: the server cannot be started.
        """
        # shielded: a check cancelled while the server starts leaves the start to finish
        # (and the connection held here), never a server process no one holds
        opening = asyncio.wrap_future(self.host.submit(self._open(fresh=fresh)))
        conn, generation = await asyncio.shield(opening)
        return _Handle(self, conn, generation)

    def current(self) -> bool:
        """Still this process's server for its config (not closed, not from before a fork)."""
        if self.host.pid != os.getpid() or not self.host.loop.is_running():
            return False
        with _registry_lock:
            return _registry.get(_key(self.config)) is self

    async def _open(self, *, fresh: bool) -> tuple[_Connection, int]:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            conn = self._conn
            broken = self.generation in self._failed
            if conn is not None and conn.alive and not (fresh and broken):
                return conn, self.generation
            if conn is not None:
                self._conn = None
                await conn.close()
            self.generation += 1
            self.starts += 1
            conn = _Connection(self.config)
            await conn.start()  # raises ToolServerError
            self._conn = conn
            return conn, self.generation

    async def call(
        self, handle: _Handle, name: str, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> Any:
        """Call tool `name` on the host loop (the check's rules already in `meta`)."""
        future = self.host.submit(self._call(handle.conn, name, arguments, meta))
        try:
            return await asyncio.wrap_future(future)
        except BaseException as exc:
            if not handle.conn.alive or _is_connection_error(exc):
                self._failed.add(handle.generation)  # the next `open(fresh=True)` restarts
            raise

    async def _call(
        self, conn: _Connection, name: str, arguments: dict[str, Any], meta: dict[str, Any]
    ) -> Any:
        if not conn.alive:
            raise ToolServerError(self.config.name, f"not connected: {_describe(conn.error)}")
        return await conn.client.call_tool(
            name, arguments, read_timeout_seconds=self.config.timeout_s, meta=meta or None
        )

    async def _close(self) -> None:
        lock = self._lock or asyncio.Lock()
        async with lock:
            conn, self._conn = self._conn, None
            if conn is not None:
                await conn.close()


# ------------------------------------------------------------------------ the registry

_registry: dict[str, WarmServer] = {}
_registry_lock = threading.Lock()
_host: _Host | None = None


def _key(config: McpServerConfig) -> str:
    return hashlib.sha256(config.model_dump_json().encode()).hexdigest()


def _frozen(config: McpServerConfig) -> McpServerConfig:
    """`config` with the environment its server inherits written out as it is now, so a
    server is shared only by runs built under the same environment (``VERACITY_HOME``,
    settings, keys), whatever the environment is when it starts or restarts."""
    if config.command is None or not config.inherit_env:
        return config
    return config.model_copy(update={"env": {**os.environ, **config.env}, "inherit_env": False})


def _the_host() -> _Host:
    global _host
    if _host is None or _host.pid != os.getpid() or not _host.thread.is_alive():
        _host = _Host()
    return _host


def acquire(config: McpServerConfig, *, start: bool = True) -> WarmServer:
    """The process's warm server for `config` (one more user), starting it if `start`."""
    config = _frozen(config)
    with _registry_lock:
        warm = _registry.get(_key(config))
        if warm is None or warm.host.pid != os.getpid():
            warm = _registry[_key(config)] = WarmServer(config, _the_host())
        warm.users += 1
        fresh = warm.starts == 0 and warm._conn is None
    if start and fresh:
        warm.start_soon()
    return warm


def _let_go(warm: WarmServer) -> concurrent.futures.Future[Any] | None:
    """One user fewer; the close of the server when it was the last (else None)."""
    with _registry_lock:
        warm.users -= 1
        if warm.users > 0:
            return None
        if _registry.get(_key(warm.config)) is warm:
            del _registry[_key(warm.config)]
    if warm.host.pid != os.getpid() or not warm.host.loop.is_running():
        return None
    return warm.host.submit(warm._close())


async def release(warm: WarmServer) -> None:
    """One user fewer; the last one closes the server and waits until it has stopped."""
    closing = _let_go(warm)
    if closing is not None:
        await asyncio.wait_for(asyncio.wrap_future(closing), CLOSE_TIMEOUT_S)


def release_soon(warm: WarmServer) -> None:
    """`release` without waiting (from synchronous code or a finaliser)."""
    _let_go(warm)


def running() -> list[WarmServer]:
    """The warm servers of this process (for tests and diagnostics)."""
    with _registry_lock:
        return [w for w in _registry.values() if w.host.pid == os.getpid()]


def close_all() -> None:
    """Close every warm server of this process and stop the host thread (at exit)."""
    global _host
    with _registry_lock:
        servers = [w for w in _registry.values() if w.host.pid == os.getpid()]
        _registry.clear()
        host, _host = _host, None
    if host is None or host.pid != os.getpid():
        return
    for warm in servers:
        # a server already gone, or one that would not stop in time: nothing more to do
        with contextlib.suppress(Exception):
            host.submit(warm._close()).result(timeout=CLOSE_TIMEOUT_S)
    host.stop()


def _forget_after_fork() -> None:
    global _host
    _registry.clear()
    _host = None


atexit.register(close_all)
os.register_at_fork(after_in_child=_forget_after_fork)


# ------------------------------------------------------------------------ the toolset


class WarmToolset(McpToolset):
    """An `McpToolset` whose stdio servers are warm per process (see the module docstring).

    Args:
        servers: the servers (streamable-HTTP ones are connected per event loop, as in
            `McpToolset`).
        listings: tools a server is known to offer, by server name; they are offered
            without waiting for that server, which must list them once it is up.
    """

    def __init__(
        self,
        servers: list[McpServerConfig],
        listings: Mapping[str, Iterable[ToolListing]] | None = None,
    ):
        super().__init__(servers)
        self.listings = {name: list(tools) for name, tools in (listings or {}).items()}
        self._warm: dict[str, WarmServer] = {}
        self._checked: set[tuple[str, int]] = set()  # (server, generation) listings verified
        for server in self.servers:
            if server.command is not None:
                self._warm[server.name] = acquire(server)
        held = list(self._warm.values())
        self._finalizer = weakref.finalize(self, _release_all, held)

    @property
    def warm_servers(self) -> dict[str, WarmServer]:
        return dict(self._warm)

    def _held(self, server: McpServerConfig) -> WarmServer | None:
        """The warm server of `server` (None: not a stdio server), acquired again when this
        toolset is used after closing, after a fork, or after `close_all`."""
        if server.command is None:
            return None
        warm = self._warm.get(server.name)
        if warm is None or not warm.current():
            warm = self._warm[server.name] = acquire(server)
            self._finalizer.detach()
            self._finalizer = weakref.finalize(self, _release_all, list(self._warm.values()))
        return warm

    async def _connection(self, server: McpServerConfig, *, fresh: bool = False) -> Any:
        warm = self._held(server)
        if warm is None:
            return await super()._connection(server, fresh=fresh)
        ctx = context.current()
        first = not any(
            e.name == f"mcp:{server.name}" and e.data.get("step") == "connect"
            for e in ctx.trace.of_kind("stage")
        )
        was_ready, started = warm.ready, time.perf_counter()
        handle = await warm.open(fresh=fresh)
        if first or fresh or not was_ready:
            ctx.emit(
                Stage(
                    name=f"mcp:{server.name}",
                    step="connect",
                    detail={
                        "fresh": fresh,
                        "warm": was_ready,
                        "waited_s": round(time.perf_counter() - started, 3),
                        "starts": warm.starts,
                    },
                )
            )
        self._verify(server, handle)
        return handle

    def _verify(self, server: McpServerConfig, handle: _Handle) -> None:
        """A server offered by its listing must list those tools once it is up."""
        listed = self.listings.get(server.name)
        if listed is None or (server.name, handle.generation) in self._checked:
            return
        offered = {t.name for t in handle.tools}
        missing = sorted(t.name for t in listed if t.name not in offered)
        if missing:
            raise ToolServerError(server.name, f"does not offer the tools {missing}")
        self._checked.add((server.name, handle.generation))

    async def _call(self, conn: Any, name: str, arguments: dict[str, Any]) -> Any:
        if not isinstance(conn, _Handle):
            return await McpToolset._call(conn, name, arguments)
        return await conn.warm.call(conn, name, arguments, call_meta())

    async def _listing(self, server: McpServerConfig) -> list[Any]:
        """The tools described from the run's own sources, so a check does not wait for
        the server; a server without such a listing is connected to and asked."""
        listed = self.listings.get(server.name)
        return listed if listed is not None else await super()._listing(server)

    async def aclose(self) -> None:
        """Let go of the warm servers (the last user closes each) and close this loop's
        other connections."""
        held, self._warm = list(self._warm.values()), {}
        self._finalizer.detach()
        for warm in held:
            await release(warm)
        await super().aclose()

    def close(self) -> None:
        """`aclose` for the warm servers, without waiting (from synchronous code)."""
        held, self._warm = list(self._warm.values()), {}
        self._finalizer.detach()
        for warm in held:
            release_soon(warm)


def _release_all(held: list[WarmServer]) -> None:
    for warm in held:
        release_soon(warm)
