"""Document pages (issue 41, item 5): the HTML report names the file it was read from and
shows a Markdown document's headings as headings (its ``#`` marks hidden, its text
otherwise as written, hostile markup inert); the colour of a verdict follows its label;
the web UI's history line counts as the report's factuality does."""

from __future__ import annotations

import pytest
from rich.console import Console

from browser_support import TIMEOUT_MS, chromium
from veracity.cli.render import verdict_panel
from veracity.core.types import Verdict
from veracity.documents.annotate import markdown_headings, verdict_class, view
from veracity.documents.html_report import render_report
from veracity.documents.reading import from_file
from veracity.documents.report import ClaimOutcome, DocumentReport, outcome_of, summarise
from veracity.evidence.claims import ExtractedClaim
from veracity.server.jobs import document_line

MARKDOWN = (
    "# Marie Curie\n\n"
    "Marie Curie was born in Warsaw in 1867.\n\n"
    "## Prizes <script>alert('x')</script>\n\n"
    "She won two Nobel Prizes.\n"
)


def _report(tmp_path) -> DocumentReport:
    path = tmp_path / "curie.md"
    path.write_text(MARKDOWN, encoding="utf-8")
    document = from_file(path)
    sentence = "Marie Curie was born in Warsaw in 1867."
    start = MARKDOWN.index(sentence)
    claim = ExtractedClaim(id="c1", text=sentence, atomic=sentence,
                           spans=[(start, start + len(sentence))], sentence=1)  # fmt: skip
    verdict = Verdict(label="true", label_space="true_false", method="rag", score=0.9)
    outcomes = [outcome_of(claim, verdict)]
    return DocumentReport(document=document, method="rag", label_space="true_false",
                          claims=outcomes, summary=summarise(outcomes), sentences=4)  # fmt: skip


def test_the_report_names_the_file_and_recognises_markdown_headings(tmp_path):
    report = _report(tmp_path)
    assert report.document.file == "curie.md"
    page = render_report(report)
    assert "<title>curie.md · veracity report</title>" in page
    assert '<p class="muted small" id="doc-file">File: <code>curie.md</code></p>' in page
    assert '<span class="md-syntax" aria-hidden="true"># </span>' in page
    assert '<span class="md-heading md-h1">Marie Curie</span>' in page
    # a heading's markup is text, escaped like the rest
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;</span>" in page
    assert [(level) for *_, level in markdown_headings(MARKDOWN)] == [1, 2]
    # the segments still join to the exact text the spans index
    assert "".join(s.text for s in view(report).segments) == MARKDOWN


@pytest.mark.parametrize(("label", "score", "colour", "cls"), [
    ("false", 0.44, "red", "refuted"), ("true", 0.59, "green", "supported"),
])  # fmt: skip
def test_the_colour_follows_the_label_not_the_score(label, score, colour, cls):
    verdict = Verdict(label=label, label_space="true_false", method="rag", score=score)
    console = Console(width=100, record=True, color_system="standard", force_terminal=True)
    console.print(verdict_panel(verdict, "A claim."))
    ansi = {"red": "\x1b[1;31m", "green": "\x1b[1;32m"}[colour]  # bold red / bold green
    assert f"{ansi} {label} " in console.export_text(styles=True)
    claim = ExtractedClaim(id="c1", text="A claim.", atomic="A claim.", spans=[], sentence=0)
    assert verdict_class(outcome_of(claim, verdict)) == cls


def test_the_history_line_counts_every_check_worthy_claim():
    claim = ExtractedClaim(id="c1", text="A.", atomic="A.", spans=[], sentence=0)
    supported = outcome_of(claim, Verdict(label="true", label_space="true_false", method="m"))
    abstained = ClaimOutcome(claim=claim, status="abstained")
    summary = summarise([supported, abstained]).model_dump()
    # one supported of two facts: 50%, as the report's factuality (was "1 of 1 supported")
    assert document_line(summary) == ("1 of 2 supported", 0.5)


browser = pytest.fixture(scope="module")(chromium)


@pytest.mark.browser
def test_a_markdown_report_reads_as_text_with_headings_in_chromium(browser, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(render_report(_report(tmp_path)), encoding="utf-8")
    context = browser.new_context(offline=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri())
    assert page.locator("#doc-heading").inner_text() == "curie.md"
    shown = page.locator("#doc-text").inner_text()
    assert shown.startswith("Marie Curie\n") and "#" not in shown  # the marks are hidden
    heading = page.locator("#doc-text .md-h1")
    assert heading.evaluate("e => parseFloat(getComputedStyle(e).fontWeight)") >= 700
    assert "<script>alert('x')</script>" in shown  # hostile markup shown as text
    assert page.locator("#doc-text script").count() == 0
    assert page.locator("mark.claim-mark.v-supported").inner_text().startswith("Marie Curie")
    context.close()
    assert dialogs == []
