"""Issue 22, part 4: nothing below `veracity.runtime` reads the environment's settings.

The layers below take their paths (home, indexes, memory, checkpoints, model and HTTP
caches) and their model as arguments, and say clearly when one is missing; the
composition root reads ``VERACITY_*`` and passes them down. (The import contract keeps
the count of ``settings()`` calls below ``runtime`` at 0.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from veracity.core.config import LLMConfig, RunConfig
from veracity.core.errors import MethodConfigError, ModelNotAvailable
from veracity.core.paths import HomePaths
from veracity.core.types import Document
from veracity.evidence.memory import EvidenceMemory
from veracity.llm.embedded import EmbeddedLLM
from veracity.llm.factory import build_cache
from veracity.methods.base import load_method
from veracity.methods.checkpoints import CheckpointError, checkpoint_folder
from veracity.methods.mermaid import MermaidMethod
from veracity.retrieval.local.corpus import LocalCorpus, build_local_corpus
from veracity.retrieval.local.index import IndexBuildError
from veracity.retrieval.transport.http import HttpClient
from veracity.runtime import build_run, build_sources, resolve_spec
from veracity.runtime.home import home_paths
from veracity.testing import InMemorySource, ScriptedLLM

DOCS = [Document(id=f"d{i}", text=f"aspirin lowers stroke risk, study {i}") for i in range(3)]


def test_a_method_is_never_built_without_its_model():
    with pytest.raises(MethodConfigError, match="direct: a method needs its model"):
        load_method("direct")
    assert load_method("direct", llm=ScriptedLLM()).llm is not None


def test_the_runtime_hands_a_method_the_home_and_a_model_builder(_isolated_home):
    run = build_run(resolve_spec(RunConfig(method="direct")), llm=ScriptedLLM())
    assert run.method.home == home_paths()
    assert run.method.home.home == _isolated_home
    assert run.method.model_builder is not None


def test_the_lower_layers_ask_for_paths_instead_of_reading_the_home(tmp_path):
    with pytest.raises(ValueError, match="needs a path"):
        EvidenceMemory(embedder=None)
    with pytest.raises(IndexBuildError, match="'tiny' is a name"):
        LocalCorpus("tiny")
    with pytest.raises(CheckpointError, match="'liar' is a name"):
        checkpoint_folder("toe", "liar", None)
    with pytest.raises(ModelNotAvailable, match="catalog model"):
        EmbeddedLLM("smollm2-135m")
    assert HttpClient().cache is None  # no home: nothing kept on disk
    assert build_cache(LLMConfig()) is None
    # paths given: each lands where it is told
    assert checkpoint_folder("toe", "liar", tmp_path) == tmp_path / "toe" / "liar"
    assert EmbeddedLLM("smollm2-135m", models_dir=tmp_path).models_dir == tmp_path
    assert LocalCorpus("tiny", indexes_dir=tmp_path).folder == tmp_path / "tiny"


def test_mermaid_opens_its_default_memory_under_the_home_it_is_given(tmp_path):
    def mermaid(home: HomePaths | None) -> MermaidMethod:
        config = {"tool_transport": "inprocess", "memory": {"embedder": None}}
        wiki = {"wiki": InMemorySource(DOCS, name="wiki")}
        return MermaidMethod(llm=ScriptedLLM(), config=config, sources=wiki, home=home)

    with pytest.raises(MethodConfigError, match="evidence memory needs the home folder"):
        mermaid(None).memory()
    memory = mermaid(HomePaths(home=tmp_path)).memory()
    assert memory is not None and memory.path == tmp_path / "memory" / "evidence.sqlite"


def test_the_runtime_finds_a_named_local_index_under_the_home(_isolated_home):
    build_local_corpus("tiny", DOCS, mode="bm25", indexes_dir=home_paths().indexes)
    config = RunConfig(method="rag", sources={"web": {"type": "local", "index": "tiny"}})
    source = build_sources(resolve_spec(config))["web"]
    inner = getattr(source, "inner", source)
    assert Path(inner.folder) == _isolated_home / "indexes" / "tiny"
