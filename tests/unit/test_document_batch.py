"""`veracity batch --kind document` and the documents' extraction flags on `veracity check`:
a document per row, checked claim by claim with the scripted model and a local corpus;
failed rows recorded, a rerun resumes; the flags change what the extractor does."""

from __future__ import annotations

import csv
import json
import re
import shutil
from pathlib import Path

import httpx
import pytest
import respx
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.types import Document
from veracity.evaluation.batch import summarize
from veracity.evaluation.store import PredictionRecord
from veracity.llm.client import ManagedLLM
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime.home import home_paths, user_http_client
from veracity.testing import ScriptedLLM
from veracity.testing.sources import table_resolver

CURIE = (
    "Marie Curie was born in Warsaw in 1867. She won three Nobel Prizes. "
    "I love her story [bold red]really[/]."
)
EINSTEIN = "Albert Einstein was born in Ulm. He won the Nobel Prize and moved to Princeton."
PASSAGES = [
    Document(id="p1", title="Marie Curie", text="Marie Curie was born in Warsaw in 1867."),
    Document(id="p2", title="Nobel Prizes", text="Curie won two Nobel Prizes, in 1903 and 1911."),
    Document(id="p3", title="Einstein", text="Albert Einstein was born in Ulm in 1879."),
    Document(id="p4", title="Princeton", text="Einstein moved to Princeton in 1933."),
]
PUBLIC = "93.184.216.34"
RESOLVED = {"She won three Nobel Prizes.": "Marie Curie won three Nobel Prizes."}


def _between(tag: str, request) -> list[str]:
    prompt = request.messages[-1].content
    return re.findall(rf"<{tag}[^>]*>\n(.*?)\n</{tag}>", prompt, re.S)


def _categories(request) -> str:
    claims = _between("claim", request)
    return json.dumps({"claims": ["opinion" if "love" in c else "factual" for c in claims]})


def _decompose(request) -> str:
    """Splits a sentence at " and " (so decomposition makes a difference)."""
    sentence = _between("sentence", request)[0]
    return json.dumps({"claims": [p.strip(" .") + "." for p in sentence.split(" and ")]})


def _rewrite(request) -> str:
    return json.dumps({"claims": [RESOLVED.get(c, c) for c in _between("claim", request)]})


def _window(request) -> str:
    """A window of numbered sentences, each split as `_decompose` splits it, rewritten as
    `_rewrite` when the prompt asks for self-contained claims, categorised as
    `_categories` when it asks for categories."""
    system = request.messages[0].content
    rewrite, categories = "never sees the passage" in system, "opinion:" in system
    claims = []
    for k, sentence in enumerate(_between("sentence", request), 1):
        for part in sentence.split(" and "):
            text = part.strip(" .") + "."
            item = {"sentences": [k], "text": RESOLVED.get(text, text) if rewrite else text}
            if categories:
                item["category"] = "opinion" if "love" in text else "factual"
            claims.append(item)
    return json.dumps({"claims": claims})


def scripted() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(".*", _window, tag="claims:window")
    llm.on(".*", _decompose, tag="claims:decompose")
    llm.on(".*", _rewrite, tag="claims:decontextualise")
    llm.on(".*", _categories, tag="claims:checkworthy")
    llm.on("three Nobel", '{"cited": [1], "label": "false"}', tag="rag")
    llm.on(".*", '{"cited": [1], "label": "true"}', tag="rag")
    llm.on(".*", json.dumps({"correction": "She won two Nobel Prizes.", "evidence": [1]}),
           tag="correct")  # fmt: skip
    return llm


@pytest.fixture
def llm(monkeypatch):
    """Every model the commands build is this scripted one; the local corpus is built."""
    build_local_corpus("curie", PASSAGES, mode="bm25", indexes_dir=home_paths().indexes)
    model = scripted()
    monkeypatch.setattr("veracity.llm.factory.build_llm", lambda *a, **kw: ManagedLLM(model))
    monkeypatch.setattr("veracity.cli.common.ensure_model", lambda cfg: None)
    monkeypatch.setattr("veracity.cli.batch.ensure_model", lambda cfg: None)
    return model


def invoke(*args: str, stdin: str | None = None):
    argv = [*args, "--source", "corpus=local:curie"]
    return CliRunner().invoke(app, argv, input=stdin, env={"COLUMNS": "300"})


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


# ---------------------------------------------------------------------- batch


def test_a_document_per_row_a_failed_row_recorded_and_a_rerun_resumes(llm, tmp_path):
    src, out = tmp_path / "docs.jsonl", tmp_path / "out.jsonl"
    _write_jsonl(src, [{"id": "curie", "text": CURIE}, {"id": "blank", "text": "   "}])
    args = ["batch", str(src), "--kind", "document", "--out", str(out), "--no-progress"]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    curie, blank = _lines(out)
    assert (curie["id"], curie["status"], blank["status"]) == ("curie", "ok", "error")
    assert "empty" in blank["error"] and blank["report"] is None
    report = curie["report"]
    nobel = next(c for c in report["claims"] if c["support"] == "refuted")
    assert nobel["claim"]["text"] == "Marie Curie won three Nobel Prizes."
    start, end = nobel["claim"]["spans"][0]
    assert report["document"]["text"][start:end] == "She won three Nobel Prizes."
    assert report["summary"]["factuality"] == 0.5 and report["method"] == "rag"
    assert "documents checked │ 1" in " ".join(result.output.split())
    kept = [{k: v for k, v in r.items() if k != "error"} for r in (curie, blank)]
    summary = summarize([PredictionRecord.model_validate(r) for r in kept])
    totals = summary.documents
    assert (summary.rows, summary.statuses["error"], totals.documents, totals.claims) == (
        2,
        1,
        1,
        len(report["claims"]),
    )
    assert (totals.checked, totals.supported, totals.factuality) == (2, 1, 0.5)
    assert summary.llm_calls == report["usage"]["llm_calls"] > 0
    calls = len(llm.calls)

    _write_jsonl(src, [{"id": "curie", "text": CURIE}, {"id": "blank", "text": "   "},
                       {"id": "einstein", "text": EINSTEIN}])  # fmt: skip
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert [r["id"] for r in _lines(out)] == ["curie", "blank", "einstein"]
    einstein = _lines(out)[2]["report"]
    assert einstein["summary"]["supported"] == 3  # "born in Ulm", and the second sentence split
    rag_again = [r for r in llm.calls[calls:] if r.tag == "rag"]
    assert len(rag_again) == 3, "a finished row was checked again"
    run = tmp_path / "out.run"
    assert (run / "predictions.jsonl").is_file() and not (run / "documents.jsonl").exists()


def test_a_csv_of_urls_fetches_each_page_through_the_guarded_client(llm, tmp_path):
    src, out = tmp_path / "pages.csv", tmp_path / "out.jsonl"
    with src.open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["page", "address"])
        writer.writerow(["a", "https://news.example/curie"])
        writer.writerow(["b", "http://intranet.example/secret"])
        writer.writerow(["c", ""])
    user_http_client().resolver = table_resolver(
        {"news.example": [PUBLIC], "intranet.example": ["10.0.0.7"]}
    )
    page = f"<html><head><title>Curie</title></head><body><article><p>{CURIE}</p></article>"
    with respx.mock(assert_all_called=True) as router:
        router.get(f"https://{PUBLIC}/curie", headers={"host": "news.example"}).mock(
            return_value=httpx.Response(200, text=page, headers={"content-type": "text/html"})
        )
        result = invoke("batch", str(src), "--kind", "document", "--url", "address",
                        "--id", "page", "--out", str(out), "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    a, b, c = _lines(out)
    assert a["status"] == "ok" and a["report"]["document"]["url"] == "https://news.example/curie"
    assert a["report"]["summary"]["refuted"] == 1
    assert b["status"] == "error" and "intranet.example" in b["error"]
    assert c["status"] == "error" and "no text and no URL" in c["error"]


def test_retry_errors_checks_the_failed_rows_again(llm, tmp_path):
    src, out = tmp_path / "docs.jsonl", tmp_path / "out.jsonl"
    _write_jsonl(src, [{"id": "x", "text": EINSTEIN}])
    broken = ScriptedLLM()  # the decomposition reply is not JSON: extraction fails
    broken.on(".*", "not json", tag="claims")
    llm._rules[:0] = broken._rules
    args = ["batch", str(src), "--kind", "document", "--out", str(out), "--no-progress"]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert _lines(out)[0]["status"] == "error"
    assert "claim extraction failed" in _lines(out)[0]["error"]
    del llm._rules[: len(broken._rules)]
    assert _lines(out)[0]["status"] == "error"  # a plain rerun keeps the recorded error
    again = invoke(*args, "--retry-errors")
    assert again.exit_code == 0, again.output
    assert _lines(out)[0]["status"] == "ok"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--max-sentences", "0"), "--max-sentences"),
        (("--dedupe-threshold", "1.5"), "--dedupe-threshold"),
        (("--method", "s2mad"), "pick a claim method"),
        (("--workers", "2"), "--workers go with --engine ray"),  # documents take engines
        (("--speaker", "who"), "--speaker does not apply to documents"),
    ],
)
def test_bad_document_batch_options_exit_2(llm, tmp_path, extra, message):
    src = tmp_path / "docs.jsonl"
    _write_jsonl(src, [{"text": CURIE}])
    result = invoke("batch", str(src), "--kind", "document", "--out", str(tmp_path / "o.jsonl"),
                    "--no-progress", *extra)  # fmt: skip
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output and llm.calls == []


def test_document_flags_without_kind_document_are_refused(llm, tmp_path):
    src = tmp_path / "claims.jsonl"
    _write_jsonl(src, [{"text": "a claim"}])
    result = invoke("batch", str(src), "--out", str(tmp_path / "o.jsonl"), "--no-decompose")
    assert result.exit_code == 2
    assert "--no-decompose applies to documents: add --kind document" in result.output


def test_a_claim_run_directory_is_not_resumed_as_documents(llm, tmp_path):
    src, out = tmp_path / "docs.jsonl", tmp_path / "out.jsonl"
    _write_jsonl(src, [{"text": EINSTEIN}])
    first = invoke("batch", str(src), "--kind", "document", "--out", str(out), "--no-progress")
    assert first.exit_code == 0, first.output
    changed = invoke("batch", str(src), "--kind", "document", "--out", str(out),
                     "--no-progress", "--no-decompose")  # fmt: skip
    assert changed.exit_code == 2
    assert "different extraction settings" in " ".join(changed.output.split())


# ---------------------------------------------------------------------- check's flags


def _claim_texts(result) -> list[str]:
    assert result.exit_code == 0, result.output
    return [c["claim"]["text"] for c in json.loads(result.stdout)["claims"]]


def test_no_decompose_gives_one_claim_per_sentence(llm):
    split = _claim_texts(invoke("check", "--kind", "document", "--json", EINSTEIN))
    born = "Albert Einstein was born in Ulm."
    assert split == [born, "He won the Nobel Prize.", "moved to Princeton."]
    before = len(llm.calls)
    whole = _claim_texts(invoke("check", "--kind", "document", "--json", "--no-decompose",
                                EINSTEIN))  # fmt: skip
    assert whole == [born, "He won the Nobel Prize and moved to Princeton."]
    assert not any(r.tag.startswith(("claims:decompose", "claims:window"))
                   for r in llm.calls[before:])  # fmt: skip


def test_the_other_extraction_flags_change_the_extraction(llm):
    flags = ("--no-decontextualise", "--no-checkworthiness", "--max-sentences", "2")
    before = len(llm.calls)
    texts = _claim_texts(invoke("check", "--kind", "document", "--json", *flags, CURIE))
    assert "She won three Nobel Prizes." in texts  # not rewritten
    assert "I love her story [bold red]really[/]." not in texts  # the third sentence unread
    tags = {r.tag.split(":")[1] for r in llm.calls[before:] if r.tag.startswith("claims")}
    assert tags == {"window"}
    repeated = "Ulm is a city. Ulm is a small city."  # (a new name would keep both)
    merged = _claim_texts(invoke("check", "--kind", "document", "--json", "--no-decompose",
                                 "--dedupe-threshold", "0.5", repeated))  # fmt: skip
    assert merged == ["Ulm is a city."]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--kind", "document", "--max-sentences", "0", CURIE), "--max-sentences"),
        (("--kind", "document", "--dedupe-threshold", "0", CURIE), "--dedupe-threshold"),
        (("--no-decompose", CURIE), "--no-decompose applies to documents"),
    ],
)
def test_bad_extraction_flags_on_check_exit_2(llm, args, message):
    result = invoke("check", *args)
    assert result.exit_code == 2, result.output
    assert message in " ".join(result.output.split()) and "Traceback" not in result.output


def test_standard_input_streams_each_document_and_several_run_at_once(llm, tmp_path):
    rows = "".join(json.dumps({"text": t}) + "\n" for t in (CURIE, EINSTEIN, "  "))
    run_dir = tmp_path / "stream"
    args = ["batch", "-", "--kind", "document", "--run-dir", str(run_dir), "--no-progress",
            "--concurrency", "2"]  # fmt: skip
    result = invoke(*args, stdin=rows)
    assert result.exit_code == 0, result.output
    got = {r["id"]: r for r in map(json.loads, re.findall(r"^\{.*\}$", result.stdout, re.M))}
    assert sorted(got) == ["stdin:1", "stdin:2", "stdin:3"]
    assert got["stdin:1"]["report"]["summary"]["refuted"] == 1
    assert got["stdin:2"]["report"]["summary"]["supported"] == 3
    assert got["stdin:3"]["status"] == "error"
    calls = len(llm.calls)
    again = invoke(*args, stdin=rows)  # done rows are replayed from the run directory
    assert again.exit_code == 0, again.output
    assert len(re.findall(r"^\{.*\}$", again.stdout, re.M)) == 3 and len(llm.calls) == calls


def test_an_html_path_that_is_a_folder_is_refused_before_checking(llm, tmp_path):
    result = invoke("check", "--kind", "document", "--html", str(tmp_path), CURIE)
    assert result.exit_code == 2, result.output
    assert str(tmp_path) in " ".join(result.output.split()) and llm.calls == []


def test_title_and_date_columns_and_a_torn_last_record(llm, tmp_path):
    src, out = tmp_path / "docs.jsonl", tmp_path / "out.jsonl"
    rows = [{"id": "e", "text": EINSTEIN, "headline": "Einstein <bio>", "day": "2021-05-04"},
            {"id": "bad-date", "text": EINSTEIN, "day": "someday"}]  # fmt: skip
    _write_jsonl(src, rows)
    args = ["batch", str(src), "--kind", "document", "--out", str(out), "--no-progress",
            "--title", "headline", "--date", "day"]  # fmt: skip
    assert invoke(*args).exit_code == 0
    first, bad = _lines(out)
    assert first["report"]["document"]["title"] == "Einstein <bio>"
    assert first["report"]["document"]["published_at"].startswith("2021-05-04")
    assert bad["status"] == "error" and "someday" in bad["error"]
    records = tmp_path / "out.run" / "predictions.jsonl"
    whole = records.read_text(encoding="utf-8").splitlines(keepends=True)
    records.write_text(whole[0] + whole[1][:40], encoding="utf-8")  # killed mid-write
    again = invoke(*args)
    assert again.exit_code == 0, again.output
    assert [r["id"] for r in _lines(out)] == ["e", "bad-date"]
    assert all(line.endswith("}\n") for line in records.read_text().splitlines(keepends=True))


OLD_RUN = Path(__file__).parents[1] / "data" / "old_document_batch_f77460b"


def test_a_document_batch_written_before_the_one_road_resumes_and_reports(llm, tmp_path):
    """A run directory whose records are in documents.jsonl (veracity at f77460b) is adopted:
    its rows are not checked again, their reports reach the results and the summary, and a
    new row is checked beside them."""
    run = tmp_path / "out.run"
    shutil.copytree(OLD_RUN, run, ignore=shutil.ignore_patterns("README.md"))
    src, out = tmp_path / "docs.jsonl", tmp_path / "out.jsonl"
    _write_jsonl(src, [{"id": "curie", "text": CURIE}, {"id": "blank", "text": "   "},
                       {"id": "einstein", "text": EINSTEIN}])  # fmt: skip
    result = invoke("batch", str(src), "--kind", "document", "--out", str(out), "--no-progress")
    assert result.exit_code == 0, result.output
    curie, blank, einstein = _lines(out)
    assert curie["status"] == "ok" and curie["report"]["summary"]["factuality"] == 0.5
    assert curie["report"]["summary"]["refuted"] == 1
    assert blank["status"] == "error" and "empty" in blank["error"]
    assert einstein["status"] == "ok" and einstein["report"]["summary"]["supported"] == 3
    rag = [r for r in llm.calls if r.tag == "rag"]
    assert len(rag) == 3, "a row of the old run was checked again"
    text = " ".join(result.output.split())
    assert "documents checked │ 2" in text and "supported / refuted / mixed │ 4 / 1 / 0" in text
    assert not (run / "documents.jsonl").exists() and (run / "documents.jsonl.adopted").is_file()
    again = invoke("batch", str(src), "--kind", "document", "--out", str(out), "--no-progress")
    assert again.exit_code == 0 and len([r for r in llm.calls if r.tag == "rag"]) == 3


def test_a_document_run_directory_is_not_resumed_as_claims(llm, tmp_path):
    run = tmp_path / "out.run"
    shutil.copytree(OLD_RUN, run, ignore=shutil.ignore_patterns("README.md"))
    src = tmp_path / "claims.jsonl"
    _write_jsonl(src, [{"text": "Marie Curie was born in Warsaw."}])
    result = invoke("batch", str(src), "--out", str(tmp_path / "out.jsonl"), "--method", "rag",
                    "--labels", "true_false", "--no-progress")  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "holds a batch of documents" in " ".join(result.output.split())
    assert llm.calls == []
