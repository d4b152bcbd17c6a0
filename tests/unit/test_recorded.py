"""RecordedSource: trace parsing (cut observations), query matching, claim binding."""

from __future__ import annotations

from pathlib import Path

import pytest

from veracity.core import context
from veracity.retrieval.base import Query, SourceBadResponse, SourceUnreachable
from veracity.retrieval.recorded.source import RecordedSource, content_words, dice
from veracity.retrieval.recorded.traces import load_trace_file, parse_observation, parse_payload

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "recorded"
DEMO = str(FIXTURES / "demo_gpt-4o.json")


def test_trace_file_searches_and_statuses():
    searches = load_trace_file(Path(DEMO))
    assert [(s.tool, s.query, s.status) for s in searches] == [
        ("search_google", "apollo 11 landing date", "ok"),
        ("search_wikipedia", "Apollo 11", "ok"),
        ("search_wikipedia", "apollo 11 crew dog", "no_results"),
        ("search_google", "apollo 11 launch site", "error"),
        ("search_google", "boiling point of water at sea level", "ok"),
    ]
    google = searches[0]
    assert google.truncated and google.dataset == "demo"
    assert [r.get("position") for r in google.results] == [0, 1, 2, 3, None]
    cut = google.results[-1]
    assert cut["truncated"] and cut["link"] == "https://science.nasa.gov/apollo-11/timeline/"
    assert cut["snippet"].startswith("Launch on July 16")
    assert '"small step"' in google.results[3]["snippet"]  # escapes survive


def test_parse_payload_of_cut_json():
    text = '{"query":"q","results":[{"title":"A","link":"https://a.org","snippet":"x"},{"title":"B","li'
    payload, cut = parse_payload(text)
    assert cut and payload["query"] == "q"
    assert payload["results"][0] == {"title": "A", "link": "https://a.org", "snippet": "x"}
    assert payload["results"][1] == {"title": "B", "truncated": True}


def test_observation_of_other_shapes_is_ignored():
    assert parse_observation("Observation: something else") is None


def test_missing_recording_is_unreachable(tmp_path):
    with pytest.raises(SourceUnreachable, match="no recorded traces"):
        RecordedSource(path=str(tmp_path / "nothing"))


async def test_bad_record_is_bad_response(tmp_path):
    bad = tmp_path / "x_gpt-4o.json"
    bad.write_text('[{"claim": "c"}]')
    with pytest.raises(SourceBadResponse, match="react_trace"):
        await RecordedSource(path=str(bad)).search(Query(text="q"))


async def test_exact_match_and_provenance():
    docs = await RecordedSource(path=DEMO).search(Query(text="Apollo 11 landing date!", top_k=10))
    assert [d.title for d in docs][:2] == ["Direct Answer", "Apollo 11 Mission Overview - NASA"]
    first = docs[0]
    assert first.url is None and first.text == "Apollo 11 landing: July 20, 1969"
    meta = docs[1].metadata
    assert meta["match"] == "exact" and meta["recorded_query"] == "apollo 11 landing date"
    assert meta["recorded_claim"].startswith("The first crewed Moon landing")
    assert meta["tool"] == "search_google" and meta["dataset"] == "demo"


async def test_wikipedia_results_get_page_urls_and_plain_text():
    docs = await RecordedSource(path=DEMO, tools=("search_wikipedia",)).search(
        Query(text="Apollo 11")
    )
    assert docs[0].url == "https://en.wikipedia.org/wiki/Apollo_11"
    assert docs[0].text == "Apollo 11 was the first crewed landing on the Moon"


async def test_lexical_match_above_threshold_only():
    source = RecordedSource(path=DEMO)
    docs = await source.search(Query(text="when was the apollo 11 landing"))
    assert docs and docs[0].metadata["match"] == "lexical"
    assert docs[0].metadata["match_score"] == pytest.approx(
        dice(content_words("apollo 11 landing"), content_words("apollo 11 landing date")), abs=1e-4
    )
    with context.check_context() as ctx:
        assert await source.search(Query(text="price of gold in 1980")) == []
    (note,) = ctx.trace.of_kind("note")
    assert note.data["message"] == "no recorded search matched"


async def test_bound_claim_restricts_candidates():
    source = RecordedSource(path=DEMO, lexical_threshold=0.2)
    water = source.bind("Water boils at 100 degrees Celsius at sea level.")
    docs = await water.search(Query(text="apollo landing water"))
    assert {d.metadata["recorded_query"] for d in docs} == {"boiling point of water at sea level"}
    assert all(d.metadata["claim_matched"] for d in docs)
    unknown = source.bind("A claim nobody recorded.")
    docs = await unknown.search(Query(text="apollo 11 landing date"))
    assert docs and not docs[0].metadata["claim_matched"]
    assert source.claim is None  # binding made a view, not a change


async def test_the_running_checks_claim_restricts_candidates():
    source = RecordedSource(path=DEMO, lexical_threshold=0.2)
    water = "Water boils at 100 degrees Celsius at sea level."
    with context.check_context(context.CheckContext(claim=water)):
        docs = await source.search(Query(text="apollo landing water"))
    assert {d.metadata["recorded_query"] for d in docs} == {"boiling point of water at sea level"}
    assert all(d.metadata["claim_matched"] for d in docs)
    with context.check_context():  # a check without a claim: every recorded search
        docs = await source.search(Query(text="apollo landing water"))
    assert not any(d.metadata["claim_matched"] for d in docs)


async def test_recorded_no_results_is_an_honest_empty_answer():
    assert await RecordedSource(path=DEMO).search(Query(text="apollo 11 crew dog")) == []


async def test_errors_in_the_recording_are_not_replayed():
    docs = await RecordedSource(path=DEMO, lexical_threshold=0.3).search(
        Query(text="apollo 11 launch site")
    )
    assert all(d.metadata["recorded_query"] != "apollo 11 launch site" for d in docs)


@pytest.mark.nlp
async def test_embedding_matcher_with_hashing_embedder(monkeypatch):
    from veracity.nlp import embeddings

    monkeypatch.setattr(embeddings, "get_embedder", lambda model=None: embeddings.HashingEmbedder())
    source = RecordedSource(path=DEMO, matcher="embedding", embedding_threshold=0.5)
    docs = await source.search(Query(text="apollo 11 landing day"))
    assert docs and docs[0].metadata["match"] == "embedding"


@pytest.mark.data
async def test_real_recording_replays(benchmark_data_dir):
    # the runtime hands a source that names no path the data directory's traces folder
    from veracity.retrieval.recorded.source import TRACES_SUBDIR

    source = RecordedSource(path=str(benchmark_data_dir / TRACES_SUBDIR))
    assert len(source.claims()) > 300
    docs = await source.search(Query(text="Ann Dunham birthplace"))
    assert docs and all(d.metadata["recorded_query"] == "Ann Dunham birthplace" for d in docs)
