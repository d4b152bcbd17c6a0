"""The tools layer: evidence tools over sources (Wikipedia browsing on recorded API
answers), argument models from JSON schemas, bounded ReAct history, guards."""

from __future__ import annotations

import datetime as dt

import pytest
import respx
from pydantic import ValidationError

from veracity.cli.methods.mermaid import with_memory_mode
from veracity.core import context
from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError
from veracity.core.types import Document
from veracity.deliberation.react import Observation, Step, Trajectory
from veracity.evaluation.report import method_counters
from veracity.evaluation.store import PredictionRecord
from veracity.retrieval.engines.wikipedia import WikipediaSource
from veracity.retrieval.guards import EvalGuards, eval_guards, guards_with_cutoff
from veracity.testing import InMemorySource
from veracity.testing.contract import http_client_for_tests
from veracity.tools import evidence_tools
from veracity.tools.schema import model_from_schema
from wikipedia_http import API, answer, dispatch


@pytest.fixture
def wiki_tools(tmp_path):
    source = WikipediaSource(http=http_client_for_tests(tmp_path))
    return {t.name: t for t in evidence_tools({"wikipedia": source})}


def test_a_wikipedia_source_gives_search_and_browse_tools(wiki_tools):
    assert list(wiki_tools) == [
        "search_wikipedia", "wikipedia_summary", "wikipedia_page", "wikipedia_sections",
        "wikipedia_section", "wikipedia_related",
    ]  # fmt: skip
    assert "fetch_page" not in wiki_tools  # no live web source configured
    schema = wiki_tools["wikipedia_section"].input_model.model_json_schema()
    assert schema["required"] == ["title", "index"]


@respx.mock
async def test_full_page_tool_reads_the_whole_article_and_counts_a_search(wiki_tools):
    route = respx.get(API).mock(side_effect=dispatch([({"titles": "Jaguar"}, "extract_full.json")]))
    tool = wiki_tools["wikipedia_page"]
    ctx = context.CheckContext()
    with context.check_context(ctx):
        obs = await tool.call(tool.input_model(title="Jaguar"))
    params = dict(route.calls[0].request.url.params)
    assert "exintro" not in params and params["explaintext"] == "1"
    assert "== Distribution and habitat ==" in obs.text and obs.error is None
    assert obs.documents[0].url == "https://en.wikipedia.org/wiki/Jaguar"
    search = ctx.trace.of_kind("search")[0]
    assert search.name == "wikipedia" and search.data["query"]["tool"] == "wikipedia_page"
    assert ctx.usage.searches == 1


@respx.mock
async def test_related_pages_come_from_morelike_search_without_disambiguation(wiki_tools):
    route = respx.get(API).mock(return_value=answer("morelike.json"))
    tool = wiki_tools["wikipedia_related"]
    obs = await tool.call(tool.input_model(title="Jaguar"))
    assert dict(route.calls[0].request.url.params)["gsrsearch"] == "morelike:Jaguar"
    assert [d.title for d in obs.documents] == ["Leopard", "Puma"]


@respx.mock
async def test_sections_and_missing_articles(wiki_tools):
    respx.get(API).mock(
        side_effect=dispatch(
            [
                ({"prop": "sections"}, "parse_sections.json"),
                ({"titles": "Nope"}, "titles_missing.json"),
            ]
        )
    )
    sections = await wiki_tools["wikipedia_sections"].call(
        wiki_tools["wikipedia_sections"].input_model(title="Jaguar")
    )
    assert sections.error is None and sections.text.splitlines()[0].startswith("1.")
    missing = await wiki_tools["wikipedia_summary"].call(
        wiki_tools["wikipedia_summary"].input_model(title="Nope")
    )
    assert "no Wikipedia article" in missing.text


@respx.mock
async def test_a_failing_service_is_an_observation_with_the_error(wiki_tools):
    respx.get(API).mock(return_value=answer("error_missingtitle.json"))
    tool = wiki_tools["wikipedia_section"]
    obs = await tool.call(tool.input_model(title="Nope", index=2))
    assert obs.error and "missingtitle" in obs.error


def test_fetch_page_is_offered_with_a_web_source_or_on_request():
    web = InMemorySource([], name="web")
    web.kind = "web"
    assert "fetch_page" in {t.name for t in evidence_tools({"web": web})}
    local = InMemorySource([], name="docs")
    assert "fetch_page" in {t.name for t in evidence_tools({"docs": local}, fetch_pages=True)}
    with pytest.raises(ValueError, match="two tools"):
        evidence_tools({"a b": local, "a_b": local})


def test_argument_models_from_json_schemas():
    model = model_from_schema(
        "lookup",
        {
            "type": "object",
            "properties": {
                "topic": {"type": "string", "maxLength": 20, "description": "what"},
                "limit": {"type": "integer", "minimum": 1, "default": 3},
                "mode": {"enum": ["fast", "full"]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "when": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "weird-name": {"type": "string"},
            },
            "required": ["topic"],
        },
    )
    ok = model(topic="Berlin", mode="fast", tags=["a"])
    assert ok.limit == 3 and ok.when is None
    schema = model.model_json_schema()
    assert (
        schema["properties"]["topic"]["maxLength"] == 20
        and "weird-name" not in schema["properties"]
    )
    for bad in (
        {},
        {"topic": "x" * 21},
        {"topic": "x", "mode": "slow"},
        {"topic": "x", "limit": 0},
    ):
        with pytest.raises(ValidationError):
            model(**bad)


def test_history_is_bounded_by_dropping_when_asked():
    steps = [
        Step(
            index=i,
            thought=f"t{i}",
            action="search",
            input="q",
            observation=Observation(
                text="x" * 400, documents=[Document(id=f"d{i}", text="x", title=f"T{i}")]
            ),
        )
        for i in (1, 2, 3)
    ]
    trajectory = Trajectory(steps=steps)
    text, how = trajectory.render_bounded(700, "drop")
    assert how == {"summarised": [], "dropped": [1, 2]} and len(text) <= 700
    assert "(observation omitted to save space)" in text and "x" * 400 in text
    text, how = trajectory.render_bounded(1000, "summarise")
    assert how == {"summarised": [1, 2], "dropped": []} and "Found: T1" in text


def test_guards_with_the_inputs_own_date():
    day = dt.date(2020, 5, 1)
    assert guards_with_cutoff(None) is None
    assert guards_with_cutoff(day) == EvalGuards(before=day)
    with eval_guards(EvalGuards(before=dt.date(2019, 1, 1), exclude_domains=("x.org",))):
        assert guards_with_cutoff(day).before == dt.date(2019, 1, 1)  # the earlier one wins
    with eval_guards(EvalGuards(before=dt.date(2021, 1, 1), exclude_domains=("x.org",))):
        tightened = guards_with_cutoff(day)
        assert tightened.before == day and tightened.exclude_domains == ("x.org",)


def test_memory_flag_keeps_the_configs_other_memory_options():
    cfg = RunConfig(method="mermaid", method_config={"memory": {"path": "/m.sqlite"}})
    assert with_memory_mode(cfg, "off").method_config["memory"] == {
        "path": "/m.sqlite",
        "mode": "off",
    }
    assert with_memory_mode(cfg, None) is cfg
    with pytest.raises(ConfigError, match="--memory"):
        with_memory_mode(cfg, "maybe")


def test_reports_sum_the_methods_counters():
    def record(i: int, counters: dict | None) -> PredictionRecord:
        verdict = (
            {"label": "true", "label_space": "true_false", "method": "mermaid",
             "metadata": {"counters": counters}}
            if counters is not None else None
        )  # fmt: skip
        return PredictionRecord(
            id=str(i), gold="true", gold_original="true", predicted="true", status="ok",
            verdict=verdict,
        )  # fmt: skip

    rows = [
        record(1, {"tool_calls": 3, "searches_saved": 1}),
        record(2, {"tool_calls": 2}),
        record(3, None),
    ]
    assert method_counters(rows) == {"tool_calls": 5, "searches_saved": 1}
