"""`veracity index build|add|list|search` (hashing embedder, temporary VERACITY_HOME)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.runtime.environment import environment

runner = CliRunner()


@pytest.fixture
def docs(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "moon.md").write_text("# Moon landing\nApollo 11 landed on the moon in 1969.\n")
    (folder / "mars.html").write_text(
        "<html><head><title>Mars</title><style>p{}</style></head>"
        "<body><p>Mars is the red planet.</p><script>var x;</script></body></html>"
    )
    (folder / "notes.txt").write_text("Venus is the hottest planet.")
    (folder / ".hidden.txt").write_text("secret moon base")
    return folder


def _build(path, *extra):
    return runner.invoke(app, ["index", "build", str(path), "--name", "t", *extra])


def test_build_list_search(docs):
    result = _build(docs, "--mode", "hybrid", "--embedder", "hashing:64", "--chunk-words", "50")
    assert result.exit_code == 0, result.output
    assert "3 documents" in result.output
    listing = runner.invoke(app, ["index", "list"])
    assert listing.exit_code == 0 and "hashing:64" in listing.stdout and "t " in listing.stdout
    found = runner.invoke(app, ["index", "search", "t", "apollo moon", "--mode", "bm25"])
    assert found.exit_code == 0, found.output
    assert "moon.md" in found.stdout and "Moon landing" in found.stdout
    assert "secret" not in found.stdout


def test_search_json_and_keywords(docs):
    assert _build(docs, "--mode", "bm25").exit_code == 0
    result = runner.invoke(
        app, ["index", "search", "t", "--keyword", "planet", "--keyword", "red", "--json"]
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert [r["metadata"]["parent_id"] for r in rows] == ["mars.html"]
    assert "var x" not in rows[0]["text"] and rows[0]["title"] == "Mars"
    either = runner.invoke(
        app, ["index", "search", "t", "--keyword", "red", "--keyword", "hottest", "--any", "--json"]
    )
    assert len([x for x in either.stdout.splitlines() if x.strip()]) == 2


def test_add_jsonl_with_field_mapping(docs, tmp_path):
    assert _build(docs, "--mode", "bm25").exit_code == 0
    extra = tmp_path / "extra.jsonl"
    extra.write_text(
        json.dumps({"uid": "n1", "body": "Jupiter has many moons.", "when": "2020-01-02"}) + "\n"
    )
    result = runner.invoke(
        app, ["index", "add", "t", str(extra), "--fields", "id=uid,text=body,date=when"]
    )
    assert result.exit_code == 0, result.output
    assert "added 1 documents" in result.output
    again = runner.invoke(
        app, ["index", "add", "t", str(extra), "--fields", "id=uid,text=body,date=when"]
    )
    assert "skipped 1" in again.output
    hit = runner.invoke(
        app, ["index", "search", "t", "jupiter", "--before", "2021-01-01", "--json"]
    )
    assert json.loads(hit.stdout.splitlines()[0])["metadata"]["parent_id"] == "n1"
    none = runner.invoke(app, ["index", "search", "t", "jupiter", "--before", "2019-01-01"])
    assert none.exit_code == 0 and "no results" in none.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["index", "search", "nothing", "x"], "veracity index build"),
        (["index", "search", "t", ""], "needs text or at least one keyword"),
        (["index", "search", "t", "x", "--mode", "fuzzy"], "unknown mode"),
        (["index", "search", "t", "x", "--before", "2020-13-01"], "month"),
        (["index", "search", "t", "x", "--top-k", "0"], "greater than or equal to 1"),
        (["index", "search", "t", "x", "--mode", "dense"], "no embeddings"),
        (["index", "search", "bad name!", "x"], "bad index name"),
        (["index", "add", "nothing", "{docs}"], "veracity index build"),
        (["index", "build", "{docs}", "--name", "t"], "already exists"),
        (["index", "build", "/no/such/path", "--name", "u"], "no such file"),
        (["index", "build", "{docs}", "--name", "u", "--chunk-words", "0"], "chunking"),
        (["index", "build", "{docs}", "--name", "u", "--fields", "text"], "FIELD=COLUMN"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(docs, args, message):
    assert _build(docs, "--mode", "bm25").exit_code == 0
    args = [a.replace("{docs}", str(docs)) for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()), result.output


def test_missing_embedder_is_exit_3(docs):
    result = _build(docs, "--embedder", "/no/model")
    assert result.exit_code == 3
    assert "not a local directory" in " ".join(result.output.split())
    assert not (environment().indexes_dir / "t" / "manifest.json").exists()


def test_list_when_empty():
    result = runner.invoke(app, ["index", "list"])
    assert result.exit_code == 0 and "no indexes" in result.output


def test_build_from_a_registered_dataset(monkeypatch):
    from veracity.core.types import Document

    class Fake:
        def corpus(self, data_dir=None):
            yield Document(id="a1", text="Statins lower cholesterol.", title="Statins")

    monkeypatch.setattr("veracity.datasets.get_dataset", lambda name: Fake())
    result = runner.invoke(
        app, ["index", "build", "--dataset", "fake", "--name", "d", "--mode", "bm25"]
    )
    assert result.exit_code == 0, result.output
    hit = runner.invoke(app, ["index", "search", "d", "cholesterol", "--json"])
    assert json.loads(hit.stdout.splitlines()[0])["metadata"]["parent_id"] == "a1"


def test_build_needs_exactly_one_of_path_and_dataset(docs):
    neither = runner.invoke(app, ["index", "build", "--name", "d"])
    both = runner.invoke(app, ["index", "build", str(docs), "--dataset", "scifact", "--name", "d"])
    unknown = runner.invoke(app, ["index", "build", "--dataset", "no-such-set", "--name", "d"])
    for result in (neither, both, unknown):
        assert result.exit_code == 2, result.output
    assert "either PATH or --dataset" in neither.output
    assert "no-such-set" in unknown.output
