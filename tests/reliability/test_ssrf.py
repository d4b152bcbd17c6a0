"""The public-address guard for result URLs (issue item 9): an address table, malformed
URLs that keep their snippet, and DNS pinning (connect to the address that was checked)."""

from __future__ import annotations

import httpx
import pytest
import respx

from veracity.core import context
from veracity.core.redaction import strip_credentials
from veracity.retrieval.base import Query, SourceUnreachable
from veracity.retrieval.engines.web_free import DuckDuckGoSource
from veracity.retrieval.transport.netsafe import UnsafeURL, check_public_url
from veracity.testing.contract import http_client_for_tests
from veracity.testing.sources import table_resolver

PUBLIC, PUBLIC6 = "93.184.215.14", "2606:4700::1111"

# (address, expected): every special-purpose IPv4 range, and IPv6 forms that embed one
ADDRESSES = [
    ("127.0.0.1", "refused"), ("127.255.255.254", "refused"), ("10.1.2.3", "refused"),
    ("172.16.0.5", "refused"), ("192.168.1.1", "refused"), ("169.254.169.254", "refused"),
    ("100.64.0.1", "refused"), ("0.0.0.0", "refused"), ("0.1.2.3", "refused"),
    ("192.0.0.8", "refused"), ("192.0.2.1", "refused"), ("198.18.0.1", "refused"),
    ("198.51.100.7", "refused"), ("203.0.113.9", "refused"), ("224.0.0.1", "refused"),
    ("240.0.0.1", "refused"), ("255.255.255.255", "refused"),
    ("::", "refused"), ("::1", "refused"), ("fe80::1", "refused"), ("fc00::1", "refused"),
    ("ff02::1", "refused"), ("2001:db8::1", "refused"), ("100::1", "refused"),
    ("::ffff:127.0.0.1", "refused"), ("::ffff:10.0.0.1", "refused"),  # IPv4-mapped
    ("::ffff:0:7f00:1", "refused"),  # IPv4-translated (SIIT)
    ("::7f00:1", "refused"), ("::a9fe:a9fe", "refused"),  # IPv4-compatible
    ("64:ff9b::7f00:1", "refused"), ("64:ff9b::a9fe:a9fe", "refused"),  # NAT64
    ("64:ff9b::c0a8:101", "refused"), ("64:ff9b:1::808:808", "refused"),  # local-use NAT64
    ("2002:7f00:1::1", "refused"), ("2002:a00:1::", "refused"),  # 6to4
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "refused"),  # Teredo to 127.0.0.1
    ("2606:4700::5efe:7f00:1", "refused"), ("2606:4700::200:5efe:a00:1", "refused"),  # ISATAP
    ("fe80::1%eth0", "refused"),
    (PUBLIC, "public"), ("8.8.8.8", "public"), (PUBLIC6, "public"),
    ("::ffff:8.8.8.8", "public"), ("64:ff9b::808:808", "public"), ("2002:808:808::1", "public"),
]  # fmt: skip


async def test_the_address_table(capsys):
    wrong = []
    for address, expected in ADDRESSES:
        resolve = table_resolver({"site.example": [address]})
        try:
            await check_public_url("https://site.example/page", resolver=resolve)
            got = "public"
        except UnsafeURL:
            got = "refused"
        if got != expected:
            wrong.append(f"{address}: {got}, expected {expected}")
    with capsys.disabled():
        refused = sum(1 for _, e in ADDRESSES if e == "refused")
        print(f"\nSSRF address table: {len(ADDRESSES)} addresses ({refused} non-public), "
              f"{len(wrong)} misjudged")  # fmt: skip
    assert wrong == []


MALFORMED = [
    "http://0177.0.0.1/", "http://0x7f.1/", "http://2130706433/", "http://１２７.０.０.１/x",
    "http://①②⑦.0.0.1/", "http://[::1/", "http://a.b]/x", "http://[64:ff9b::7f00:1]/a",
    "http://example.com:99999/", "http://exa mple.com/", "http://exa%00mple.com/",
    "javascript:alert(1)", "file:///etc/passwd", "http:///nohost", "http://user:pw@[::1]:80/",
    "//no-scheme.example/x", "http://example.com\\@127.0.0.1/",
]  # fmt: skip


@respx.mock
async def test_malformed_result_urls_keep_their_snippet(tmp_path, capsys):
    results = [
        {"title": f"r{i}", "href": url, "body": f"snippet {i}"} for i, url in enumerate(MALFORMED)
    ]

    class Engine:
        def text(self, query, **kwargs):
            return results

    client = http_client_for_tests(tmp_path)
    client.resolver = table_resolver({"example.com": ["127.0.0.1"], "a.b]": [PUBLIC]})
    anything = respx.route().mock(return_value=httpx.Response(200, text="<p>page</p>"))
    source = DuckDuckGoSource(client_factory=Engine, http=client, fetch_pages=True)
    with context.check_context() as ctx:
        docs = await source.search(Query(text="x", top_k=50))
    assert len(docs) == len(MALFORMED)
    assert all(d.text.startswith("snippet") and d.metadata.get("fetch_error") for d in docs)
    assert not anything.called  # nothing was fetched: refused, unreachable or malformed
    recorded = {
        e.data.get("url") for e in ctx.trace.of_kind("error") if "page fetch" in e.data["error"]
    }
    assert recorded == {strip_credentials(u) for u in MALFORMED}  # every failure is traced
    with capsys.disabled():
        kinds = sorted({d.metadata["fetch_error"] for d in docs})
        print(f"\nmalformed result URLs: {len(MALFORMED)} tried, {len(docs)} snippets kept, "
              f"0 crashed ({', '.join(kinds)})")  # fmt: skip


@respx.mock
async def test_the_connection_goes_to_the_address_that_was_checked(tmp_path):
    """DNS rebinding: the name answers a public address for the check and loopback
    afterwards. The client never asks again: it connects to the checked address."""
    answers = iter([[PUBLIC], ["127.0.0.1"], ["127.0.0.1"]])
    asked = []

    async def rebinding(host: str, port: int) -> list[str]:
        asked.append(host)
        return next(answers)

    page = respx.get(f"https://{PUBLIC}/story").mock(
        return_value=httpx.Response(200, text="ok", headers={"content-type": "text/plain"})
    )
    loopback = respx.route(host="127.0.0.1").mock(return_value=httpx.Response(200))
    by_name = respx.route(host="rebind.example").mock(return_value=httpx.Response(200))
    client = http_client_for_tests(tmp_path, cache_mode="off")
    client.resolver = rebinding
    response = await client.fetch_page("web", "https://rebind.example/story")
    assert response.status == 200 and asked == ["rebind.example"]
    sent = page.calls[0].request
    assert sent.headers["host"] == "rebind.example"
    assert sent.extensions["sni_hostname"] == "rebind.example"  # TLS still checks the name
    assert not loopback.called and not by_name.called


@respx.mock
async def test_each_redirect_hop_is_checked_and_pinned(tmp_path):
    table = {"a.example": [PUBLIC], "b.example": ["8.8.4.4", PUBLIC6]}
    respx.get(f"https://{PUBLIC}/1").mock(
        return_value=httpx.Response(302, headers={"Location": "https://b.example/2"})
    )
    second = respx.get("https://8.8.4.4/2").mock(return_value=httpx.Response(200, text="x"))
    client = http_client_for_tests(tmp_path, cache_mode="off")
    client.resolver = table_resolver(table)
    await client.fetch_page("web", "https://a.example/1")
    assert second.calls[0].request.headers["host"] == "b.example"  # IPv4 preferred


async def test_unresolvable_result_hosts_are_unreachable_not_crashes():
    with pytest.raises(SourceUnreachable):
        await check_public_url("https://nowhere.example/", resolver=table_resolver({}))
