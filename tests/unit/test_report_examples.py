"""`veracity report` lists the examples: what was checked, gold, predicted, outcome and a
link to each one's reasons, evidence and trace; wrong ones first; untrusted text escaped."""

from __future__ import annotations

import asyncio
import json
import re

from _eval_fixtures import ToyDataset, config, scripted_llm

from veracity.core import registry
from veracity.core.types import Article, Claim, Document, Evidence, Post, Reply, Stance
from veracity.evaluation.report import write_report
from veracity.evaluation.report_examples import example_rows, md_cell
from veracity.evaluation.runner import prepare_run, run_session
from veracity.evaluation.store import PredictionRecord, input_summary

# id, gold, what the toy method does: say a label, crash or abstain
ROWS = [
    ("ok1", "SUPPORTED", "SUPPORTED"),
    ("bad<i>|1", "SUPPORTED", "REFUTED"),
    ("cr", "REFUTED", "crash"),
    ("ab", "REFUTED", "abstain"),
    ("w2", "REFUTED", "SUPPORTED"),
    ("ok2", "REFUTED", "REFUTED"),
]
ORDER = ["bad<i>|1", "w2", "cr", "ab", "ok1", "ok2"]  # wrong, then no label, then correct
if "toy_mixed" not in registry.datasets:
    registry.datasets.register("toy_mixed", ToyDataset(ROWS, "toy_mixed"))


def _run(tmp_path):
    cfg = config(tmp_path, method="toy_special", dataset="toy_mixed", concurrency=1)
    run = prepare_run(cfg, tmp_path / "run", llm=scripted_llm())
    asyncio.run(run_session(run))
    return run.store.path


def _rewrite(run_dir, change) -> None:
    path = run_dir / "predictions.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(change(r)) + "\n" for r in records))


def test_examples_are_listed_wrong_first_with_input_gold_predicted_and_outcome(tmp_path):
    md, html = write_report(_run(tmp_path))
    page, text = html.read_text(), md.read_text()
    table = page[page.index('<table class="examples">') :]
    table = table[: table.index("</table>")]
    ids = re.findall(r"<td><code>(.*?)</code></td>", table)
    assert ids == ["bad&lt;i&gt;|1", "w2", "cr", "ab", "ok1", "ok2"]
    assert "<i>" not in page  # the id's markup is text, not a tag
    first = table[table.index("bad&lt;i&gt;") :].split("</tr>")[0]
    assert "claim bad&lt;i&gt;|1 say:REFUTED" in first
    assert "<td>SUPPORTED</td><td>REFUTED</td><td>wrong</td>" in first
    # each number links to the example's details, which hold the reason and the trace
    assert '<a href="#ex-1">1</a>' in table and 'id="ex-1"' in page
    crashed = page[page.index('id="ex-3"') :].split("</section>")[0]
    assert "Crashed:</strong> RuntimeError: boom in the method" in crashed
    abstained = page[page.index('id="ex-4"') :].split("</section>")[0]
    assert "Abstained:</strong> not sure" in abstained and "Trace:" in abstained
    # Markdown: the same order, one row per example, special characters escaped
    rows = [line for line in text.splitlines() if line.startswith("| [")]
    assert [r.split(" | ")[1] for r in rows] == [md_cell(i) for i in ORDER]
    assert rows[0].startswith("| [1](report.html#ex-1) | bad\\<i\\>\\|1 | claim bad\\<i\\>\\|1")
    assert all(len(re.split(r"(?<!\\)\|", r)) == 8 for r in rows)  # 6 cells, none split
    assert "1 crashed" in text and "2 wrong" in text and "2 correct" in text


def test_evidence_in_the_report_links_only_web_addresses_and_shows_source_and_stance(tmp_path):
    run_dir = _run(tmp_path)
    trap = Document(
        id="x", text="t", title="<b>Trap</b>", url="javascript:alert(1)", source="local:scifact"
    )
    bad = Evidence(document=trap)
    good = Evidence(
        document=Document(
            id="y", text="t", title="Report", url="https://e.x/r", source="duckduckgo"
        ),
        stance=Stance.REFUTES,
    )

    def add_evidence(record):
        if record["id"] == "w2":
            record["verdict"]["evidence"] = [e.model_dump(mode="json") for e in (bad, good)]
        return record

    _rewrite(run_dir, add_evidence)
    page = write_report(run_dir)[1].read_text()
    details = page[page.index('id="ex-2"') :].split("</section>")[0]
    assert "javascript:" not in page and "&lt;b&gt;Trap&lt;/b&gt;" in details
    assert "· local:scifact" in details
    assert '<a href="https://e.x/r" rel="noopener noreferrer nofollow">Report</a>' in details
    assert "· duckduckgo · refutes" in details


def test_a_run_written_before_records_kept_the_input_still_lists_its_examples(tmp_path):
    run_dir = _run(tmp_path)
    _rewrite(run_dir, lambda r: {k: v for k, v in r.items() if k != "input"})
    md, html = write_report(run_dir)
    assert "6 of these records were written before runs kept what was checked" in html.read_text()
    assert "| [1](report.html#ex-1) | bad\\<i\\>\\|1 | – | SUPPORTED | REFUTED | wrong |" in (
        md.read_text()
    )


def test_the_recorded_input_is_the_claim_the_articles_opening_or_the_post():
    assert input_summary(Claim(text="The  tower\nis in Berlin.")) == "The tower is in Berlin."
    article = Article(title="Tower moves", body="word " * 300)
    summary = input_summary(article)
    assert summary.startswith("Tower moves — word word") and summary.endswith("…")
    assert 480 < len(summary) <= 500
    post = Post(text="Fire!", replies=[Reply(id="a", text="x"), Reply(id="b", text="y")])
    assert input_summary(post) == "Fire! (2 replies)"
    long_post = Post(text="smoke " * 200, replies=post.replies)
    assert input_summary(long_post).endswith("… (2 replies)")


def test_a_batch_run_without_gold_lists_its_examples_after_the_wrong_ones():
    def record(i, gold, predicted):
        return PredictionRecord(id=i, gold=gold, predicted=predicted, status="ok", input=i)

    rows, left_out = example_rows(
        [record("c", "A", "A"), record("n", None, "A"), record("w", "A", "B")]
    )
    assert [(r.id, r.outcome) for r in rows] == [("w", "wrong"), ("n", "no gold"), ("c", "correct")]
    assert left_out == 0
