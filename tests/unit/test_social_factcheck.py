"""Reddit (public and OAuth) and fact-check sources: requests and documents."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import httpx
import pytest
import respx

from veracity.retrieval.base import Query, SourceAuthError
from veracity.retrieval.engines.factcheck import FactCheckSiteSearch, GoogleFactCheckSource
from veracity.retrieval.engines.social import TOKEN_URL, RedditSource
from veracity.retrieval.engines.web import BraveSearchSource
from veracity.testing.contract import http_client_for_tests

DATA = Path(__file__).resolve().parents[1] / "data" / "http"


def ok(rel: str) -> httpx.Response:
    return httpx.Response(200, json=json.loads((DATA / rel).read_text()))


@pytest.fixture
def http(tmp_path):
    return http_client_for_tests(tmp_path)


@pytest.fixture(autouse=True)
def no_reddit_env(monkeypatch):
    monkeypatch.delenv("REDDIT_CLIENT_ID", raising=False)
    monkeypatch.delenv("REDDIT_CLIENT_SECRET", raising=False)


@respx.mock
async def test_reddit_public_search_in_subreddit(http):
    route = respx.get("https://www.reddit.com/r/space/search.json").mock(
        return_value=ok("reddit/search.json")
    )
    source = RedditSource(http=http, subreddit="space")
    docs = await source.search(Query(text="moon landing", top_k=2))
    params = dict(route.calls[0].request.url.params)
    assert params["restrict_sr"] == "1" and params["raw_json"] == "1"
    assert not source.oauth
    first = docs[0]
    assert first.id == "reddit:cdx0a1"
    assert first.url.startswith("https://www.reddit.com/r/space/comments/cdx0a1/")
    assert first.metadata["link_url"] == "https://www.nasa.gov/history/apollo-11-mission-overview/"
    assert first.published_at == dt.datetime(2019, 7, 16, 9, 40, tzinfo=dt.timezone.utc)
    assert docs[1].text.startswith("Why do some people") and "Apollo 8" in docs[1].text
    assert docs[1].metadata["link_url"] is None  # a self post links nowhere else


@respx.mock
async def test_reddit_oauth_token_is_fetched_once_and_used(http, monkeypatch):
    monkeypatch.setenv("REDDIT_CLIENT_ID", "cid-123")
    monkeypatch.setenv("REDDIT_CLIENT_SECRET", "csecret-456789")
    token = respx.post(TOKEN_URL).mock(return_value=ok("reddit/token.json"))
    search = respx.get("https://oauth.reddit.com/search").mock(
        return_value=ok("reddit/search.json")
    )
    source = RedditSource(http=http)
    assert source.oauth
    await source.search(Query(text="a"))
    await source.search(Query(text="b"))
    assert token.call_count == 1
    sent = token.calls[0].request
    assert sent.headers["authorization"].startswith("Basic ")
    assert b"grant_type=client_credentials" in sent.content
    assert (
        search.calls[1].request.headers["authorization"] == "bearer eyJreddit-test-access-token-000"
    )


def test_reddit_oauth_without_credentials_is_an_error():
    with pytest.raises(SourceAuthError, match="REDDIT_CLIENT_ID"):
        RedditSource(use_oauth=True)


def test_reddit_subreddit_name_is_validated():
    with pytest.raises(ValueError):
        RedditSource(subreddit="../../evil")


@respx.mock
async def test_google_factcheck_request_and_documents(http):
    route = respx.get(GoogleFactCheckSource.endpoint).mock(
        return_value=ok("google_factcheck/claims_search.json")
    )
    source = GoogleFactCheckSource(api_key="AIzaUnitKey-1", http=http, max_age_days=3650)
    docs = await source.search(Query(text="moon landing", include_domains=["politifact.com"]))
    params = dict(route.calls[0].request.url.params)
    assert params["reviewPublisherSiteFilter"] == "politifact.com"
    assert params["key"] == "AIzaUnitKey-1" and params["maxAgeDays"] == "3650"
    (doc,) = docs
    assert doc.metadata["rating"] == "False" and doc.metadata["publisher"] == "PolitiFact"
    assert doc.metadata["claim"] == "The first Moon landing took place in 1968."
    assert '"The first Moon landing took place in 1968."' in doc.text and "False" in doc.text
    assert doc.published_at.date() == dt.date(2019, 6, 3)


@respx.mock
async def test_google_factcheck_quota_is_rate_limited(http):
    from veracity.retrieval.base import SourceRateLimited

    respx.get(GoogleFactCheckSource.endpoint).mock(
        return_value=httpx.Response(
            429, json=json.loads((DATA / "google_factcheck/error_quota.json").read_text())
        )
    )
    with pytest.raises(SourceRateLimited):
        await GoogleFactCheckSource(api_key="AIzaUnitKey-1", http=http).search(Query(text="x"))


@respx.mock
async def test_factcheck_sites_restrict_the_engine(http):
    route = respx.get(BraveSearchSource.endpoint).mock(
        return_value=ok("brave/web_search_factcheck_sites.json")
    )
    source = FactCheckSiteSearch(BraveSearchSource(api_key="k-unit-0001", http=http))
    docs = await source.search(Query(text="moon landing 1968"))
    q = dict(route.calls[0].request.url.params)["q"]
    assert q == "moon landing 1968 (site:politifact.com OR site:snopes.com OR site:factcheck.org)"
    assert {d.domain for d in docs} == {"politifact.com", "snopes.com", "factcheck.org"}
    assert all(d.source == "factcheck_sites" and d.metadata["factcheck_site"] for d in docs)


@respx.mock
async def test_factcheck_sites_with_disjoint_domains_make_no_call(http):
    route = respx.get(BraveSearchSource.endpoint).mock(return_value=ok("brave/web_search.json"))
    source = FactCheckSiteSearch(BraveSearchSource(api_key="k-unit-0001", http=http))
    assert await source.search(Query(text="x", include_domains=["nasa.gov"])) == []
    assert not route.called
    await source.search(Query(text="x", include_domains=["snopes.com", "nasa.gov"]))
    assert dict(route.calls[0].request.url.params)["q"] == "x site:snopes.com"
