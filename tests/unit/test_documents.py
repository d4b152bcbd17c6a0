"""Checking a document (veracity.documents): reading, claims in place, outcomes, totals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from veracity.core.errors import InputError
from veracity.core.types import Document, Evidence
from veracity.documents import DocumentChecker, from_file, from_html, from_text
from veracity.documents.report import support_of
from veracity.evidence.claims import ClaimExtractor, ExtractionConfig
from veracity.llm.client import ManagedLLM
from veracity.methods.base import BaseMethod
from veracity.testing import ScriptedLLM

TEXT = (
    "Marie Curie was born in Warsaw in 1867. She won three Nobel Prizes. "
    "Her notebooks are said to be lost. I love her story."
)
PASSAGE = Document(
    id="w1", title="Marie Curie", text="Curie won two Nobel Prizes, in 1903 and 1911."
)


class Keyed(BaseMethod):
    """A claim method that answers by keyword, so the orchestration is what is tested."""

    name = "keyed"
    default_labels = "true_false"
    input_kinds = ("claim",)

    async def run(self, item, ctx):
        if "boom" in item.text:
            raise RuntimeError("the source fell over")
        if "lost" in item.text:
            return self.verdict(label=None, abstained=True, abstain_reason="no evidence found")
        if "three" in item.text:
            return self.verdict(
                label="false", evidence=[Evidence(document=PASSAGE, quote=PASSAGE.text)]
            )
        return self.verdict(label="true")


def extractor(llm, **config):
    off = {"decompose": False, "decontextualise": False}
    return ClaimExtractor(ManagedLLM(llm), ExtractionConfig(**{**off, **config}))


def categories(*names):
    return json.dumps({"claims": list(names)})


async def test_each_claim_keeps_its_span_and_the_totals_count_apart():
    llm = ScriptedLLM()
    llm.on(".*", categories("factual", "factual", "factual", "opinion"), tag="claims:checkworthy")
    checker = DocumentChecker(Keyed(llm), extractor(llm), concurrency=2)
    report = await checker.report(from_text(TEXT, title="Curie"))
    by_status = {o.claim.text: o.status for o in report.claims}
    assert by_status == {
        "Marie Curie was born in Warsaw in 1867.": "checked",
        "She won three Nobel Prizes.": "checked",
        "Her notebooks are said to be lost.": "abstained",
        "I love her story.": "not_checkworthy",
    }
    for outcome in report.claims:
        ((start, end),) = outcome.claim.spans
        assert TEXT[start:end] == outcome.claim.text
    s = report.summary
    assert (s.claims, s.checked, s.supported, s.refuted, s.abstained, s.not_checkworthy) == (
        4, 2, 1, 1, 1, 1,
    )  # fmt: skip
    # FActScore: 1 supported of the 3 check-worthy claims (the abstention is not supported)
    assert s.factuality == pytest.approx(1 / 3) and s.labels == {"false": 1, "true": 1}
    assert s.supported_share_of_decided == pytest.approx(0.5)  # the older figure, renamed
    assert s.factuality_penalised == pytest.approx(1 / 3 * math.exp(1 - 10 / 3))
    assert report.method == "keyed" and report.label_space == "true_false"
    assert report.usage.llm_calls == 1  # the check-worthiness call; Keyed calls no model


async def test_a_failing_claim_is_an_error_on_that_claim_only():
    llm = ScriptedLLM()
    checker = DocumentChecker(Keyed(llm), extractor(llm, checkworthiness=False))
    report = await checker.report(from_text("The dam went boom. The bridge stands."))
    errors = [o for o in report.claims if o.status == "error"]
    assert len(errors) == 1 and "fell over" in (errors[0].error or "")
    assert report.summary.errors == 1 and report.summary.checked == 1
    assert report.summary.factuality == 0.5  # a failed check is not a supported fact
    assert report.summary.supported_share_of_decided == 1.0


async def test_no_check_worthy_claim_means_no_factuality_and_an_abstention_scores_zero():
    llm = ScriptedLLM()
    checker = DocumentChecker(Keyed(llm), extractor(llm, checkworthiness=False))
    report = await checker.report(from_text("Her notebooks are said to be lost."))
    assert report.summary.factuality == 0.0 and report.summary.abstained == 1
    assert report.summary.supported_share_of_decided is None
    llm.on(".*", categories("opinion"), tag="claims:checkworthy")
    opinion = await DocumentChecker(Keyed(llm), extractor(llm)).report(from_text("I love it."))
    assert opinion.summary.factuality is None and opinion.summary.factuality_penalised is None


async def test_refuted_claims_get_a_correction_that_cites_their_evidence():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"correction": "She won two Nobel Prizes.", "evidence": [1, 7]}),
           tag="correct:c1")  # fmt: skip
    checker = DocumentChecker(Keyed(llm), extractor(llm, checkworthiness=False), corrections=True)
    report = await checker.report(from_text("She won three Nobel Prizes. The sky is blue."))
    refuted, fine = report.claims
    assert refuted.support == "refuted" and refuted.correction is not None
    assert refuted.correction.text == "She won two Nobel Prizes."
    assert refuted.correction.evidence == [1]  # a cited passage that does not exist is dropped
    assert fine.correction is None and len(llm.calls_tagged("correct")) == 1
    prompt = llm.calls_tagged("correct:c1")[0].messages[-1].content
    assert "<claim>" in prompt and "<evidence>" in prompt


async def test_a_correction_the_evidence_does_not_support_is_left_out():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"correction": None, "evidence": []}), tag="correct")
    checker = DocumentChecker(Keyed(llm), extractor(llm, checkworthiness=False), corrections=True)
    report = await checker.report(from_text("She won three Nobel Prizes."))
    assert report.claims[0].support == "refuted" and report.claims[0].correction is None


def test_a_method_that_does_not_check_claims_is_refused():
    class PostsOnly(Keyed):
        name = "posts_only"
        input_kinds = ("post",)

    llm = ScriptedLLM()
    with pytest.raises(TypeError, match="does not check claims"):
        DocumentChecker(PostsOnly(llm), extractor(llm))


def test_support_follows_the_label_not_the_score():
    llm = ScriptedLLM()
    method = Keyed(llm)
    assert support_of(method.verdict(label="true")) == "supported"
    assert support_of(method.verdict(label="true", score=0.5)) == "supported"
    assert support_of(method.verdict(label=None, abstained=True, abstain_reason="x")) is None


def test_files_are_read_by_their_suffix(tmp_path: Path):
    (tmp_path / "a.md").write_text("# Title\n\nThe bridge opened in 1932.\n", encoding="utf-8")
    md = from_file(tmp_path / "a.md")
    assert md.format == "markdown" and "1932" in md.text and md.origin == "file"
    page = (
        "<html><head><title>Bridge news</title></head><body><nav>Home | About</nav>"
        "<article><p>The bridge over the river opened to traffic in 1932 after four years "
        "of work by the city council and two private firms.</p><p>It was widened in 1978 "
        "and again in 2004, when a cycle lane was added on its eastern side.</p></article>"
        "</body></html>"
    )
    (tmp_path / "b.html").write_text(page, encoding="utf-8")
    html = from_file(tmp_path / "b.html")
    assert html.format == "html" and "opened to traffic in 1932" in html.text
    assert "Home | About" not in html.text and html.title == "Bridge news"


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        ("a.docx", b"x", "unknown file type"),
        ("empty.txt", b"   \n", "no text"),
        ("b.html", b"<html><body></body></html>", "no main text"),
    ],
)
def test_unreadable_documents_are_clear_errors(tmp_path: Path, name, content, match):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(InputError, match=match):
        from_file(tmp_path / name)


def test_a_missing_file_and_a_blank_text_are_clear_errors(tmp_path: Path):
    with pytest.raises(InputError, match="not found"):
        from_file(tmp_path / "nope.txt")
    with pytest.raises(InputError):
        from_text("  ")
    with pytest.raises(InputError, match="no main text"):
        from_html(b"<p></p>")


def _tiny_pdf(text: str) -> bytes:
    """A one-page PDF showing `text` (written by hand: objects, then the cross-reference)."""
    stream = f"BT /F1 12 Tf 72 712 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def test_a_pdf_is_read_with_the_pdf_extra(tmp_path: Path):
    pytest.importorskip("pypdf", reason="the pdf extra (pypdf) is not installed")
    (tmp_path / "r.pdf").write_bytes(_tiny_pdf("The bridge opened in 1932."))
    doc = from_file(tmp_path / "r.pdf")
    assert doc.format == "pdf" and "The bridge opened in 1932." in doc.text
    (tmp_path / "bad.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    with pytest.raises(InputError, match="not a readable PDF"):
        from_file(tmp_path / "bad.pdf")
