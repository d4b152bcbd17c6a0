"""Serving an MCP server over stdio or streamable HTTP (with an optional bearer token)."""

from __future__ import annotations

import hmac
import ipaddress
import json
from typing import Any

from veracity.errors import ConfigError

LOOPBACK = ("127.0.0.1", "localhost", "::1")


async def serve_stdio(server: Any) -> None:
    """Serve `server` (an `MCPServer` or a low-level `Server`) on stdin/stdout; a line that
    is not a usable message gets a JSON-RPC error (`veracity.mcp.stdio`)."""
    from veracity.mcp import stdio

    await stdio.serve_stdio(server)



class BearerAuth:
    """ASGI middleware: HTTP requests must carry ``Authorization: Bearer <token>``."""

    def __init__(self, app: Any, token: str):
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps({"error": "missing or wrong bearer token"}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b"Bearer"),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(server: Any, *, host: str = "127.0.0.1", token: str | None = None) -> Any:
    """The streamable-HTTP ASGI app of `server` (at ``/mcp``), behind `token` if given."""
    app = server.streamable_http_app(host=host)
    return BearerAuth(app, token) if token else app


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def serve_http(server: Any, *, host: str, port: int, token: str | None) -> None:
    """Serve `server` over streamable HTTP until interrupted.

    Raises:
        ConfigError: a non-loopback address without a token.
    """
    if not _is_loopback(host) and not token:
        raise ConfigError(f"serving on {host} needs a bearer token (set one with a token env)")
    import uvicorn

    config = uvicorn.Config(
        http_app(server, host=host, token=token), host=host, port=port, log_level="warning"
    )
    await uvicorn.Server(config).serve()
