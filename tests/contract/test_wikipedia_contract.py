"""The source contract for WikipediaSource, against recorded Action API answers."""

from __future__ import annotations

import httpx
import pytest
from http_fixtures import body, fault

from veracity.retrieval.base import Query
from veracity.retrieval.engines.wikipedia import WikipediaSource
from veracity.testing.contract import SourceContract, http_client_for_tests

API = "https://en.wikipedia.org/w/api.php"


class TestWikipediaContract(SourceContract):
    query = Query(text="apollo moon landing", top_k=10)
    exclude_domain = "wikipedia.org"  # every hit is on it, so excluding it leaves nothing
    unsupported = frozenset({"auth"})  # reading Wikipedia needs no credentials

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.get(API)
            if scenario in ("ok", "empty"):
                name = "search.json" if scenario == "ok" else "search_empty.json"
                route.mock(return_value=httpx.Response(200, json=body(f"wikipedia/{name}")))
            elif scenario == "rate_limited":
                # MediaWiki reports rate limits inside a 200 answer
                route.mock(
                    return_value=httpx.Response(200, json=body("wikipedia/error_ratelimited.json"))
                )
            else:
                outcome = fault(scenario)
                if isinstance(outcome, Exception):
                    route.mock(side_effect=outcome)
                else:
                    route.mock(return_value=outcome)
            return WikipediaSource(http=http_client_for_tests(tmp_path))

        return make
