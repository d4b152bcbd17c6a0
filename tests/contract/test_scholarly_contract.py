"""The source contract for arXiv, PubMed and Semantic Scholar, against recorded answers."""

from __future__ import annotations

import datetime as dt

import httpx
import pytest
from http_fixtures import body, mock, text

from veracity.retrieval.base import Query
from veracity.retrieval.engines.scholarly import ArxivSource, PubMedSource, SemanticScholarSource
from veracity.testing.contract import SourceContract, http_client_for_tests


def xml(name: str) -> httpx.Response:
    return httpx.Response(200, text=text(name), headers={"content-type": "application/atom+xml"})


class TestArxivContract(SourceContract):
    query = Query(text="claim verification", top_k=10)
    cutoff = dt.date(2020, 1, 1)
    exclude_domain = "arxiv.org"
    unsupported = frozenset({"auth"})  # the arXiv API takes no credentials

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.get(ArxivSource.endpoint)
            mock(route, scenario, ok=xml("arxiv/query.xml"), empty=xml("arxiv/empty.xml"))
            return ArxivSource(http=http_client_for_tests(tmp_path))

        return make


class TestPubMedContract(SourceContract):
    query = Query(text="vitamin D", top_k=10)
    cutoff = dt.date(2020, 1, 1)
    exclude_domain = "nih.gov"
    secret = "ncbi-key-contract-0005"

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            esearch = respx_mock.get(f"{PubMedSource.base}/esearch.fcgi")
            mock(
                esearch,
                scenario,
                ok=httpx.Response(200, json=body("pubmed/esearch.json")),
                empty=httpx.Response(200, json=body("pubmed/esearch_empty.json")),
                auth=httpx.Response(400, json=body("pubmed/error_api_key.json")),
            )
            respx_mock.get(f"{PubMedSource.base}/efetch.fcgi").mock(
                return_value=httpx.Response(200, text=text("pubmed/efetch.xml"))
            )
            return PubMedSource(http=http_client_for_tests(tmp_path), api_key=self.secret)

        return make


class TestSemanticScholarContract(SourceContract):
    query = Query(text="vitamin D", top_k=10)
    cutoff = dt.date(2020, 1, 1)
    exclude_domain = "semanticscholar.org"
    secret = "s2-key-contract-0006"

    @pytest.fixture
    def make_source(self, respx_mock, tmp_path):
        def make(scenario):
            route = respx_mock.get(SemanticScholarSource.endpoint)
            mock(
                route,
                scenario,
                ok=httpx.Response(200, json=body("semantic_scholar/search.json")),
                empty=httpx.Response(200, json=body("semantic_scholar/search_empty.json")),
                auth=httpx.Response(403, json=body("semantic_scholar/error_forbidden.json")),
            )
            return SemanticScholarSource(http=http_client_for_tests(tmp_path), api_key=self.secret)

        return make
