"""WikipediaSource: search, as-of-cutoff revisions, summaries, candidates, sections."""

from __future__ import annotations

import datetime as dt
import json

import httpx
import pytest
import respx

from veracity.retrieval.base import Query, SourceBadResponse, SourceRateLimited
from veracity.retrieval.engines.wikipedia import WikipediaSource
from veracity.retrieval.engines.wikipedia_api import first_sentences, lead_paragraphs
from veracity.testing.contract import http_client_for_tests
from wikipedia_http import API, DATA, answer, dispatch


@pytest.fixture
def source(tmp_path):
    return WikipediaSource(http=http_client_for_tests(tmp_path))


@respx.mock
async def test_search_orders_by_rank_and_skips_disambiguation(source):
    route = respx.get(API).mock(return_value=answer("search.json"))
    docs = await source.search(Query(keywords=["Apollo 11", "moon"], operator="AND", top_k=5))
    params = dict(route.calls[0].request.url.params)
    assert params["gsrsearch"] == '"Apollo 11" moon'
    assert params["formatversion"] == "2" and params["exsentences"] == "3"
    assert [d.title for d in docs] == ["Apollo 11", "Lunar sample return", "Moon landing"]
    first = docs[0]
    assert (
        first.id == "wikipedia:en:30871" and first.url == "https://en.wikipedia.org/wiki/Apollo_11"
    )
    assert first.metadata["description"].startswith("First crewed")
    assert first.published_at is None and first.metadata["last_edited"] == "2024-05-01T10:00:00Z"


@respx.mock
async def test_search_language_picks_host(tmp_path):
    route = respx.get("https://de.wikipedia.org/w/api.php").mock(
        return_value=answer("search_empty.json")
    )
    src = WikipediaSource(http=http_client_for_tests(tmp_path))
    assert await src.search(Query(text="Mondlandung", language="de")) == []
    assert route.called


def test_bad_language_code_is_refused():
    with pytest.raises(ValueError, match="language code"):
        WikipediaSource(language="en.evil.com/")


@respx.mock
async def test_cutoff_serves_revision_before_it(source):
    respx.get(API).mock(
        side_effect=dispatch(
            [
                ({"generator": "search"}, "search.json"),
                ({"prop": "revisions", "pageids": "30871"}, "revisions_before.json"),
                ({"prop": "revisions"}, "revisions_none.json"),
                ({"action": "parse", "oldid": "930001234"}, "parse_oldid.json"),
            ]
        )
    )
    docs = await source.search(Query(text="apollo", before=dt.date(2020, 1, 1)))
    assert [d.title for d in docs] == ["Apollo 11"]  # the other pages did not exist yet
    (doc,) = docs
    assert doc.published_at == dt.datetime(2019, 12, 10, 18, 22, 5, tzinfo=dt.timezone.utc)
    assert doc.id == "wikipedia:en:30871@930001234"
    assert doc.text.startswith("Apollo 11 was the first mission") and "[1]" not in doc.text
    assert "Crewed lunar landing" not in doc.text  # infobox dropped
    assert doc.metadata["as_of"] == "2020-01-01"


@respx.mock
async def test_cutoff_can_be_left_to_filtering(tmp_path):
    src = WikipediaSource(http=http_client_for_tests(tmp_path), as_of_cutoff=False)
    respx.get(API).mock(return_value=answer("search.json"))
    strict = Query(text="apollo", before=dt.date(2020, 1, 1), drop_undated=True)
    assert await src.search(strict) == []
    assert len(await src.search(Query(text="apollo", before=dt.date(2020, 1, 1)))) == 3


@respx.mock
async def test_summary_first_sentences(source):
    route = respx.get(API).mock(return_value=answer("titles_primary.json"))
    summary = await source.summary("Jaguar (animal)", sentences=1)
    assert dict(route.calls[0].request.url.params)["exsentences"] == "1"
    assert summary.title == "Jaguar" and summary.description == "Large cat species of the Americas"
    assert summary.extract == "The jaguar is a large wild cat found in the Americas."
    assert not summary.is_disambiguation


@respx.mock
async def test_summary_of_missing_page_is_none(source):
    respx.get(API).mock(return_value=answer("titles_missing.json"))
    assert await source.summary("zzqx unknown page") is None


@respx.mock
async def test_rest_summary_whole_lead(source):
    respx.get("https://en.wikipedia.org/api/rest_v1/page/summary/Apollo_11").mock(
        return_value=answer("rest_summary.json")
    )
    respx.get("https://en.wikipedia.org/api/rest_v1/page/summary/Zzqx").mock(
        return_value=httpx.Response(
            404, json=json.loads((DATA / "rest_not_found.json").read_text())
        )
    )
    summary = await source.summary("Apollo 11", sentences=None)
    assert summary.pageid == 30871 and summary.extract.endswith("stayed in orbit.")
    assert await source.summary("Zzqx", sentences=None) is None


@respx.mock
async def test_candidates_of_a_disambiguation_page(source):
    respx.get(API).mock(
        side_effect=dispatch(
            [
                ({"titles": "Mercury", "generator": "links"}, "links_mercury.json"),
                ({"titles": "Mercury"}, "titles_disambiguation.json"),
            ]
        )
    )
    assert await source.is_disambiguation("Mercury")
    found = await source.candidates("Mercury")
    assert [c.title for c in found] == [
        "Mercury (element)",
        "Mercury (planet)",
        "Mercury (mythology)",
    ]
    assert found[0].description == "Chemical element with atomic number 80"
    assert found[2].description.startswith("Mercury is a god")  # falls back to the lead
    assert not any(c.primary for c in found)


@respx.mock
async def test_candidates_of_a_primary_page_add_disambiguation_links(source):
    respx.get(API).mock(
        side_effect=dispatch(
            [
                (
                    {"titles": "Jaguar (disambiguation)", "generator": "links"},
                    "links_jaguar_disambiguation.json",
                ),
                ({"titles": "Jaguar"}, "titles_primary.json"),
            ]
        )
    )
    found = await source.candidates("Jaguar", limit=5)
    assert [c.title for c in found] == ["Jaguar", "Jaguar Cars", "Jacksonville Jaguars"]
    assert found[0].primary and not found[1].primary


@respx.mock
async def test_candidates_fall_back_to_search(source):
    respx.get(API).mock(
        side_effect=dispatch(
            [({"generator": "search"}, "search.json"), ({"titles": "Apolo"}, "titles_missing.json")]
        )
    )
    found = await source.candidates("Apolo", limit=2)
    assert [c.title for c in found] == ["Apollo 11", "Lunar sample return"]


@respx.mock
async def test_sections_and_section_text(source):
    respx.get(API).mock(
        side_effect=dispatch(
            [
                ({"action": "parse", "prop": "sections"}, "parse_sections.json"),
                ({"action": "parse", "prop": "text", "section": "3"}, "parse_section_text.json"),
            ]
        )
    )
    sections = await source.sections("Apollo 11")
    assert [(s.index, s.title, s.level) for s in sections] == [
        (1, "Background", 2),
        (2, "Crew selection", 3),
        (3, "Lunar surface operations", 2),
    ]
    text = await source.section_text("Apollo 11", 3)
    assert text.startswith("The two moonwalkers") and "[12]" not in text
    assert "Duration" not in text and "color:red" not in text


@respx.mock
async def test_sections_of_missing_page_is_none(source):
    respx.get(API).mock(return_value=answer("error_missingtitle.json"))
    assert await source.sections("Zzqx") is None


@respx.mock
async def test_api_error_objects_are_typed(source):
    respx.get(API).mock(return_value=answer("error_ratelimited.json"))
    with pytest.raises(SourceRateLimited):
        await source.summary("Apollo 11")
    respx.get(API).mock(
        return_value=httpx.Response(200, json={"error": {"code": "badvalue", "info": "x"}})
    )
    with pytest.raises(SourceBadResponse, match="badvalue"):
        await source.summary("Apollo 11")


def test_text_helpers():
    assert first_sentences("One. Two! Three? Four.", 2) == "One. Two!"
    assert first_sentences("Dr. Who is here. Next.", 5) == "Dr. Who is here. Next."
    html = "<p>A<sup class='reference'>[3]</sup> b.</p><table><tr><td>x</td></tr></table><p>C.</p>"
    assert lead_paragraphs(html) == "A b.\nC."
