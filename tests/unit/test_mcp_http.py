"""The address guard on MCP servers named by URL (`veracity.tools.mcp_http`): every
request is checked and sent to the address that was checked."""

from __future__ import annotations

import httpx2
import pytest

from veracity.retrieval.transport.netsafe import UnsafeURL
from veracity.testing.sources import table_resolver
from veracity.tools.mcp_http import check_server_url, guarded_transport

PUBLIC = "93.184.215.14"


def _client(resolve: dict[str, list[str]], sent: list[httpx2.Request]) -> httpx2.AsyncClient:
    def answer(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json={})

    inner = httpx2.MockTransport(answer)
    transport = guarded_transport("mcp:t", resolver=table_resolver(resolve), inner=inner)
    return httpx2.AsyncClient(transport=transport, headers={"Authorization": "Bearer tok"})


async def test_a_public_host_is_reached_at_the_address_that_was_checked():
    sent: list[httpx2.Request] = []
    async with _client({"tools.example": [PUBLIC]}, sent) as client:
        await client.post("https://tools.example/mcp", json={})
    (request,) = sent
    assert request.url.host == PUBLIC and request.url.path == "/mcp"
    assert request.headers["Host"] == "tools.example"
    assert request.extensions["sni_hostname"] == "tools.example"


@pytest.mark.parametrize(
    ("url", "resolve"),
    [
        ("http://127.0.0.1:8765/mcp", {}),
        ("http://169.254.169.254/latest/meta-data", {}),
        ("http://[::1]:9/mcp", {}),
        ("http://tools.example/mcp", {"tools.example": ["10.0.0.7"]}),
        ("http://tools.example/mcp", {"tools.example": [PUBLIC, "192.168.1.4"]}),
        ("file:///etc/passwd", {}),
    ],
)
async def test_a_private_or_odd_target_gets_no_request_and_no_token(url, resolve):
    sent: list[httpx2.Request] = []
    async with _client(resolve, sent) as client:
        with pytest.raises(UnsafeURL):
            await client.post(url, json={})
    assert sent == []
    with pytest.raises(UnsafeURL, match=r"allow_private: true|only http and https"):
        await check_server_url(
            url, source="mcp:t", allow_private=False, resolver=table_resolver(resolve)
        )


async def test_allow_private_skips_the_check():
    await check_server_url("http://127.0.0.1:1/mcp", source="mcp:t", allow_private=True)
