"""Same defaults everywhere: mermaid and toe, given no source, search the default local
corpus offline (or live sources online) like rag, react, zofia and radar; without either
they say in one line which flags or command give them one."""

from __future__ import annotations

import pytest

from failing_sources import DOCS
from veracity.core.errors import ConfigError
from veracity.core.types import Claim
from veracity.methods.base import MethodConfigError
from veracity.methods.toe import ToEMethod
from veracity.retrieval.defaults import DEFAULT_INDEX
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import build_run, resolve_spec
from veracity.runtime.home import home_paths
from veracity.testing import InMemorySource
from veracity.testing.schema import schema_llm

MERMAID = {"tool_transport": "inprocess", "memory": "off", "max_steps": 2}
CLAIM = Claim(text="The town council approved the budget in March.")
LOCAL = {"web": {"type": "local", "index": DEFAULT_INDEX}}


def run_of(method: str, method_config: dict | None = None, *, online: bool = False):
    flags = {"method": method, "method_config": method_config}
    return build_run(resolve_spec(flags=flags, online=online), llm=schema_llm())


@pytest.mark.parametrize(("method", "config"), [("mermaid", MERMAID), ("mermaid_single", MERMAID),
                                                ("toe", None)])  # fmt: skip
async def test_offline_a_method_searches_the_default_index_by_itself(method, config):
    build_local_corpus(DEFAULT_INDEX, DOCS, mode="bm25", indexes_dir=home_paths().indexes)
    run = run_of(method, config)
    assert run.spec.sources == LOCAL
    assert any("default local corpus" in note for note in run.notes)
    assert any("runs without" in note and "Wikipedia" in note for note in run.notes)
    verdict = await run.check(CLAIM)
    assert verdict.error is None and verdict.usage.searches >= 1
    searched = {e.name for e in verdict.trace.of_kind("search")}
    assert searched == {"web"}
    found = {d["id"] for e in verdict.trace.of_kind("search") for d in e.data["results"]}
    assert found and found <= {"d1#0", "d2#0"}  # passages of the default index's documents


@pytest.mark.parametrize("method", ["mermaid", "toe"])
def test_online_a_method_gets_live_web_search_and_wikipedia(method):
    run = run_of(method, MERMAID if method == "mermaid" else None, online=True)
    assert run.spec.sources == {
        "web": {"type": "web", "engine": "auto"},
        "wikipedia": {"type": "wikipedia"},
    }


@pytest.mark.parametrize("method", ["mermaid", "toe"])
def test_offline_without_the_default_index_the_error_gives_the_commands(method):
    with pytest.raises(ConfigError) as caught:
        run_of(method, MERMAID if method == "mermaid" else None)
    message = str(caught.value)
    assert "veracity index build ./my-docs" in message and "--source web=local:INDEX" in message


def test_mermaid_with_its_own_mcp_servers_needs_no_default_sources():
    server = {"name": "facts", "command": "facts-server"}
    assert load_needs("mermaid", {"mcp_servers": [server]}) == []


def load_needs(method: str, config: dict) -> list:
    from veracity.core import registry

    return registry.methods.get(method).source_needs(config)


def test_toe_needs_follow_its_action_sources_and_ablations():
    names = [(n.name, n.kind) for n in load_needs("toe", {})]
    assert names == [("web", "search"), ("wikipedia", "encyclopedia")]
    renamed = {"action_sources": {"web": "ddg", "counter": "ddg", "wiki": "enc"}}
    assert [n.name for n in load_needs("toe", renamed)] == ["ddg", "enc"]
    ablated = {"masked_actions": ["web", "counter"]}
    assert [n.name for n in load_needs("toe", ablated)] == ["wikipedia"]


def test_toe_without_sources_names_the_flags_not_a_python_dict():
    with pytest.raises(MethodConfigError) as caught:
        ToEMethod(schema_llm(), {}, sources={"other": InMemorySource([], name="other")})
    message = str(caught.value)
    assert "{" not in message and "'" not in message and "\n" not in message
    assert "--source web=duckduckgo (web, counter)" in message
    assert "--source wikipedia=wikipedia (wiki)" in message
    assert "--source factcheck=local:INDEX (factcheck)" in message
    assert "veracity index build" in message
