"""The standalone HTML report of a checked document (`veracity.documents.html_report`):
highlights carry their claim's verdict class, every text from the document, the model
and the evidence is escaped, a `<script>` in the document stays inert (escaped, and the
page's CSP allows only its own script), the file needs nothing from the network; the
`--html` options of `veracity check` and `veracity batch` write it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser

import pytest
from test_document_batch import CURIE, EINSTEIN, invoke, llm  # noqa: F401 (a fixture)

from browser_support import TIMEOUT_MS, chromium
from veracity.core.types import Document, Evidence, Verdict
from veracity.documents.html_report import render_report
from veracity.documents.reading import from_text
from veracity.documents.report import ClaimOutcome, Correction, DocumentReport, summarise
from veracity.evidence.claims import ExtractedClaim

TEXT = (
    "Curie won three Nobel Prizes. Curie was born in Warsaw. "
    "<script>alert('x')</script> & I adore <b>her</b>."
)


def _claim(cid: str, sentence: str, category: str = "factual") -> ExtractedClaim:
    start = TEXT.index(sentence)
    span = (start, start + len(sentence))
    return ExtractedClaim(id=cid, text=sentence, atomic=sentence, spans=[span], sentence=0,
                          category=category)  # fmt: skip


def _verdict(label: str, score: float, url: str, rationale: str) -> Verdict:
    doc = Document(id="d", title="Nobel <list>", text="Curie won two Nobel Prizes.", url=url)
    return Verdict(label=label, label_space="true_false", method="rag", score=score,
                   rationale=rationale, evidence=[Evidence(document=doc)])  # fmt: skip


def report() -> DocumentReport:
    nobel = ClaimOutcome(
        claim=_claim("c1", "Curie won three Nobel Prizes."),
        status="checked",
        support="refuted",
        verdict=_verdict("false", 0.0, "https://prizes.example/curie", "Two, <i>not</i> three."),
        correction=Correction(text="Curie won two Nobel Prizes.", evidence=[1]),
    )
    born = ClaimOutcome(
        claim=_claim("c2", "Curie was born in Warsaw."),
        status="checked",
        support="supported",
        verdict=_verdict("true", 1.0, "javascript:alert(1)", "Born there."),
    )
    opinion = ClaimOutcome(
        claim=_claim("c3", "<script>alert('x')</script> & I adore <b>her</b>.", "opinion"),
        status="not_checkworthy",
    )
    outcomes = [nobel, born, opinion]
    return DocumentReport(document=from_text(TEXT, title="Curie <facts>"), method="rag",
                          label_space="true_false", claims=outcomes,
                          summary=summarise(outcomes), sentences=3)  # fmt: skip


class _Page(HTMLParser):
    """The marks (their classes and text), the scripts and any remote reference."""

    def __init__(self):
        super().__init__()
        self.marks: list[tuple[str, str]] = []
        self.scripts: list[str] = []
        self.remote: list[str] = []
        self.links: list[str] = []
        self._in: str | None = None
        self._buf = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("mark", "script"):
            self._in, self._buf = tag, ""
            self._cls = a.get("class", "")
        for key in ("src", "href"):
            value = a.get(key) or ""
            if key == "href" and tag == "a":
                self.links.append(value)
            if tag in ("link", "img", "script", "iframe") and value:
                self.remote.append(value)

    def handle_endtag(self, tag):
        if tag == self._in:
            (self.marks.append((self._cls, self._buf)) if tag == "mark"
             else self.scripts.append(self._buf))  # fmt: skip
            self._in = None

    def handle_data(self, data):
        if self._in:
            self._buf += data


def _parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def test_highlights_carry_the_verdict_class_of_their_claim():
    page = _parse(render_report(report()))
    by_text = {text: cls for cls, text in page.marks}
    assert "v-refuted" in by_text["Curie won three Nobel Prizes."]
    assert "v-supported" in by_text["Curie was born in Warsaw."]
    assert "v-skipped" in by_text["<script>alert('x')</script> & I adore <b>her</b>."]


def test_document_text_is_escaped_and_its_script_never_runs():
    html = render_report(report())
    page = _parse(html)
    assert "<script>alert" not in html and "<b>her</b>" not in html
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; I adore" in html
    assert "Curie &lt;facts&gt;" in html and "Two, &lt;i&gt;not&lt;/i&gt; three." in html
    assert len(page.scripts) == 1  # ours alone
    digest = base64.b64encode(hashlib.sha256(page.scripts[0].encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html).group(1)
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp


def test_the_page_needs_no_network_and_links_only_safe_addresses():
    html = render_report(report())
    page = _parse(html)
    assert page.remote == []  # no stylesheet, image, frame or script fetched
    assert "https://prizes.example/curie" in page.links
    assert not any(link.startswith("javascript:") for link in page.links)
    assert "Suggested correction" in html and "suggestion, not verified" in html
    assert "Curie won two Nobel Prizes." in html
    assert re.search(r"<dt>Factuality</dt><dd>50%</dd>", html)


def test_check_writes_the_html_report(llm, tmp_path):  # noqa: F811
    path = tmp_path / "reports" / "curie.html"
    result = invoke("check", "--kind", "document", "--corrections", "--html", str(path), CURIE)
    assert result.exit_code == 0, result.output
    page = _parse(path.read_text(encoding="utf-8"))
    classes = {text: cls for cls, text in page.marks}
    assert "v-refuted" in classes["She won three Nobel Prizes."]
    assert "v-skipped" in classes["I love her story [bold red]really[/]."]


def test_batch_writes_a_report_per_row_and_an_index(llm, tmp_path):  # noqa: F811
    src, out, folder = tmp_path / "docs.jsonl", tmp_path / "out.jsonl", tmp_path / "html"
    rows = [{"id": "curie/1", "text": CURIE}, {"id": "empty", "text": ""},
            {"id": "einstein", "text": EINSTEIN}]  # fmt: skip
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = invoke("batch", str(src), "--kind", "document", "--out", str(out),
                    "--html", str(folder), "--no-progress")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in folder.iterdir()) == [
        "0001-curie-1.html", "0003-einstein.html", "index.html",
    ]  # fmt: skip
    index = (folder / "index.html").read_text(encoding="utf-8")
    assert _parse(index).links == ["0001-curie-1.html", "0003-einstein.html"]
    assert "error: " in index and "50%" in index and "100%" in index


def test_html_without_kind_document_is_refused(llm, tmp_path):  # noqa: F811
    result = invoke("check", "--html", str(tmp_path / "r.html"), "a claim")
    assert result.exit_code == 2 and "--html applies to documents" in result.output


# ---------------------------------------------------------------------- in real Chromium

browser = pytest.fixture(scope="module")(chromium)


@pytest.mark.browser
def test_clicking_a_highlight_opens_its_verdict_and_evidence_in_chromium(browser, tmp_path):
    path = tmp_path / "report.html"
    path.write_text(render_report(report()), encoding="utf-8")
    context = browser.new_context(viewport={"width": 1000, "height": 800}, offline=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    errors, dialogs, requests = [], [], []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(path.as_uri())
    details = page.locator("#claim-c1")
    assert not details.evaluate("d => d.open")
    page.locator("mark.claim-mark.v-refuted").click()
    assert details.evaluate("d => d.open")  # our script ran (the CSP let it) and opened it
    link = details.get_by_role("link", name="Nobel <list>")
    assert link.get_attribute("href") == "https://prizes.example/curie"
    assert details.get_by_text("suggestion, not verified").is_visible()
    assert details.get_by_text("Two, <i>not</i> three.").is_visible()
    assert "selected" in page.locator("mark.v-refuted").get_attribute("class")
    page.locator("mark.claim-mark.v-supported").press("Enter")  # the keyboard works too
    assert page.locator("#claim-c2").evaluate("d => d.open")
    context.close()
    assert dialogs == [] and errors == []  # the document's <script> never ran
    assert requests == [path.as_uri()]  # nothing fetched but the file itself
