"""The public-address guard, redirects under the guard, page size cap and redaction."""

from __future__ import annotations

import httpx
import pytest
import respx

from veracity.retrieval.base import SourceUnreachable
from veracity.retrieval.transport.netsafe import (
    REDACTED,
    UnsafeURL,
    check_public_url,
    redact_mapping,
    redact_url,
    scrub,
    secret_values,
)
from veracity.testing.contract import http_client_for_tests
from veracity.testing.sources import table_resolver

PUBLIC = "93.184.215.14"


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.5",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "2002:7f00:1::1",
    ],
)
async def test_non_public_addresses_are_refused(address):
    resolve = table_resolver({"evil.example": [address]})
    with pytest.raises(UnsafeURL, match="non-public"):
        await check_public_url("https://evil.example/x", resolver=resolve)


async def test_any_private_address_among_several_is_refused():
    resolve = table_resolver({"mixed.example": [PUBLIC, "10.0.0.7"]})
    with pytest.raises(UnsafeURL, match=r"10\.0\.0\.7"):
        await check_public_url("http://mixed.example/", resolver=resolve)


@pytest.mark.parametrize(
    "url", ["file:///etc/passwd", "ftp://example.org/x", "gopher://example.org", "javascript:1"]
)
async def test_non_http_schemes_are_refused(url):
    with pytest.raises(UnsafeURL, match="only http and https"):
        await check_public_url(url, resolver=table_resolver({}))


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/admin", "http://[::1]/", "http://10.0.0.1"])
async def test_ip_literals_are_checked_without_resolving(url):
    with pytest.raises(UnsafeURL):
        await check_public_url(url, resolver=table_resolver({}))


async def test_public_address_passes():
    await check_public_url(
        "https://news.example/a", resolver=table_resolver({"news.example": [PUBLIC]})
    )


async def test_unresolvable_host_is_unreachable():
    with pytest.raises(SourceUnreachable, match="cannot resolve"):
        await check_public_url("https://nowhere.example/", resolver=table_resolver({}))


@respx.mock
async def test_fetch_page_refuses_redirect_to_private_address(tmp_path):
    # the guard connects to the address it checked (the Host header names the site)
    respx.get(f"https://{PUBLIC}/story", headers={"host": "news.example"}).mock(
        return_value=httpx.Response(302, headers={"Location": "http://internal.example/secret"})
    )
    internal = respx.get(url__regex=r"/secret").mock(return_value=httpx.Response(200))
    client = http_client_for_tests(tmp_path)
    client.resolver = table_resolver({"news.example": [PUBLIC], "internal.example": ["10.0.0.9"]})
    with pytest.raises(UnsafeURL):
        await client.fetch_page("web", "https://news.example/story")
    assert not internal.called


@respx.mock
async def test_fetch_page_follows_public_redirect_and_caps_size(tmp_path):
    respx.get(f"https://{PUBLIC}/old", headers={"host": "news.example"}).mock(
        return_value=httpx.Response(301, headers={"Location": "/new"})
    )
    respx.get(f"https://{PUBLIC}/new", headers={"host": "news.example"}).mock(
        return_value=httpx.Response(200, content=b"x" * 5000, headers={"content-type": "text/html"})
    )
    client = http_client_for_tests(tmp_path, max_page_bytes=2048)
    client.resolver = table_resolver({"news.example": [PUBLIC]})
    page = await client.fetch_page("web", "https://news.example/old")
    assert page.status == 200 and len(page.content) == 2048
    assert page.content_type == "text/html"


@respx.mock
async def test_fetch_page_refuses_loopback_without_request(tmp_path):
    route = respx.get("http://localhost/").mock(return_value=httpx.Response(200))
    client = http_client_for_tests(tmp_path)
    client.resolver = table_resolver({"localhost": ["127.0.0.1"]})
    with pytest.raises(UnsafeURL):
        await client.fetch_page("web", "http://localhost/")
    assert not route.called


def test_redaction_helpers():
    url = "https://u:pw@api.example.com/s?q=moon&key=K123456&api_key=A123456"
    shown = redact_url(url)
    assert "K123456" not in shown and "A123456" not in shown and "pw" not in shown
    assert "q=moon" in shown
    assert redact_mapping({"X-API-KEY": "v", "Accept": "json"}, headers=True) == {
        "X-API-KEY": REDACTED,
        "Accept": "json",
    }
    assert redact_mapping({"api_key": "v", "nested": {"token": "t"}}) == {
        "api_key": REDACTED,
        "nested": {"token": REDACTED},
    }
    secrets = secret_values({"key": "abcd1234"}, {"Authorization": "Bearer tok-98765"})
    assert "tok-98765" in secrets
    assert scrub("got abcd1234 and tok-98765", secrets) == f"got {REDACTED} and {REDACTED}"
