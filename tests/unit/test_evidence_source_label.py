"""Evidence names the source that really found it (``local:default``, ``brave``), not the
role a method binds the source to (a rag run's "web" may be the default local corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import respx

from veracity.core import context
from veracity.core.types import Document
from veracity.retrieval.base import Query
from veracity.retrieval.defaults import DEFAULT_INDEX, SourceNeed, default_sources
from veracity.retrieval.engines.web import BraveSearchSource
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.retrieval.registry_setup import build_sources
from veracity.runtime.home import home_paths
from veracity.testing.contract import http_client_for_tests

DATA = Path(__file__).resolve().parents[1] / "data" / "http"


async def test_the_default_local_corpus_bound_as_web_labels_its_documents_local():
    docs = [Document(id=f"d{i}", text=f"aspirin lowers stroke risk, study {i}") for i in range(3)]
    build_local_corpus(
        DEFAULT_INDEX, docs, mode="bm25", embedder="hashing:64", indexes_dir=home_paths().indexes
    )
    chosen = default_sources(
        "rag", [SourceNeed("web")], online=False, indexes_dir=home_paths().indexes
    )
    assert chosen.sources == {"web": {"type": "local", "index": DEFAULT_INDEX}}
    source = build_sources(chosen.sources, indexes_dir=home_paths().indexes)["web"]
    with context.check_context() as ctx:
        found = await source.search(Query(text="aspirin stroke"))
    assert found and {d.source for d in found} == {"local:default"}
    assert ctx.trace.of_kind("search")[0].name == "web"  # the trace keeps the role's name


async def public(host: str, port: int) -> list[str]:
    return ["93.184.215.14"]


@respx.mock
async def test_a_web_engine_bound_as_web_labels_its_documents_with_the_engine(tmp_path):
    respx.get(BraveSearchSource.endpoint).mock(
        return_value=httpx.Response(
            200, json=json.loads((DATA / "brave" / "web_search.json").read_text())
        )
    )
    client = http_client_for_tests(tmp_path)
    client.resolver = public
    engine = BraveSearchSource(api_key="unit-test-key-7777", http=client, name="web")
    found = await engine.search(Query(text="Apollo 11"))
    assert found and {d.source for d in found} == {"brave"}
