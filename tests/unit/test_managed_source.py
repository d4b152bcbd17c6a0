"""ManagedSource (retries, rules guard, accounting) and CombinedSource (merge, failures)."""

from __future__ import annotations

import datetime as dt
import sqlite3

import httpx
import pytest
import respx

from veracity.core import context
from veracity.core.types import Document
from veracity.llm.client import RetryPolicy
from veracity.retrieval import managed as managed_mod
from veracity.retrieval.base import (
    Query,
    SourceAuthError,
    SourceBadResponse,
    SourceRateLimited,
    SourceUnreachable,
)
from veracity.retrieval.managed import CombinedSource, ManagedSource, dedup_key, normalize_url
from veracity.testing.contract import http_client_for_tests


def doc(i: str, url: str | None = None, year: int | None = None, **kw) -> Document:
    published = dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc) if year else None
    return Document(id=i, text=f"text {i}", url=url, source="fake", published_at=published, **kw)


class FakeSource:
    kind = "fake"

    def __init__(self, name: str, results=None, errors=()):
        self.name = name
        self.results = results or []
        self.errors = list(errors)
        self.calls = 0

    async def search(self, query: Query):
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return list(self.results)


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    async def fake_sleep(_delay: float) -> None:
        return None

    monkeypatch.setattr(managed_mod.asyncio, "sleep", fake_sleep)


async def test_records_search_with_results_and_latency():
    inner = FakeSource("fake", [doc("a", "https://x.org/a"), doc("b")])
    with context.check_context() as ctx:
        docs = await ManagedSource(inner).search(Query(text="q"))
    (event,) = ctx.trace.of_kind("search")
    assert event.name == "fake" and event.data["cached"] is False
    assert event.data["results"] == [
        {"id": "a", "url": "https://x.org/a"},
        {"id": "b", "url": None},
    ]
    assert event.data["query"]["text"] == "q"
    assert ctx.usage.searches == 1 and ctx.usage.cached_searches == 0
    assert all(d.retrieved_at is not None for d in docs)


async def test_retries_transient_errors_then_records():
    inner = FakeSource(
        "fake",
        [doc("a")],
        errors=[SourceUnreachable("fake", "down"), SourceRateLimited("fake", "")],
    )
    managed = ManagedSource(inner, retry=RetryPolicy(max_attempts=3, base_delay_s=0))
    with context.check_context() as ctx:
        assert [d.id for d in await managed.search(Query(text="q"))] == ["a"]
    assert inner.calls == 3
    assert len(ctx.trace.of_kind("error")) == 2 and ctx.usage.searches == 1


async def test_permanent_error_is_not_retried_and_is_traced():
    inner = FakeSource("fake", errors=[SourceAuthError("fake", "bad key")])
    managed = ManagedSource(inner, retry=RetryPolicy(max_attempts=3))
    with context.check_context() as ctx, pytest.raises(SourceAuthError):
        await managed.search(Query(text="q"))
    assert inner.calls == 1 and managed.failures == 1
    (error,) = ctx.trace.of_kind("error")
    assert "bad key" in error.data["error"] and ctx.usage.searches == 0


async def test_applies_rules_as_last_guard():
    inner = FakeSource(
        "fake",
        [doc("old", "https://a.org/1", 2010), doc("new", "https://a.org/2", 2022), doc("x")],
    )
    query = Query(text="q", before=dt.date(2020, 1, 1), top_k=5)
    assert [d.id for d in await ManagedSource(inner).search(query)] == ["old", "x"]
    query = Query(text="q", exclude_domains=["a.org"])
    assert [d.id for d in await ManagedSource(inner).search(query)] == ["x"]


async def test_rejects_non_documents():
    inner = FakeSource("fake", [{"id": "raw dict"}])
    with pytest.raises(SourceBadResponse):
        await ManagedSource(inner).search(Query(text="q"))


async def test_cached_flag_comes_from_http_cache(tmp_path):
    client = http_client_for_tests(tmp_path)

    class HttpBacked:
        name, kind = "httpish", "web"

        async def search(self, query):
            data = await client.get_json(self.name, "https://api.example.com/s")
            return [doc(str(data["id"]))]

    with respx.mock:
        respx.get("https://api.example.com/s").mock(
            return_value=httpx.Response(200, json={"id": 1})
        )
        with context.check_context() as ctx:
            await ManagedSource(HttpBacked()).search(Query(text="q"))
            await ManagedSource(HttpBacked()).search(Query(text="q"))
    assert [e.data["cached"] for e in ctx.trace.of_kind("search")] == [False, True]
    assert ctx.usage.cached_searches == 1


async def test_replayed_search_keeps_original_retrieval_time(tmp_path):
    client = http_client_for_tests(tmp_path, cache_ttl_s=None)  # keep old answers

    class HttpBacked:
        name, kind = "httpish", "web"

        async def search(self, query):
            await client.get_json(self.name, "https://api.example.com/t")
            return [doc("x")]

    with respx.mock:
        respx.get("https://api.example.com/t").mock(return_value=httpx.Response(200, json={}))
        (first,) = await ManagedSource(HttpBacked()).search(Query(text="q"))
        db = sqlite3.connect(tmp_path / "http.sqlite")
        db.execute("UPDATE http_responses SET retrieved_at = 1577836800")  # 2020-01-01
        db.commit()
        db.close()
        (replayed,) = await ManagedSource(HttpBacked()).search(Query(text="q"))
    assert first.retrieved_at.year >= 2024
    assert replayed.retrieved_at == dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)


async def test_helpers_of_inner_source_stay_reachable():
    inner = FakeSource("fake")
    inner.summary = lambda title: f"summary of {title}"
    assert ManagedSource(inner).summary("Moon") == "summary of Moon"


# --------------------------------------------------------------------------- combined


async def test_combined_merges_dedups_and_keeps_provenance():
    a = FakeSource(
        "a", [doc("a1", "https://www.site.org/x/?utm_source=t"), doc("a2", "https://o.org")]
    )
    b = FakeSource("b", [doc("b1", "http://site.org/x#top"), doc("b2")])
    docs = await CombinedSource([a, b]).search(Query(text="q", top_k=10))
    assert [d.id for d in docs] == ["a1", "a2", "b2"]
    assert docs[0].metadata["found_by"] == [{"source": "a", "rank": 1}, {"source": "b", "rank": 1}]
    assert docs[2].metadata["found_by"] == [{"source": "b", "rank": 2}]


async def test_combined_partial_failure_is_traced_and_rest_returned():
    ok = FakeSource("ok", [doc("1")])
    bad = FakeSource("bad", errors=[SourceUnreachable("bad", "down")])
    combined = CombinedSource([ok, bad])
    with context.check_context() as ctx:
        docs = await combined.search(Query(text="q"))
    assert [d.id for d in docs] == ["1"]
    (error,) = ctx.trace.of_kind("error")
    assert error.data["failed_source"] == "bad" and "down" in error.data["error"]
    assert set(combined.last_failures) == {"bad"}


async def test_combined_all_failed_raises_shared_class():
    a = FakeSource("a", errors=[SourceAuthError("a", "no key")])
    b = FakeSource("b", errors=[SourceAuthError("b", "no key")])
    with pytest.raises(SourceAuthError, match="every source failed") as info:
        await CombinedSource([a, b]).search(Query(text="q"))
    assert set(info.value.errors) == {"a", "b"}


async def test_combined_all_failed_mixed_raises_unreachable():
    a = FakeSource("a", errors=[SourceAuthError("a", "no key")])
    b = FakeSource("b", errors=[SourceRateLimited("b", "slow", retry_after=3)])
    with pytest.raises(SourceUnreachable, match="every source failed"):
        await CombinedSource([a, b]).search(Query(text="q"))


async def test_combined_does_not_hide_bugs():
    class Broken(FakeSource):
        async def search(self, query):
            raise KeyError("bug")

    with pytest.raises(KeyError):
        await CombinedSource([FakeSource("ok", [doc("1")]), Broken("broken")]).search(
            Query(text="q")
        )


def test_combined_needs_unique_names():
    with pytest.raises(ValueError, match="unique"):
        CombinedSource([FakeSource("a"), FakeSource("a")])


def test_normalize_url_and_dedup_key():
    assert normalize_url("HTTPS://WWW.Example.org/a/?b=2&a=1&utm_medium=x#f") == (
        "//example.org/a?a=1&b=2"
    )
    assert normalize_url("http://example.org/a") == normalize_url("https://example.org/a/")
    assert dedup_key(doc("z")) == "id:fake:z"
