"""Scholarly sources: query rendering, cutoffs in the call, XML parsing, partial dates."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import httpx
import pytest
import respx

from veracity.retrieval.base import Query, SourceBadResponse
from veracity.retrieval.engines.scholarly import (
    ArxivSource,
    PubMedSource,
    SemanticScholarSource,
    arxiv_query,
)
from veracity.retrieval.engines.scholarly_xml import end_of_period, parse_xml, pubmed_articles
from veracity.testing.contract import http_client_for_tests

DATA = Path(__file__).resolve().parents[1] / "data" / "http"
UTC = dt.timezone.utc


@pytest.fixture
def http(tmp_path):
    return http_client_for_tests(tmp_path)


def test_arxiv_query_rendering():
    q = Query(
        text="The effect of dropout", keywords=["neural network", "overfitting"], operator="OR"
    )
    assert arxiv_query(q) == (
        '(all:effect OR all:dropout) AND (all:"neural network" OR all:"overfitting")'
    )
    dated = Query(keywords=["transformer"], before=dt.date(2020, 3, 1))
    assert arxiv_query(dated) == (
        '((all:"transformer")) AND submittedDate:[199101010000 TO 202002292359]'
    )


@respx.mock
async def test_arxiv_parses_entries(http):
    route = respx.get(ArxivSource.endpoint).mock(
        return_value=httpx.Response(200, text=(DATA / "arxiv/query.xml").read_text())
    )
    docs = await ArxivSource(http=http).search(Query(text="claims", top_k=5))
    assert dict(route.calls[0].request.url.params)["sortBy"] == "relevance"
    assert [d.id for d in docs] == ["arxiv:1803.05355", "arxiv:2305.14251", "arxiv:hep-th/9901001"]
    first = docs[0]
    assert first.title == "A Benchmark of Claims Paired with Encyclopedia Evidence"
    assert first.url == "https://arxiv.org/abs/1803.05355"
    assert first.published_at == dt.datetime(2018, 3, 14, 15, 21, tzinfo=UTC)
    assert first.metadata["authors"] == ["Ada Example", "Ben Sample"]
    assert first.metadata["version"] == "3" and docs[1].metadata["doi"].startswith("10.0000")


@respx.mock
async def test_arxiv_error_entry_is_bad_response(http):
    respx.get(ArxivSource.endpoint).mock(
        return_value=httpx.Response(200, text=(DATA / "arxiv/error.xml").read_text())
    )
    with pytest.raises(SourceBadResponse, match="max_results must be non-negative"):
        await ArxivSource(http=http).search(Query(text="x"))


@respx.mock
async def test_pubmed_two_step_with_cutoff(http):
    esearch = respx.get(f"{PubMedSource.base}/esearch.fcgi").mock(
        return_value=httpx.Response(
            200, json=json.loads((DATA / "pubmed/esearch.json").read_text())
        )
    )
    efetch = respx.get(f"{PubMedSource.base}/efetch.fcgi").mock(
        return_value=httpx.Response(200, text=(DATA / "pubmed/efetch.xml").read_text())
    )
    docs = await PubMedSource(http=http, email="team@example.org").search(
        Query(text="vitamin D", before=dt.date(2020, 1, 1))
    )
    sent = dict(esearch.calls[0].request.url.params)
    assert sent["maxdate"] == "2019/12/31" and sent["datetype"] == "pdat"
    assert sent["email"] == "team@example.org" and "api_key" not in sent
    assert dict(efetch.calls[0].request.url.params)["id"] == "31000001,35000002,12000003"
    assert [d.id for d in docs] == ["pubmed:31000001", "pubmed:12000003"]
    assert docs[0].text.startswith("BACKGROUND: Low vitamin D") and "RESULTS:" in docs[0].text
    assert (
        docs[1].text == "Seasonal variation of vitamin D in a northern population."
    )  # no abstract
    assert docs[1].metadata["has_abstract"] is False


def test_pubmed_dates_use_earliest_and_end_of_period():
    root = parse_xml((DATA / "pubmed/efetch.xml").read_bytes(), "pubmed")
    by_id = {a["pmid"]: a for a in pubmed_articles(root, "pubmed")}
    # electronic date (Feb 20) is earlier than the issue date (end of March)
    assert by_id["31000001"]["published"] == dt.datetime(2019, 2, 20, tzinfo=UTC)
    assert by_id["35000002"]["published"] == dt.datetime(2022, 1, 15, tzinfo=UTC)
    # "2001 Nov-Dec": the last day it can stand for
    assert by_id["12000003"]["published"] == dt.datetime(2001, 12, 31, tzinfo=UTC)
    assert by_id["12000003"]["date_precision"] == "month"


def test_end_of_period():
    assert end_of_period(2020, 2) == dt.datetime(2020, 2, 29, tzinfo=UTC)
    assert end_of_period(2021) == dt.datetime(2021, 12, 31, tzinfo=UTC)


def test_pubmed_key_from_env_is_sent_but_not_shown(monkeypatch, http):
    monkeypatch.setenv("NCBI_API_KEY", "ncbi-env-key-1234")
    source = PubMedSource(http=http)
    assert source._common()["api_key"] == "ncbi-env-key-1234"
    assert "ncbi-env-key-1234" not in repr(source) and "ncbi-env-key-1234" not in repr(
        source.options
    )


@respx.mock
async def test_pubmed_search_error_is_bad_response(http):
    respx.get(f"{PubMedSource.base}/esearch.fcgi").mock(
        return_value=httpx.Response(200, json={"esearchresult": {"ERROR": "Invalid query"}})
    )
    with pytest.raises(SourceBadResponse, match="Invalid query"):
        await PubMedSource(http=http).search(Query(text="x"))


@respx.mock
async def test_semantic_scholar_cutoff_and_year_only_dates(http):
    route = respx.get(SemanticScholarSource.endpoint).mock(
        return_value=httpx.Response(
            200, json=json.loads((DATA / "semantic_scholar/search.json").read_text())
        )
    )
    docs = await SemanticScholarSource(http=http, api_key="s2-unit-key-99").search(
        Query(text="vitamin D", before=dt.date(2020, 1, 1))
    )
    sent = route.calls[0].request
    assert dict(sent.url.params)["publicationDateOrYear"] == ":2019-12-31"
    assert sent.headers["x-api-key"] == "s2-unit-key-99"
    assert [d.title[:20] for d in docs] == ["Vitamin D supplement", "Seasonal variation o"]
    year_only = docs[1]
    assert year_only.published_at == dt.datetime(2001, 12, 31, tzinfo=UTC)
    assert year_only.metadata["date_precision"] == "year" and year_only.text == year_only.title
