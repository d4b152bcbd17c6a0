"""Serving an MCP server over stdio or streamable HTTP (with an optional bearer token).

Over HTTP the REST server's front-door rules hold (`veracity.core.netguard`): a non-loopback
address needs a token, and ``Host`` / ``Origin`` are checked (421 / 403).
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Iterable
from typing import Any

from veracity.core.netguard import HostGuard, HostPolicy, check_bind, public_warning

PUBLIC_OPT_OUT = "--allow-public-without-token"


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


def http_app(
    server: Any,
    *,
    host: str = "127.0.0.1",
    token: str | None = None,
    allowed_hosts: Iterable[str] = (),
) -> Any:
    """The streamable-HTTP ASGI app of `server` (at ``/mcp``), behind `token` if given,
    answering only to this machine's names and `allowed_hosts` (`veracity.core.netguard`)."""
    from mcp.server.transport_security import TransportSecuritySettings

    # the SDK's own Host/Origin check is off: HostGuard is the one every front end shares
    sdk_check = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    app = server.streamable_http_app(host=host, transport_security=sdk_check)
    if token:
        app = BearerAuth(app, token)
    return HostGuard(app, HostPolicy.build(allowed_hosts, (), host), hint="--allow-host NAME")


async def serve_http(
    server: Any,
    *,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: Iterable[str] = (),
    allow_public: bool = False,
    token_env: str = "VERACITY_MCP_TOKEN",
) -> None:
    """Serve `server` over streamable HTTP until interrupted.

    Raises:
        ConfigError: a non-loopback address without a token (unless `allow_public`), or
            an allowed host that is not a host name.
    """
    public = check_bind(
        host,
        has_token=bool(token and token.strip()),
        allow_public=allow_public,
        how_to_set=f"Set a token in {token_env} (the variable --token-env names)",
        opt_out=PUBLIC_OPT_OUT,
    )
    app = http_app(server, host=host, token=token, allowed_hosts=allowed_hosts)
    if public:
        import sys

        print(public_warning(host, port), file=sys.stderr, flush=True)
    import uvicorn

    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()
