"""The streamable-HTTP connection to an MCP server named by URL, through the address guard.

An MCP server in a run config (``mcp_servers: [{name, url, bearer_token_env}]``) is
reached like any other URL veracity fetches: every request of the connection — the first
POST, the event stream, a redirect the SDK follows — passes `check_public_url` and is
sent to the address that was checked (`GuardedTransport`), so the server's bearer token
can only go to a public host, and a DNS answer that changes after the check cannot turn
the connection to this machine or its network. A server you run yourself on a loopback
or private address is reached only when its config says ``allow_private: true``.
"""

from __future__ import annotations

import contextlib
import ipaddress
from collections.abc import AsyncIterator
from typing import Any

from veracity.retrieval.transport.netsafe import Resolver, UnsafeURL, check_public_url

# the MCP SDK's own defaults: 30 s to connect and write, 5 minutes to read an event stream
CONNECT_TIMEOUT_S, READ_TIMEOUT_S = 30.0, 300.0


def guarded_transport(source: str, *, resolver: Resolver | None = None, inner: Any = None) -> Any:
    """An httpx2 transport that checks and pins every request (see the module docstring).

    Args:
        source: the name used in errors (``mcp:<server>``).
        resolver: host resolver for the guard (tests).
        inner: the transport that sends the pinned requests (default: httpx2's own).
    """
    import httpx2  # the HTTP client of the mcp SDK

    class GuardedTransport(httpx2.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = inner or httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            checked = await check_public_url(str(request.url), source=source, resolver=resolver)
            return await self.inner.handle_async_request(_pinned(request, checked[0]))

        async def aclose(self) -> None:
            await self.inner.aclose()

    return GuardedTransport()


def _pinned(request: Any, address: str) -> Any:
    """`request` sent to `address` instead of its host name; the Host header and, for
    https, the TLS server name stay the host's."""
    url = request.url
    ip = str(ipaddress.ip_address(address.split("%", 1)[0]))
    if url.host == ip:
        return request
    request.headers["Host"] = url.netloc.decode("ascii")
    if url.scheme == "https":
        request.extensions = {**request.extensions, "sni_hostname": url.host}
    request.url = url.copy_with(host=ip)
    return request


@contextlib.asynccontextmanager
async def http_streams(
    url: str,
    *,
    source: str,
    token: str | None = None,
    allow_private: bool = False,
    resolver: Resolver | None = None,
) -> AsyncIterator[Any]:
    """The SDK's streamable-HTTP streams to `url`, guarded unless `allow_private`, with
    ``Authorization: Bearer <token>`` when a token is given."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = None if allow_private else guarded_transport(source, resolver=resolver)
    timeout = httpx2.Timeout(CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S)
    async with (
        httpx2.AsyncClient(headers=headers, transport=transport, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


async def check_server_url(
    url: str, *, source: str, allow_private: bool, resolver: Resolver | None = None
) -> None:
    """Refuse `url` before connecting (the transport checks every request again), so the
    error names the address instead of a broken connection.

    Raises:
        UnsafeURL: a non-public address and no ``allow_private``, or not http(s).
        SourceUnreachable: the host does not resolve.
    """
    if allow_private:
        return
    try:
        await check_public_url(url, source=source, resolver=resolver)
    except UnsafeURL as exc:
        message = str(exc).removeprefix(f"{source}: ")
        raise UnsafeURL(
            source,
            f"{message}; for an MCP server you run on this machine or your network, set "
            "`allow_private: true` in its mcp_servers entry of the run config",
        ) from None
