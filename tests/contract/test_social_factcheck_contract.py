"""The source contract for Reddit and the fact-check sources, against recorded answers."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest
from http_fixtures import body, mock

from veracity.retrieval.base import Query
from veracity.retrieval.engines.factcheck import FactCheckSiteSearch, GoogleFactCheckSource
from veracity.retrieval.engines.social import TOKEN_URL, RedditSource
from veracity.retrieval.engines.web import BraveSearchSource
from veracity.testing.contract import SourceContract, http_client_for_tests

LISTING_OK = httpx.Response(200, json=body("reddit/search.json"))
LISTING_EMPTY = httpx.Response(200, json=body("reddit/search_empty.json"))


class TestRedditPublicContract(SourceContract):
    query = Query(text="moon landing", top_k=10)
    cutoff = dt.date(2020, 1, 1)
    exclude_domain = "reddit.com"
    unsupported = frozenset({"auth"})  # the public endpoint takes no credentials

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path, monkeypatch):
        monkeypatch.delenv("REDDIT_CLIENT_ID", raising=False)
        monkeypatch.delenv("REDDIT_CLIENT_SECRET", raising=False)

        def make(scenario):
            route = respx_mock.get("https://www.reddit.com/search.json")
            mock(route, scenario, ok=LISTING_OK, empty=LISTING_EMPTY)
            return RedditSource(http=http_client_for_tests(tmp_path))

        return make


class TestRedditOAuthContract(SourceContract):
    query = Query(text="moon landing", top_k=10)
    cutoff = dt.date(2020, 1, 1)
    exclude_domain = "reddit.com"
    secret = "reddit-client-secret-contract-0007"

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            token = respx_mock.post(TOKEN_URL)
            if scenario == "auth":
                token.mock(
                    return_value=httpx.Response(401, json=body("reddit/error_unauthorized.json"))
                )
            else:
                token.mock(return_value=httpx.Response(200, json=body("reddit/token.json")))
            route = respx_mock.get("https://oauth.reddit.com/search")
            mock(route, scenario, ok=LISTING_OK, empty=LISTING_EMPTY)
            return RedditSource(
                http=http_client_for_tests(tmp_path),
                client_id="contract-client-id",
                client_secret=self.secret,
            )

        return make


class TestGoogleFactCheckContract(SourceContract):
    query = Query(text="moon landing 1968", top_k=10)
    cutoff = dt.date(2020, 1, 1)
    include_domain = "politifact.com"
    exclude_domain = "snopes.com"
    secret = "AIzaContractKey-0008"

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.get(GoogleFactCheckSource.endpoint)
            mock(
                route,
                scenario,
                ok=httpx.Response(200, json=body("google_factcheck/claims_search.json")),
                empty=httpx.Response(200, json=body("google_factcheck/claims_search_empty.json")),
                auth=httpx.Response(400, json=body("google_factcheck/error_key_invalid.json")),
            )
            return GoogleFactCheckSource(api_key=self.secret, http=http_client_for_tests(tmp_path))

        return make


class TestFactCheckSitesContract(SourceContract):
    query = Query(text="moon landing 1968", top_k=10)
    cutoff = dt.date(2020, 1, 1)
    include_domain = "politifact.com"
    exclude_domain = "snopes.com"
    secret = "brave-key-contract-0009"

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.get(BraveSearchSource.endpoint)
            mock(
                route,
                scenario,
                ok=httpx.Response(200, json=body("brave/web_search_factcheck_sites.json")),
                empty=httpx.Response(200, json=body("brave/web_search_empty.json")),
                auth=httpx.Response(422, json=body("brave/error_token_invalid.json")),
            )
            engine = BraveSearchSource(api_key=self.secret, http=http_client_for_tests(tmp_path))
            return FactCheckSiteSearch(engine)

        return make
