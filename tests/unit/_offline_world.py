"""An offline world for running experiment configs as shipped: no network, tiny data.

- the miniature data directory ``tests/data/datasets`` (every loader's file layout);
- web search through DuckDuckGo answered by a fake ``ddgs`` client with the recorded
  results in ``tests/data/http/ddgs``, and other engines' keys removed (so ``engine:
  auto`` picks DuckDuckGo);
- the Wikipedia API answered from the recorded MediaWiki answers in
  ``tests/data/http/wikipedia`` (respx: any other HTTP request fails the test);
- every local index a config names built on demand from the miniature SciFact corpus
  (the config's index name and search mode, our tiny contents);
- every ToE checkpoint a config names, saved freshly initialised and recorded as the
  training the config asks for, so the loading path and its checks run as shipped.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
import respx

from veracity.core.config import RunConfig
from veracity.datasets import get_dataset
from veracity.retrieval.local.corpus import build_local_corpus, index_folder
from veracity.runtime.home import home_paths

TESTS = Path(__file__).resolve().parents[1]
DATA_DIR = TESTS / "data" / "datasets"
HTTP = TESTS / "data" / "http"
KEY_VARS = ("BRAVE_API_KEY", "SERPER_API_KEY", "TAVILY_API_KEY", "SEARXNG_URL")


def _recorded(relpath: str) -> Any:
    return json.loads((HTTP / relpath).read_text())


class FakeDDGS:
    """Stands in for ``ddgs.DDGS``: the recorded text and news results for any query."""

    queries: ClassVar[list[str]] = []

    def __init__(self, *args: Any, **kwargs: Any):
        pass

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        FakeDDGS.queries.append(query)
        return _recorded("ddgs/text.json")

    def news(self, query: str, **kwargs: Any) -> list[dict[str, Any]]:
        FakeDDGS.queries.append(query)
        return _recorded("ddgs/news.json")


def wikipedia_answer(request: httpx.Request) -> httpx.Response:
    """A recorded MediaWiki answer chosen by the request's kind."""
    params = dict(request.url.params)
    if "/rest_v1/page/summary/" in request.url.path:
        name = "rest_summary.json"
    elif params.get("list") == "search":
        name = "search.json"
    elif params.get("generator") == "links":
        name = "links_mercury.json"
    elif params.get("action") == "parse":
        name = "parse_sections.json"
    elif params.get("prop") == "revisions":
        name = "revisions_before.json"
    else:
        name = "titles_primary.json"
    return httpx.Response(200, json=_recorded(f"wikipedia/{name}"))


def local_indexes(cfg: RunConfig) -> dict[str, str]:
    """Index name -> search mode of every local index the resolved config names."""
    found: dict[str, str] = {}
    for spec in cfg.sources.values():
        if spec.get("type") == "local" and spec.get("index"):
            found[spec["index"]] = spec.get("mode") or "bm25"
    corpus = cfg.method_config.get("corpus")
    if isinstance(corpus, dict) and corpus.get("index"):
        found[corpus["index"]] = corpus.get("mode") or "bm25"
    return found


def build_indexes(cfg: RunConfig) -> list[str]:
    """Build each local index the config names that does not exist yet (bm25, or hybrid
    when the config searches densely). Returns the names built."""
    built = []
    for name, mode in local_indexes(cfg).items():
        if (index_folder(name, indexes_dir=home_paths().indexes) / "manifest.json").is_file():
            continue
        docs = list(get_dataset("scifact").corpus(DATA_DIR))
        build_local_corpus(
            name,
            docs,
            mode="bm25" if mode == "bm25" else "hybrid",
            indexes_dir=home_paths().indexes,
        )
        built.append(name)
    return built


def build_checkpoints(cfg: RunConfig) -> list[str]:
    """Save each ToE checkpoint the config names that does not exist yet: freshly
    initialised networks and policy, recorded as the finished training the config asks
    for (`trained_on`: its dataset and split, networks trained, policy updated), so the
    loading path and its checks run as shipped (the weights' values are not under test).
    Returns the names saved."""
    name = cfg.method_config.get("checkpoint")
    if cfg.method != "toe" or not name:
        return []
    from veracity.methods.toe import ToEConfig
    from veracity.methods.toe.models import ToEModels

    tcfg = ToEConfig(**cfg.method_config)
    folder = ToEModels.folder_for(tcfg, home_paths().checkpoints)
    if (folder / "manifest.json").is_file():
        return []
    models = ToEModels(tcfg)
    data = {}
    if tcfg.trained_on is not None:
        models.trained = {"eval_net": True, "agg_net": True}
        models.policy.updates = 1
        data = {"dataset": tcfg.trained_on.dataset, "split": tcfg.trained_on.split}
    models.save(folder, data=data)
    return [name]


@contextmanager
def recorded_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    """DuckDuckGo (any query) and Wikipedia answered from recordings, other engines' keys
    unset; any other HTTP request fails."""
    import ddgs

    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(ddgs, "DDGS", FakeDDGS)
    with respx.mock(assert_all_called=False) as router:
        router.route(host__regex=r"(^|\.)wikipedia\.org$").mock(side_effect=wikipedia_answer)
        yield router
