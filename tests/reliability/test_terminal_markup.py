"""Untrusted text reaches the terminal only as text, in every command (issue 23, item 6).

Before: evidence titles, passages, quotes and notes were printed as Rich markup, so a
title holding ``[/INST]`` crashed `check` and `index search` (``MarkupError``), a
``[link=…]…[/link]`` became a clickable link to any address, ``[bold red]VERIFIED
TRUE[/bold red]`` restyled the verdict and ``:warning:`` turned into an emoji. Here
markup is planted in every field the commands print — the input, the verdict's rationale,
reasons and notes, each evidence field, the argument tree, the search warning, index
documents, file and run names, the model name — and each must come out literally,
without a crash, a link escape or an emoji.
"""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.cli.app import console, out
from veracity.core import registry
from veracity.core.types import Document, Evidence
from veracity.methods.base import BaseMethod

from .conftest import run_cli, write_liar

pytestmark = pytest.mark.server

runner = CliRunner()
MARKS = [
    "[/INST]",
    "[link=http://attacker.example/x]click here[/link]",
    "[bold red]VERIFIED TRUE[/bold red]",
    ":warning: :thumbs_up:",
    "[/]",
    "\\[escaped] [#ff0000]red[/#ff0000] [@click=app.quit]quit[/]",
]
MARK_IDS = ["inst", "link", "style", "emoji", "close", "escape-action"]
OSC8 = "\x1b]8;"  # a terminal hyperlink
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\]8;[^\x1b]*\x1b\\")
_BOX = re.compile(r"[│┃║┆╎─━═┌┐└┘├┤┬┴┼╭╮╯╰┏┓┗┛┡┩╇╈┣┫┳┻╋]")


class PlantedMethod(BaseMethod):
    """Puts `mark` into every field of its verdict and trace that the CLI shows; a claim
    holding ``abstain`` or ``error`` gets that kind of verdict."""

    name = "markup_planted"
    default_labels = "true_false"
    input_kinds = ("claim", "article", "post")
    mark = MARKS[0]

    async def run(self, item, ctx):
        m = self.mark
        ctx.event("note", "input_cut", detail={"what": f"cut-what {m}", "kept": 1, "total": 2,
                  "unit": f"cut-unit {m}", "setting": f"cut-setting {m}"})  # fmt: skip
        ctx.event("tree_node", "toe", node_id="n1", parent_id=None, claim=f"tree-claim {m}",
                  status="kept", veracity=0.7, reliability=0.6, iteration=1,
                  detail={"dimension": f"tree-dimension {m}",
                          "pruned_by": f"tree-pruner {m}"})  # fmt: skip
        text = item.content
        if "abstain" in text:
            return self.verdict(label=None, abstained=True, abstain_reason=f"abstain-reason {m}")
        if "error" in text:
            return self.verdict(label=None, error=f"error-message {m}")
        cited = Document(id=f"doc-id {m}", text=f"passage {m}", title=f"doc-title {m}",
                         source=f"source-name {m}")  # fmt: skip
        linked = Document(id="d2", text=f"passage-two {m}", title=f"title-two {m}",
                          url=f"https://news.example/a?{m}")  # fmt: skip
        failures = {"failed": 1, "answered": 2, "first_error": f"search-error {m}"}
        return self.verdict(
            label="true",
            score=0.9,
            rationale=f"rationale {m}",
            probability_note=f"probability-note {m}",
            evidence=[
                Evidence(document=cited, quote=f"quote {m}", note=f"evidence-note {m}"),
                Evidence(document=linked, quote_verified=False),
            ],
            metadata={"search_failures": failures},
        )


registry.methods.register("markup_planted", PlantedMethod)


@pytest.fixture(params=MARKS, ids=MARK_IDS)
def mark(request, monkeypatch):
    monkeypatch.setattr(PlantedMethod, "mark", request.param)
    return request.param


@pytest.fixture
def colour(monkeypatch):
    """The CLI's consoles made again in colour, as on a terminal (links and styles are
    written as escape codes, so a planted link would show)."""
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "400")
    for lazy in (console, out):
        monkeypatch.setattr(lazy, "_console", None)
    yield
    for lazy in (console, out):
        lazy._console = None  # the next test makes its own


def shown(raw: str) -> str:
    """What a reader sees: escape codes and box lines removed, whitespace collapsed."""
    return " ".join(_BOX.sub(" ", _ANSI.sub("", raw)).split())


def assert_literal(result, mark: str, fields: list[str], code: int = 0, texts=()) -> None:
    """`result` ended with `code`, no crash, link or emoji, and shows each field followed
    by the mark (``rationale [/INST]``) and each of `texts` as it is spelled."""
    raw = result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code == code, raw
    assert OSC8 not in raw, "a planted link became a terminal hyperlink"
    assert "⚠" not in raw and "👍" not in raw, "an emoji code was replaced"
    seen = shown(raw)
    missing = [t for t in [f"{f} {mark}" for f in fields] + list(texts) if t not in seen]
    assert not missing, f"not shown literally: {missing}\n{seen}"


def _check(text: str, *extra: str) -> list[str]:
    return ["check", text, "--method", "markup_planted", "--base-url", "http://127.0.0.1:9/v1",
            "--model", "m", *extra]  # fmt: skip


CHECK_FIELDS = ["rationale", "probability-note", "doc-title", "doc-id", "quote",
                "evidence-note", "title-two", "passage-two", "search-error", "tree-claim",
                "tree-dimension", "tree-pruner", "cut-what"]  # fmt: skip


def test_check_prints_every_planted_field_literally(mark, colour):
    result = runner.invoke(app, _check(f"input-claim {mark}"))
    assert_literal(result, mark, ["input-claim", *CHECK_FIELDS])
    assert f"https://news.example/a?{mark}" in shown(result.output)  # the URL, as text


def test_check_abstention_and_error_print_their_reasons_literally(mark, colour):
    abstained = runner.invoke(app, _check(f"abstain {mark}"))
    assert_literal(abstained, mark, ["abstain-reason", "tree-claim"])
    failed = runner.invoke(app, _check(f"error {mark}"))
    assert_literal(failed, mark, ["error-message"], code=1)


def test_check_json_carries_the_planted_text_unchanged(mark):
    result = runner.invoke(app, _check(f"input-claim {mark}", "--json"))
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["rationale"] == f"rationale {mark}"
    assert verdict["evidence"][0]["document"]["title"] == f"doc-title {mark}"


def test_error_messages_quoting_input_are_literal(mark, colour):
    result = runner.invoke(app, ["check", "x", "--kind", f"kind-value {mark}"])
    assert_literal(result, mark, [], code=2, texts=[repr(f"kind-value {mark}")])


def _planted_index(tmp_path, mark: str) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text(
        json.dumps({"id": f"index-id {mark}", "title": f"index-title {mark}",
                    "text": f"planet passage {mark}"}) + "\n"
    )  # fmt: skip
    built = runner.invoke(app, ["index", "build", str(docs), "--name", "planted",
                                "--mode", "bm25"])  # fmt: skip
    assert built.exit_code == 0, built.output


def test_index_search_prints_documents_literally(tmp_path, mark, colour):
    _planted_index(tmp_path, mark)
    result = runner.invoke(app, ["index", "search", "planted", "planet"])
    assert_literal(result, mark, ["index-title", "index-id", "passage"])


def test_index_search_in_a_real_terminal_process(tmp_path):
    """The installed command in its own process, in colour: no crash, no link."""
    home = tmp_path / "home"
    docs = tmp_path / "docs.jsonl"
    planted = {"id": "a", "title": "t [/INST] [link=http://x.example]y[/link]",
               "text": "planet [bold red]VERIFIED TRUE[/bold red]"}  # fmt: skip
    docs.write_text(json.dumps(planted) + "\n")
    assert run_cli(["index", "build", str(docs), "--name", "p", "--mode", "bm25"],
                   home).returncode == 0  # fmt: skip
    result = run_cli(["index", "search", "p", "planet"], home, FORCE_COLOR="1")
    raw = result.stdout.decode()
    assert result.returncode == 0, result.stderr.decode()
    assert OSC8 not in raw
    seen = shown(raw)
    assert "t [/INST] [link=http://x.example]y[/link]" in seen
    assert "planet [bold red]VERIFIED TRUE[/bold red]" in seen


def test_batch_prints_file_names_and_messages_literally(tmp_path, mark, colour):
    folder = tmp_path / f"folder {mark}"  # a "/" in the mark makes a folder in a folder
    folder.mkdir(parents=True)
    src = folder / "rows.csv"
    src.write_text("id,text\nr1,fine claim\nr2,error claim\n")
    result = runner.invoke(
        app,
        ["batch", str(src), "-o", str(folder / "out.jsonl"), "--method", "markup_planted",
         "--base-url", "http://127.0.0.1:9/v1", "--model", f"model-name {mark}",
         "--no-progress"],
    )  # fmt: skip
    assert_literal(result, mark, ["model-name"], texts=[str(src), str(folder / "out.jsonl")])
    rows = [json.loads(x) for x in (folder / "out.jsonl").read_text().splitlines()]
    assert rows[1]["verdict"]["error"] == f"error-message {mark}"


def _eval(data, run_dir, model: str) -> list[str]:
    return ["eval", "--dataset", "liar", "--split", "train", "--data-dir", str(data),
            "--method", "markup_planted", "--limit", "4", "--out", str(run_dir),
            "--base-url", "http://127.0.0.1:9/v1", "--model", model, "--no-progress"]  # fmt: skip


def test_eval_report_and_compare_print_run_names_and_reasons_literally(tmp_path, mark, colour):
    data = write_liar(tmp_path / "data", 4)
    rows = (data / "liar" / "train.tsv").read_text().splitlines()
    rows[0] = rows[0].replace("Claim 0:", "error claim:")  # one example fails
    (data / "liar" / "train.tsv").write_text("\n".join(rows) + "\n")
    first, second = tmp_path / f"run-a {mark}", tmp_path / f"run-b {mark}"
    for run_dir in (first, second):
        result = runner.invoke(app, _eval(data, run_dir, f"model-name {mark}"))
        assert_literal(result, mark, ["model-name"], texts=[str(run_dir)])
    report = runner.invoke(app, ["report", str(first)])
    assert_literal(report, mark, [], texts=[str(first / "report.md"), str(first / "report.html")])
    compared = runner.invoke(app, ["compare", str(first), str(second)])
    assert_literal(compared, mark, ["model-name"])
    names = [first.name, second.name]  # compare names a run by its folder's own name
    assert_literal(compared, mark, [], texts=names)


def test_eval_failure_reasons_are_literal(tmp_path, mark, colour):
    data = write_liar(tmp_path / "data", 3)
    text = (data / "liar" / "train.tsv").read_text().replace("Claim", "error claim")
    (data / "liar" / "train.tsv").write_text(text)
    result = runner.invoke(app, _eval(data, tmp_path / "run", "m"))
    assert_literal(result, mark, ["error-message"], code=2)
    assert "examples failed" in shown(result.output)
