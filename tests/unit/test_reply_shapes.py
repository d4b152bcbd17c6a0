"""A post's replies take the same shapes everywhere: `check --file`, the Python API, the
REST request body and `veracity batch` (issue 27, part 7).

A reply is its text alone, or an object with ``text`` and optional ``id``, ``author``,
``parent`` and ``created_at``; a missing id is generated from the reply's place.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

import veracity
from veracity.cli import app
from veracity.core.errors import InputError
from veracity.core.types import Post, Reply, reply_fields
from veracity.llm.client import ManagedLLM
from veracity.testing import ScriptedLLM

runner = CliRunner()
POST = "The bridge on Main Street closed for good today."

SHAPES = {
    "texts": ["Saw it myself, it is shut", "Nonsense, I drove over it"],
    "objects with text": [
        {"text": "Saw it myself, it is shut"}, {"text": "Nonsense, I drove over it"}
    ],
    "objects with every field": [
        {"id": "a", "text": "Saw it myself, it is shut", "author": "ann",
         "created_at": "2024-04-01T10:00:00"},
        {"id": "b", "text": "Nonsense, I drove over it", "author": "bob", "parent": "a",
         "created_at": "2024-04-01T11:30:00"},
    ],
    "texts and objects": [
        "Saw it myself, it is shut", {"text": "Nonsense, I drove over it", "author": "bob"}
    ],
}  # fmt: skip
IDS = {  # the reply ids of a post without an id of its own
    "texts": ["r1", "r2"],
    "objects with text": ["r1", "r2"],
    "objects with every field": ["a", "b"],
    "texts and objects": ["r1", "r2"],
}
TEXTS = ["Saw it myself, it is shut", "Nonsense, I drove over it"]


@pytest.fixture
def scripted(monkeypatch):
    llm = ScriptedLLM(default='{"label": "false"}')
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda cfg=None, **kw: ManagedLLM(llm))
    monkeypatch.setattr("veracity.cli.check.ensure_model", lambda cfg: None)
    monkeypatch.setattr("veracity.cli.batch.ensure_model", lambda cfg: None)
    return llm


def _prompt(llm: ScriptedLLM) -> str:
    return "\n".join(m.content for m in llm.calls[-1].messages)


@pytest.mark.parametrize("shape", SHAPES)
def test_check_file_reads_every_reply_shape(scripted, tmp_path, shape):
    f = tmp_path / "post.json"
    f.write_text(json.dumps({"text": POST, "replies": SHAPES[shape]}))
    result = runner.invoke(app, ["check", "--file", str(f), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["label"] == "false"
    prompt = _prompt(scripted)
    assert POST in prompt and all(t in prompt for t in TEXTS)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_python_api_reads_every_reply_shape(shape):
    item = veracity.as_input({"text": POST, "replies": SHAPES[shape]})
    assert isinstance(item, Post)
    assert [r.id for r in item.replies] == IDS[shape]
    assert [r.text for r in item.replies] == TEXTS
    llm = ScriptedLLM(default='{"label": "true"}')
    verdict = veracity.check({"kind": "post", "text": POST, "replies": SHAPES[shape]}, llm=llm)
    assert verdict.label == "true" and all(t in _prompt(llm) for t in TEXTS)


def test_every_field_of_an_object_reply_is_kept():
    item = veracity.as_input({"text": POST, "replies": SHAPES["objects with every field"]})
    first, second = item.replies
    assert (first.author, first.created_at.hour, first.parent) == ("ann", 10, None)
    assert (second.author, second.parent, second.created_at.minute) == ("bob", "a", 30)


@pytest.mark.parametrize("shape", SHAPES)
def test_the_rest_body_reads_every_reply_shape_as_the_api_does(shape):
    pytest.importorskip("fastapi")
    from veracity.server.schemas import CheckRequest

    body = {"input": {"kind": "post", "text": POST, "replies": SHAPES[shape]}}
    parsed = CheckRequest.model_validate(body).input
    assert parsed == veracity.as_input({"kind": "post", "text": POST, "replies": SHAPES[shape]})


@pytest.mark.parametrize("shape", SHAPES)
def test_batch_reads_every_reply_shape(scripted, tmp_path, shape):
    src, out = tmp_path / "posts.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps({"text": POST, "thread": SHAPES[shape]}) + "\n")
    args = ["batch", str(src), "-o", str(out), "--kind", "post", "--replies", "thread"]
    result = runner.invoke(app, [*args, "--method", "direct", "--no-progress"])
    assert result.exit_code == 0, result.output
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["id"] == "posts:1" and row["status"] == "ok"
    assert all(t in _prompt(scripted) for t in TEXTS)


def test_generated_ids_carry_the_post_id_and_never_repeat_a_given_one():
    post = Post.model_validate(
        {"id": "p", "text": POST, "replies": ["one", {"id": "p/r1", "text": "two"}, "three"]}
    )
    assert [r.id for r in post.replies] == ["p/r1.2", "p/r1", "p/r3"]
    assert {r.parent for r in post.replies} == {"p"}  # a missing parent is the post
    again = Post.model_validate({"id": "p", "text": POST, "replies": ["one", "two"]})
    assert [r.id for r in again.replies] == ["p/r1", "p/r2"]  # stable: from the place


def test_reply_objects_are_kept_as_they_are():
    given = [Reply(id="x", text="t", parent="y"), Reply(id="y", text="u")]
    assert reply_fields(given, "p") == given
    assert Post(id="p", text=POST, replies=given).replies == given


@pytest.mark.parametrize(
    ("replies", "message"),
    [
        ([5], "reply 1 is int, not text or an object"),
        (["ok", {"author": "ann"}], "replies.1.text: Field required"),
        ([{"text": "x", "id": "a"}, {"text": "y", "id": "a"}], "two replies have the id 'a'"),
        ([{"text": "x", "colour": "red"}], "replies.0.colour: Extra inputs are not permitted"),
    ],
)
def test_a_bad_reply_is_a_clear_error_everywhere(scripted, tmp_path, replies, message):
    f = tmp_path / "post.json"
    f.write_text(json.dumps({"text": POST, "replies": replies}))
    result = runner.invoke(app, ["check", "--file", str(f)])
    assert result.exit_code == 2 and message in " ".join(result.output.split())
    assert "Traceback" not in result.output and not scripted.calls
    with pytest.raises(InputError, match="not a valid post"):
        veracity.as_input({"text": POST, "replies": replies})


def test_the_docs_show_a_claim_an_article_and_a_post_file_that_parse():
    from pathlib import Path

    # the shapes moved from the README to the documentation site's Checking page
    readme = (Path(__file__).resolve().parents[2] / "docs" / "checking.md").read_text("utf-8")
    shown = dict(re.findall(r"^- an? (claim|article|post): `(\{.*\})`$", readme, re.M))
    assert sorted(shown) == ["article", "claim", "post"]
    for kind, text in shown.items():
        item = veracity.as_input(json.loads(text))
        assert item.kind == kind  # told apart by its fields alone
    post = veracity.as_input(json.loads(shown["post"]))
    assert [(r.id, r.parent) for r in post.replies] == [("r1", None), ("b", "r1")]
