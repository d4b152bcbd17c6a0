"""The shared HTTP client: retries, errors, cache modes, redaction, rate limits."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time

import httpx
import pytest
import respx

from veracity.core import context
from veracity.retrieval.base import (
    SourceAuthError,
    SourceBadResponse,
    SourceRateLimited,
    SourceUnreachable,
)
from veracity.retrieval.transport import http as http_mod
from veracity.retrieval.transport import parts as httpparts
from veracity.retrieval.transport.cache import HttpCache, request_key
from veracity.retrieval.transport.http import (
    HttpClient,
    HttpConfig,
    HttpStatusError,
    ReplayMiss,
    track_requests,
)
from veracity.testing.contract import http_client_for_tests

URL = "https://api.example.com/search"
KEY = "sk-test-SECRET-0042"


@pytest.fixture
def sleeps(monkeypatch):
    """Record the delays the client sleeps for, without sleeping."""
    delays: list[float] = []

    async def fake_sleep(delay: float) -> None:
        delays.append(delay)

    monkeypatch.setattr(http_mod.asyncio, "sleep", fake_sleep)
    return delays


@respx.mock
async def test_retries_5xx_then_succeeds(tmp_path, sleeps):
    route = respx.get(URL).mock(
        side_effect=[httpx.Response(503), httpx.Response(502), httpx.Response(200, json={"a": 1})]
    )
    client = http_client_for_tests(tmp_path, max_attempts=3)
    with context.check_context() as ctx:
        assert await client.get_json("t", URL, params={"q": "x"}) == {"a": 1}
    assert route.call_count == 3
    errors = ctx.trace.of_kind("error")
    assert [e.data["attempt"] for e in errors] == [1, 2]


@respx.mock
async def test_gives_up_after_max_attempts(tmp_path, sleeps):
    route = respx.get(URL).mock(return_value=httpx.Response(500, text="boom"))
    client = http_client_for_tests(tmp_path, max_attempts=3)
    with pytest.raises(SourceUnreachable, match="500"):
        await client.get_json("t", URL)
    assert route.call_count == 3
    assert len(sleeps) == 2


@respx.mock
async def test_honours_retry_after_seconds(tmp_path, sleeps):
    respx.get(URL).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "7"}),
            httpx.Response(200, json=[]),
        ]
    )
    client = http_client_for_tests(tmp_path, max_attempts=2)
    assert await client.get_json("t", URL) == []
    assert sleeps == [7.0]


@respx.mock
async def test_retry_after_beyond_cap_fails_at_once(tmp_path, sleeps):
    route = respx.get(URL).mock(return_value=httpx.Response(429, headers={"Retry-After": "3600"}))
    client = http_client_for_tests(tmp_path, max_attempts=5)
    with pytest.raises(SourceRateLimited) as info:
        await client.get_json("t", URL)
    assert info.value.retry_after == pytest.approx(3600)
    assert route.call_count == 1 and sleeps == []


def test_retry_after_http_date():
    when = time.time() + 120
    stamp = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(when))
    response = httpx.Response(429, headers={"Retry-After": stamp})
    assert 100 < httpparts.retry_after_s(response) <= 121


@respx.mock
async def test_timeouts_become_unreachable(tmp_path, sleeps):
    route = respx.get(URL).mock(side_effect=httpx.ConnectTimeout("slow"))
    client = http_client_for_tests(tmp_path, max_attempts=2)
    with pytest.raises(SourceUnreachable, match="timeout"):
        await client.get_json("t", URL)
    assert route.call_count == 2


@respx.mock
@pytest.mark.parametrize("status", [401, 403])
async def test_auth_errors_are_not_retried(tmp_path, sleeps, status):
    route = respx.get(URL).mock(return_value=httpx.Response(status, json={"error": "bad key"}))
    client = http_client_for_tests(tmp_path, max_attempts=3)
    with pytest.raises(SourceAuthError):
        await client.get_json("t", URL)
    assert route.call_count == 1


@respx.mock
async def test_other_status_is_typed_with_status(tmp_path):
    respx.get(URL).mock(return_value=httpx.Response(422, json={"detail": "bad param"}))
    with pytest.raises(HttpStatusError) as info:
        await http_client_for_tests(tmp_path).get_json("t", URL)
    assert info.value.status == 422 and "bad param" in info.value.body


@respx.mock
async def test_non_json_body_is_bad_response(tmp_path):
    respx.get(URL).mock(return_value=httpx.Response(200, text="<html>maintenance</html>"))
    with pytest.raises(SourceBadResponse, match="expected JSON"):
        await http_client_for_tests(tmp_path).get_json("t", URL)


# --------------------------------------------------------------------------- cache


@respx.mock
async def test_auto_cache_serves_second_call(tmp_path):
    route = respx.get(URL).mock(return_value=httpx.Response(200, json={"n": 1}))
    client = http_client_for_tests(tmp_path)
    first = await client.request("t", "GET", URL, params={"q": "moon"})
    with track_requests() as tally:
        second = await client.request("t", "GET", URL, params={"q": "moon"})
    assert route.call_count == 1
    assert not first.cached and second.cached
    assert second.content == first.content and second.retrieved_at == first.retrieved_at
    assert (tally.live, tally.cached) == (0, 1)


@respx.mock
async def test_auto_cache_expires_after_ttl(tmp_path):
    route = respx.get(URL).mock(return_value=httpx.Response(200, json={}))
    client = http_client_for_tests(tmp_path, cache_ttl_s=60)
    await client.request("t", "GET", URL)
    db = sqlite3.connect(tmp_path / "http.sqlite")
    db.execute("UPDATE http_responses SET retrieved_at = retrieved_at - 120")
    db.commit()
    db.close()
    await client.request("t", "GET", URL)
    assert route.call_count == 2


@respx.mock
async def test_record_mode_always_fetches_and_replay_reads(tmp_path):
    route = respx.get(URL).mock(return_value=httpx.Response(200, json={"v": "recorded"}))
    recorder = http_client_for_tests(tmp_path, cache_mode="record")
    await recorder.request("t", "GET", URL, params={"q": "a"})
    await recorder.request("t", "GET", URL, params={"q": "a"})
    assert route.call_count == 2
    replayer = http_client_for_tests(tmp_path, cache_mode="replay")
    assert await replayer.get_json("t", URL, params={"q": "a"}) == {"v": "recorded"}
    assert route.call_count == 2
    with pytest.raises(ReplayMiss, match="replay mode"):
        await replayer.get_json("t", URL, params={"q": "never recorded"})


@respx.mock
async def test_off_mode_writes_nothing(tmp_path):
    respx.get(URL).mock(return_value=httpx.Response(200, json={}))
    client = http_client_for_tests(tmp_path, cache_mode="off")
    await client.request("t", "GET", URL)
    assert client.cache is None and not (tmp_path / "http.sqlite").exists()


@respx.mock
async def test_errors_are_not_cached(tmp_path, sleeps):
    route = respx.get(URL).mock(side_effect=[httpx.Response(500), httpx.Response(200, json={})])
    client = http_client_for_tests(tmp_path, max_attempts=1)
    with pytest.raises(SourceUnreachable):
        await client.request("t", "GET", URL)
    await client.request("t", "GET", URL)
    assert route.call_count == 2


def test_cache_key_ignores_secrets():
    a = request_key("GET", URL + "?key=AAA&q=x", {"api_key": "one", "q": "y"}, {"api_key": "b1"})
    b = request_key("GET", URL + "?key=BBB&q=x", {"api_key": "two", "q": "y"}, {"api_key": "b2"})
    c = request_key("GET", URL + "?key=AAA&q=x", {"api_key": "one", "q": "z"})
    assert a == b != c


def test_cache_rejects_unknown_mode(tmp_path):
    with pytest.raises(ValueError, match="unknown cache mode"):
        HttpCache(tmp_path / "x.sqlite", mode="sometimes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- secrets


@respx.mock
async def test_keys_never_logged_traced_or_stored(tmp_path, caplog, sleeps):
    caplog.set_level(logging.DEBUG)
    respx.get(URL, params={"q": "ok"}).mock(
        return_value=httpx.Response(200, json={"echo": f"your key {KEY}"})
    )
    respx.get(URL, params={"q": "bad"}).mock(
        return_value=httpx.Response(400, text=f"invalid key {KEY}")
    )
    respx.get(URL, params={"q": "down"}).mock(return_value=httpx.Response(503, text=KEY))
    client = http_client_for_tests(tmp_path)
    with context.check_context() as ctx:
        await client.request("t", "GET", URL, params={"q": "ok", "key": KEY})
        await client.request(
            "t", "GET", URL, params={"q": "ok"}, headers={"X-Subscription-Token": KEY}
        )
        messages = []
        for q in ("bad", "down"):
            try:
                await client.request("t", "GET", URL, params={"q": q, "api_key": KEY})
            except (HttpStatusError, SourceUnreachable) as exc:
                messages.append(str(exc))
    assert len(messages) == 2
    assert all(KEY not in m for m in messages)
    assert KEY not in caplog.text
    assert KEY not in ctx.trace.model_dump_json()
    assert KEY.encode() not in (tmp_path / "http.sqlite").read_bytes()
    assert KEY not in repr(client)


@respx.mock
async def test_basic_auth_and_form_are_sent_not_cached(tmp_path):
    route = respx.post("https://auth.example.com/token").mock(
        return_value=httpx.Response(200, json={"access_token": "tok"})
    )
    client = http_client_for_tests(tmp_path)
    for _ in range(2):
        await client.request(
            "t",
            "POST",
            "https://auth.example.com/token",
            form={"grant_type": "client_credentials"},
            auth=("client-id", "client-secret-value"),
        )
    assert route.call_count == 2
    assert route.calls[0].request.headers["authorization"].startswith("Basic ")


# --------------------------------------------------------------------------- limits, loops


def test_host_limiter_spaces_requests(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(httpparts.time, "monotonic", lambda: now[0])
    limiter = httpparts.HostLimiter({"slow.example.org": 2.0}, default=None)
    assert [limiter.delay_for("slow.example.org") for _ in range(3)] == [0.0, 0.5, 1.0]
    assert limiter.delay_for("fast.example.org") == 0.0
    now[0] = 105.0
    assert limiter.delay_for("slow.example.org") == 0.0


@respx.mock
async def test_rate_limit_waits_between_requests(tmp_path, sleeps, monkeypatch):
    monkeypatch.setattr(httpparts.time, "monotonic", lambda: 50.0)
    respx.get(URL).mock(return_value=httpx.Response(200, json={}))
    client = HttpClient(
        HttpConfig(cache_mode="off", rate_limits={"api.example.com": 4.0}, max_attempts=1)
    )
    for _ in range(3):
        await client.request("t", "GET", URL)
    assert sleeps == [0.25, 0.5]


def test_one_client_works_across_event_loops(tmp_path):
    with respx.mock:
        respx.get(URL).mock(return_value=httpx.Response(200, json={"ok": True}))
        client = http_client_for_tests(tmp_path, cache_mode="off")
        for _ in range(2):
            assert asyncio.run(client.get_json("t", URL)) == {"ok": True}


def test_the_runs_client_follows_settings_and_the_default_reads_none(tmp_path, monkeypatch):
    from veracity.runtime.home import user_http_client

    monkeypatch.setenv("VERACITY_HOME", str(tmp_path / "a"))
    a = user_http_client()
    assert a is user_http_client()
    monkeypatch.setenv("VERACITY_HOME", str(tmp_path / "b"))
    b = user_http_client()
    assert a is not b and b.cache is not None
    assert str(b.cache.path).startswith(str(tmp_path / "b"))
    # below the composition root nothing reads VERACITY_HOME: the fallback keeps no cache
    default = http_mod.default_http_client()
    assert default is http_mod.default_http_client() and default.cache is None
    assert http_mod.HttpClient(http_mod.HttpConfig(cache_mode="auto")).cache is None


def test_default_client_can_be_replaced(tmp_path):
    custom = http_client_for_tests(tmp_path)
    http_mod.set_default_http_client(custom)
    try:
        assert http_mod.default_http_client() is custom
    finally:
        http_mod.set_default_http_client(None)
    assert http_mod.default_http_client() is not custom
