"""The source contract for the web engines, against recorded responses."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest
from http_fixtures import body, mock

from veracity.retrieval.base import Query
from veracity.retrieval.engines.web import BraveSearchSource, SerperSource, TavilySource
from veracity.retrieval.engines.web_free import DuckDuckGoSource, SearxngSource
from veracity.testing.contract import SourceContract, http_client_for_tests

QUERY = Query(text="apollo 11 moon landing", top_k=10)


class _WebContract(SourceContract):
    query = QUERY
    cutoff = dt.date(2020, 1, 1)
    include_domain = "nasa.gov"
    exclude_domain = "example.com"


class TestBraveContract(_WebContract):
    secret = "brave-key-contract-0001"

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.get(BraveSearchSource.endpoint)
            mock(
                route,
                scenario,
                ok=httpx.Response(200, json=body("brave/web_search.json")),
                empty=httpx.Response(200, json=body("brave/web_search_empty.json")),
                auth=httpx.Response(422, json=body("brave/error_token_invalid.json")),
            )
            return BraveSearchSource(api_key=self.secret, http=http_client_for_tests(tmp_path))

        return make


class TestSerperContract(_WebContract):
    secret = "serper-key-contract-0002"

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.post("https://google.serper.dev/search")
            mock(
                route,
                scenario,
                ok=httpx.Response(200, json=body("serper/search.json")),
                empty=httpx.Response(200, json=body("serper/search_empty.json")),
                auth=httpx.Response(403, json=body("serper/error_unauthorized.json")),
            )
            return SerperSource(api_key=self.secret, http=http_client_for_tests(tmp_path))

        return make


class TestTavilyContract(_WebContract):
    secret = "tvly-contract-key-0003"

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.post(TavilySource.endpoint)
            mock(
                route,
                scenario,
                ok=httpx.Response(200, json=body("tavily/search.json")),
                empty=httpx.Response(200, json=body("tavily/search_empty.json")),
                auth=httpx.Response(401, json=body("tavily/error_unauthorized.json")),
            )
            return TavilySource(api_key=self.secret, http=http_client_for_tests(tmp_path))

        return make


class TestSearxngContract(_WebContract):
    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.get("https://searx.example.org/search")
            mock(
                route,
                scenario,
                ok=httpx.Response(200, json=body("searxng/search.json")),
                empty=httpx.Response(200, json=body("searxng/search_empty.json")),
                auth=httpx.Response(403, text="<html><body>403 Forbidden</body></html>"),
            )
            return SearxngSource(
                base_url="https://searx.example.org", http=http_client_for_tests(tmp_path)
            )

        return make


class FakeDDGS:
    """Stands in for ddgs.DDGS: returns recorded results or raises ddgs's errors."""

    def __init__(self, scenario: str):
        self.scenario = scenario
        self.calls: list[tuple[str, str, dict]] = []

    def _answer(self, kind: str, query: str, kwargs: dict):
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        self.calls.append((kind, query, kwargs))
        if self.scenario == "ok":
            return body(f"ddgs/{kind}.json")
        if self.scenario == "empty":
            raise DDGSException("No results found.")
        if self.scenario == "rate_limited":
            raise RatelimitException("https://html.duckduckgo.com/html 202 Ratelimit")
        if self.scenario == "unreachable":
            raise TimeoutException("https://html.duckduckgo.com/html timed out")
        if self.scenario == "malformed":
            return {"not": "a list"}
        raise AssertionError(self.scenario)

    def text(self, query, **kwargs):
        return self._answer("text", query, kwargs)

    def news(self, query, **kwargs):
        return self._answer("news", query, kwargs)


class TestDuckDuckGoNewsContract(_WebContract):
    unsupported = frozenset({"auth"})  # no credentials
    include_domain = "nasa.gov"

    @pytest.fixture
    def make_source(self):
        def make(scenario):
            return DuckDuckGoSource(
                mode="news", client_factory=lambda: FakeDDGS(scenario), http=None
            )

        return make


class TestDuckDuckGoTextContract(_WebContract):
    unsupported = frozenset({"auth"})
    cutoff = None  # text results carry no dates

    @pytest.fixture
    def make_source(self):
        def make(scenario):
            return DuckDuckGoSource(client_factory=lambda: FakeDDGS(scenario))

        return make
