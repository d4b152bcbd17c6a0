"""Sources by name: entry points, config mappings, clear errors for missing keys."""

from __future__ import annotations

import pytest

from veracity.core import registry
from veracity.core.config import ConfigError, RunConfig
from veracity.retrieval.base import Source
from veracity.retrieval.engines.factcheck import FactCheckSiteSearch
from veracity.retrieval.engines.web import BraveSearchSource
from veracity.retrieval.engines.web_free import DuckDuckGoSource
from veracity.retrieval.engines.wikipedia import WikipediaSource
from veracity.retrieval.managed import CombinedSource, ManagedSource
from veracity.retrieval.registry_setup import (
    available_web_engines,
    build_combined,
    build_source,
    build_sources,
    build_web,
)
from veracity.testing.contract import http_client_for_tests

KEYS = (
    "BRAVE_API_KEY",
    "SERPER_API_KEY",
    "TAVILY_API_KEY",
    "SEARXNG_URL",
    "GOOGLE_FACTCHECK_API_KEY",
)


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for var in KEYS:
        monkeypatch.delenv(var, raising=False)


BUILT_INS = [
    "arxiv",
    "brave",
    "duckduckgo",
    "factcheck_sites",
    "google_factcheck",
    "pubmed",
    "recorded",
    "reddit",
    "searxng",
    "semantic_scholar",
    "serper",
    "tavily",
    "web",
    "wikipedia",
]


def test_built_ins_are_registered_through_entry_points():
    assert set(BUILT_INS) <= set(registry.sources.names())
    assert registry.sources.get("wikipedia") is WikipediaSource


def test_build_sources_from_a_run_config(tmp_path, monkeypatch):
    monkeypatch.setenv("BRAVE_API_KEY", "brave-registry-key-1")
    config = RunConfig.model_validate(
        {
            "sources": {
                "wikipedia": {"sentences": 2},
                "wiki_de": {"type": "wikipedia", "language": "de"},
                "web": {"engine": "auto"},
                "arxiv": {},
            }
        }
    )
    http = http_client_for_tests(tmp_path)
    built = build_sources(config.sources, http=http)
    assert list(built) == ["wikipedia", "wiki_de", "web", "arxiv"]
    assert all(isinstance(s, ManagedSource) and isinstance(s, Source) for s in built.values())
    assert built["wiki_de"].name == "wiki_de" and built["wiki_de"].inner.options.language == "de"
    assert isinstance(built["web"].inner, BraveSearchSource)  # the first engine with a key
    assert built["wikipedia"].inner.http is http


def test_missing_key_names_the_variable():
    with pytest.raises(ConfigError, match="BRAVE_API_KEY"):
        build_source("brave")
    with pytest.raises(ConfigError, match="GOOGLE_FACTCHECK_API_KEY"):
        build_source("google_factcheck")


def test_all_problems_are_reported_together():
    with pytest.raises(ConfigError) as info:
        build_sources({"nope": {}, "wikipedia": {"sentencez": 3}, "serper": {}})
    message = str(info.value)
    assert "sources.nope: unknown source 'nope'" in message
    assert "sources.wikipedia: bad options" in message and "sentencez" in message
    assert "SERPER_API_KEY" in message


def test_options_must_be_a_mapping():
    with pytest.raises(ConfigError, match="must be a mapping"):
        build_sources({"wikipedia": ["not", "a", "mapping"]})


def test_web_auto_falls_back_to_duckduckgo():
    assert available_web_engines() == ["duckduckgo"]
    engine = build_web()
    assert isinstance(engine, DuckDuckGoSource) and engine.name == "duckduckgo"
    with pytest.raises(ConfigError, match="unknown web engine"):
        build_web("altavista")


def test_factcheck_sites_and_unmanaged(monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", "serper-registry-key-2")
    source = build_source(
        "factcheck_sites", {"engine": "auto", "sites": ["snopes.com"]}, managed=False
    )
    assert isinstance(source, FactCheckSiteSearch) and source.sites == ("snopes.com",)
    assert source.engine.name == "serper"


def test_combined_from_config(tmp_path):
    combined = build_combined({"wikipedia": {}, "arxiv": {}}, http=http_client_for_tests(tmp_path))
    assert isinstance(combined, CombinedSource)
    assert [s.name for s in combined.sources] == ["wikipedia", "arxiv"]
