"""Web engines: what each sends to its service, error mapping, page fetch, dates."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import httpx
import pytest
import respx

from veracity.core import context
from veracity.core.dates import UTC, parse_date
from veracity.retrieval.base import (
    Query,
    SourceAuthError,
    SourceRateLimited,
    SourceUnreachable,
)
from veracity.retrieval.engines.common import (
    MissingCredentials,
    QueryLimits,
    engine_query,
    fitted_engine_query,
)
from veracity.retrieval.engines.web import BraveSearchSource, SerperSource, TavilySource
from veracity.retrieval.engines.web_free import DuckDuckGoSource, SearxngSource
from veracity.testing.contract import http_client_for_tests

DATA = Path(__file__).resolve().parents[1] / "data" / "http"
KEY = "unit-test-key-7777"


def body(rel: str):
    return json.loads((DATA / rel).read_text())


async def public(host: str, port: int) -> list[str]:
    return ["93.184.215.14"]


@pytest.fixture
def client(tmp_path):
    c = http_client_for_tests(tmp_path)
    c.resolver = public
    return c


QUERY = Query(
    keywords=["Apollo 11", "moon landing"],
    operator="OR",
    before=dt.date(2020, 1, 1),
    include_domains=["nasa.gov"],
    exclude_domains=["example.com"],
    top_k=3,
)


def test_engine_query_renders_phrases_or_and_sites():
    assert engine_query(QUERY) == ('"Apollo 11" OR "moon landing" site:nasa.gov -site:example.com')
    two = Query(text="vaccine", include_domains=["a.org", "b.org"])
    assert engine_query(two) == "vaccine (site:a.org OR site:b.org)"
    assert engine_query(QUERY, operators=False) == '"Apollo 11" OR "moon landing"'


@respx.mock
async def test_brave_request_and_dates(client):
    route = respx.get(BraveSearchSource.endpoint).mock(
        return_value=httpx.Response(200, json=body("brave/web_search.json"))
    )
    docs = await BraveSearchSource(api_key=KEY, http=client).search(QUERY)
    sent = route.calls[0].request
    assert sent.headers["X-Subscription-Token"] == KEY
    params = dict(sent.url.params)
    assert params["freshness"] == "1970-01-01to2019-12-31"
    assert params["q"].endswith("site:nasa.gov -site:example.com")
    assert params["count"] == "6"
    assert [d.url for d in docs] == ["https://www.nasa.gov/history/apollo-11-mission-overview/"]
    assert docs[0].published_at == dt.datetime(2019, 7, 16, 9, 30, tzinfo=dt.timezone.utc)
    assert "lunar orbit" in docs[0].text  # extra snippets are kept
    assert docs[0].title == "Apollo 11 Mission Overview - NASA"  # markup stripped
    assert docs[0].source == "brave" and docs[0].metadata["engine"] == "brave"


def test_exclusions_that_do_not_fit_an_engines_limit_are_left_out_in_order():
    many = Query(text="vaccine trial", exclude_domains=[f"site{i}.example" for i in range(60)])
    limits = QueryLimits(max_chars=120, max_words=50)
    text, left_out = fitted_engine_query(many, limits=limits)
    assert limits.fits(text) and text.startswith("vaccine trial -site:site0.example")
    kept = [d for d in many.exclude_domains if f"-site:{d}" in text.split()]
    assert kept + left_out == list(many.exclude_domains) and left_out
    assert fitted_engine_query(many)[1] == []  # no limits: everything goes in
    words = QueryLimits(max_words=4)
    assert fitted_engine_query(many, limits=words)[0].split()[2:] == [
        "-site:site0.example",
        "-site:site1.example",
    ]


@respx.mock
async def test_brave_keeps_its_query_limit_and_filters_the_rest_client_side(client):
    excluded = [f"news{i}.example" for i in range(40)] + ["www.nasa.gov"]
    query = Query(keywords=["Apollo 11"], exclude_domains=excluded, top_k=3)
    route = respx.get(BraveSearchSource.endpoint).mock(
        return_value=httpx.Response(200, json=body("brave/web_search.json"))
    )
    with context.check_context() as ctx:
        docs = await BraveSearchSource(api_key=KEY, http=client).search(query)
    sent = dict(route.calls[0].request.url.params)["q"]
    assert len(sent) <= 400 and len(sent.split()) <= 50 and "nasa.gov" not in sent
    # nasa.gov did not fit the query, but its result is still dropped; the others stay
    assert docs and all("nasa.gov" not in d.url for d in docs)
    note = ctx.trace.of_kind("note")[0].data
    assert "nasa.gov" in note["client_side_exclusions"] and "filtered" in note["note"]


@respx.mock
async def test_brave_invalid_token_is_auth_error(client):
    respx.get(BraveSearchSource.endpoint).mock(
        return_value=httpx.Response(422, json=body("brave/error_token_invalid.json"))
    )
    with pytest.raises(SourceAuthError, match="rejected the API key"):
        await BraveSearchSource(api_key=KEY, http=client).search(Query(text="x"))


@respx.mock
async def test_serper_request_uses_date_range(client):
    route = respx.post("https://google.serper.dev/search").mock(
        return_value=httpx.Response(200, json=body("serper/search.json"))
    )
    docs = await SerperSource(api_key=KEY, http=client, gl="us").search(QUERY)
    sent = route.calls[0].request
    assert sent.headers["X-API-KEY"] == KEY
    payload = json.loads(sent.content)
    assert payload["tbs"] == "cdr:1,cd_min:1/1/1990,cd_max:12/31/2019"
    assert payload["gl"] == "us" and payload["hl"] == "en"
    assert [d.published_at.date() for d in docs] == [dt.date(2019, 7, 16)]


@respx.mock
async def test_serper_out_of_credits_is_rate_limited(client):
    respx.post("https://google.serper.dev/search").mock(
        return_value=httpx.Response(400, json=body("serper/error_credits.json"))
    )
    with pytest.raises(SourceRateLimited, match="credits"):
        await SerperSource(api_key=KEY, http=client).search(Query(text="x"))


@respx.mock
async def test_tavily_request_carries_domains_and_end_date(client):
    route = respx.post(TavilySource.endpoint).mock(
        return_value=httpx.Response(200, json=body("tavily/search.json"))
    )
    docs = await TavilySource(api_key=KEY, http=client, topic="news").search(QUERY)
    sent = route.calls[0].request
    assert sent.headers["Authorization"] == f"Bearer {KEY}"
    payload = json.loads(sent.content)
    assert payload["include_domains"] == ["nasa.gov"]
    assert payload["exclude_domains"] == ["example.com"]
    assert payload["end_date"] == "2019-12-31" and payload["topic"] == "news"
    assert "site:" not in payload["query"]
    assert [d.domain for d in docs] == ["nasa.gov"]


@respx.mock
async def test_tavily_usage_limit_is_rate_limited(client):
    respx.post(TavilySource.endpoint).mock(
        return_value=httpx.Response(432, json=body("tavily/error_usage_limit.json"))
    )
    with pytest.raises(SourceRateLimited):
        await TavilySource(api_key=KEY, http=client).search(Query(text="x"))


@respx.mock
async def test_searxng_all_engines_down_is_unreachable(client):
    respx.get("https://searx.example.org/search").mock(
        return_value=httpx.Response(200, json=body("searxng/search_engines_down.json"))
    )
    source = SearxngSource(base_url="https://searx.example.org/", http=client)
    with pytest.raises(SourceUnreachable, match=r"duckduckgo \(CAPTCHA\)"):
        await source.search(Query(text="x"))


@respx.mock
async def test_searxng_sends_json_format_and_reads_env(client, monkeypatch):
    monkeypatch.setenv("SEARXNG_URL", "https://searx.example.org")
    route = respx.get("https://searx.example.org/search").mock(
        return_value=httpx.Response(200, json=body("searxng/search.json"))
    )
    docs = await SearxngSource(http=client, max_pages=1).search(Query(text="apollo"))
    params = dict(route.calls[0].request.url.params)
    assert params["format"] == "json" and params["pageno"] == "1"
    assert len(docs) == 5 and docs[4].published_at is None


async def test_ddg_uses_cutoff_only_with_duckduckgo_backend():
    calls = []

    class Fake:
        def text(self, query, **kwargs):
            calls.append(kwargs)
            return body("ddgs/text.json")

        def news(self, query, **kwargs):
            raise AssertionError("text mode must not call news")

    query = Query(text="apollo", before=dt.date(2020, 1, 1))
    await DuckDuckGoSource(client_factory=Fake, backend="duckduckgo").search(query)
    await DuckDuckGoSource(client_factory=Fake).search(query)
    assert calls[0]["timelimit"] == "1990-01-01..2019-12-31"
    assert "timelimit" not in calls[1]


@pytest.mark.parametrize(
    ("cls", "var"),
    [
        (BraveSearchSource, "BRAVE_API_KEY"),
        (SerperSource, "SERPER_API_KEY"),
        (TavilySource, "TAVILY_API_KEY"),
    ],
)
def test_missing_key_names_the_variable(cls, var, monkeypatch):
    monkeypatch.delenv(var, raising=False)
    with pytest.raises(MissingCredentials, match=var):
        cls()


def test_missing_searxng_url_names_the_variable(monkeypatch):
    monkeypatch.delenv("SEARXNG_URL", raising=False)
    with pytest.raises(MissingCredentials, match="SEARXNG_URL"):
        SearxngSource()


def test_key_from_env_not_in_repr(monkeypatch, client):
    monkeypatch.setenv("BRAVE_API_KEY", KEY)
    source = BraveSearchSource(http=client)
    assert KEY not in repr(source) and KEY not in repr(vars(source))


def test_unknown_option_is_an_error():
    with pytest.raises(ValueError, match="not_an_option"):
        BraveSearchSource(api_key=KEY, not_an_option=1)


# --------------------------------------------------------------------------- page fetch


@respx.mock
async def test_fetch_pages_replaces_snippet_and_dates_from_page(client):
    data = body("ddgs/text.json")[1:2]  # the undated news.example.com result

    class Fake:
        def text(self, query, **kwargs):
            return data

    page = "https://93.184.215.14/fact-check/apollo-landing-date"  # the checked address
    respx.get(page, headers={"host": "news.example.com"}).mock(
        return_value=httpx.Response(
            200,
            content=(DATA / "pages/article.html").read_bytes(),
            headers={"content-type": "text/html; charset=utf-8"},
        )
    )
    source = DuckDuckGoSource(client_factory=Fake, http=client, fetch_pages=True)
    (doc,) = await source.search(Query(text="apollo landing date"))
    assert "landed on 20 July 1969" in doc.text
    assert "Privacy policy" not in doc.text  # boilerplate dropped
    assert doc.metadata["full_text"] and doc.metadata["snippet"].startswith("A widely shared")
    assert doc.published_at.date() == dt.date(2019, 6, 3)


@respx.mock
async def test_fetch_failure_keeps_snippet_and_is_traced(client):
    class Fake:
        def text(self, query, **kwargs):
            return [{"title": "t", "href": "https://gone.example.org/a", "body": "snippet text"}]

    respx.get("https://93.184.215.14/a", headers={"host": "gone.example.org"}).mock(
        return_value=httpx.Response(404)
    )
    source = DuckDuckGoSource(client_factory=Fake, http=client, fetch_pages=True)
    with context.check_context() as ctx:
        (doc,) = await source.search(Query(text="x"))
    assert doc.text == "snippet text" and doc.metadata["fetch_error"] == "HttpStatusError"
    assert any("page fetch" in e.data.get("error", "") for e in ctx.trace.of_kind("error"))


@respx.mock
async def test_fetch_refuses_private_result_urls(tmp_path):
    client = http_client_for_tests(tmp_path)

    async def private(host: str, port: int) -> list[str]:
        return ["192.168.0.10"]

    client.resolver = private
    route = respx.get("https://intranet.example.org/a").mock(return_value=httpx.Response(200))

    class Fake:
        def text(self, query, **kwargs):
            return [{"title": "t", "href": "https://intranet.example.org/a", "body": "s"}]

    source = DuckDuckGoSource(client_factory=Fake, http=client, fetch_pages=True)
    (doc,) = await source.search(Query(text="x"))
    assert doc.metadata["fetch_error"] == "UnsafeURL" and not route.called


# --------------------------------------------------------------------------- dates

NOW = dt.datetime(2024, 5, 10, 12, 0, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2023-02-10T15:23:08", dt.datetime(2023, 2, 10, 15, 23, 8, tzinfo=dt.timezone.utc)),
        ("2023-02-10T15:23:08Z", dt.datetime(2023, 2, 10, 15, 23, 8, tzinfo=dt.timezone.utc)),
        ("2023-02-10", dt.datetime(2023, 2, 10, tzinfo=dt.timezone.utc)),
        ("February 10, 2023", dt.datetime(2023, 2, 10, tzinfo=dt.timezone.utc)),
        ("Feb 10, 2023", dt.datetime(2023, 2, 10, tzinfo=dt.timezone.utc)),
        ("10 Feb 2023", dt.datetime(2023, 2, 10, tzinfo=dt.timezone.utc)),
        ("Fri, 10 Feb 2023 08:00:00 GMT", dt.datetime(2023, 2, 10, 8, tzinfo=dt.timezone.utc)),
        ("2019 Mar 5", dt.datetime(2019, 3, 5, tzinfo=dt.timezone.utc)),
        ("2019", dt.datetime(2019, 1, 1, tzinfo=dt.timezone.utc)),
        ("3 days ago", NOW - dt.timedelta(days=3)),
        ("an hour ago", NOW - dt.timedelta(hours=1)),
        (1700000000, dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.timezone.utc)),
        ("sometime soon", None),
        (None, None),
    ],
)
def test_parse_date(text, expected):
    assert parse_date(text, lenient=True, tz=UTC, now=NOW) == expected
