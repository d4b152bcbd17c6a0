"""The annotated-document view (veracity.documents.annotate) and its template partial."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

import veracity.server
from veracity.core.types import Document, Evidence, Verdict
from veracity.documents import from_text
from veracity.documents.annotate import Mark, live_view, segments, view, worst
from veracity.documents.report import (
    ClaimOutcome,
    Correction,
    DocumentReport,
    outcome_of,
    summarise,
)
from veracity.evidence.claims import ExtractedClaim

TEMPLATES = Path(veracity.server.__file__).parent / "templates"


def test_segments_cover_the_text_and_list_their_claims():
    text = "Alpha beta. Gamma delta."
    out = segments(text, [Mark("c1", [(0, 11)], "supported"), Mark("c2", [(12, 24)], "refuted")])
    assert "".join(s.text for s in out) == text
    assert [(s.text, s.claims, s.verdict) for s in out] == [
        ("Alpha beta.", ("c1",), "supported"),
        (" ", (), None),
        ("Gamma delta.", ("c2",), "refuted"),
    ]


def test_overlapping_spans_split_into_shared_and_own_parts():
    text = "0123456789"
    out = segments(text, [Mark("a", [(0, 6)], "supported"), Mark("b", [(3, 9)], "refuted")])
    assert [(s.start, s.end, s.claims, s.verdict) for s in out] == [
        (0, 3, ("a",), "supported"),
        (3, 6, ("a", "b"), "refuted"),  # the more alarming verdict shows where both meet
        (6, 9, ("b",), "refuted"),
        (9, 10, (), None),
    ]


def test_a_span_inside_another_and_a_claim_with_two_spans():
    text = "one two three four"
    marks = [Mark("a", [(0, 13)], "supported"), Mark("b", [(4, 7), (14, 18)], "pending")]
    out = segments(text, marks)
    assert [(s.text, s.claims) for s in out] == [
        ("one ", ("a",)),
        ("two", ("a", "b")),
        (" three", ("a",)),
        (" ", ()),
        ("four", ("b",)),
    ]
    assert out[1].verdict == "pending"  # pending outranks supported: it may turn out false


def test_touching_spans_stay_apart_and_bad_spans_are_dropped():
    text = "abcdef"
    marks = [
        Mark("a", [(0, 3)], "supported"),
        Mark("b", [(3, 6)], "nei"),
        Mark("c", [(4, 4), (5, 2), (-5, -1), (50, 90)], "refuted"),  # empty, reversed, outside
    ]
    out = segments(text, marks)
    assert [(s.text, s.claims) for s in out] == [("abc", ("a",)), ("def", ("b",))]


def test_spans_past_the_end_are_clipped():
    out = segments("abc", [Mark("a", [(1, 99)], "error")])
    assert [(s.text, s.claims) for s in out] == [("a", ()), ("bc", ("a",))]


def test_unicode_offsets_are_characters_not_bytes():
    text = "Ça va 😀 très bien. Zürich est en Suisse."
    start = text.index("Zürich")
    out = segments(text, [Mark("c1", [(start, len(text))], "supported")])
    assert out[-1].text == "Zürich est en Suisse."
    assert "".join(s.text for s in out) == text


def test_empty_text_and_no_claims():
    assert segments("", [Mark("a", [(0, 3)], "supported")]) == []
    out = segments("plain", [])
    assert [(s.text, s.claims, s.marked) for s in out] == [("plain", (), False)]


def test_worst_orders_the_classes():
    assert worst(["supported", "nei"]) == "nei"
    assert worst(["error", "refuted"]) == "refuted"
    assert worst(["skipped", "supported"]) == "supported"
    assert worst([]) is None


def _claim(cid: str, text: str, span: tuple[int, int], category="factual") -> ExtractedClaim:
    return ExtractedClaim(
        id=cid, text=text, atomic=text, spans=[span], sentence=0, category=category
    )


def _report() -> DocumentReport:
    text = "Curie won three Nobel Prizes. She was born in Warsaw. <b>I</b> like her."
    doc = from_text(text, title="On <Curie>")
    passage = Document(
        id="w1", title="Marie Curie", url="javascript:alert(1)", text="Curie won two prizes."
    )
    refuted = Verdict(
        label="false", label_space="true_false", method="keyed", rationale="Two, not three.",
        evidence=[Evidence(document=passage, quote=passage.text)],
    )  # fmt: skip
    supported = Verdict(label="true", label_space="true_false", method="keyed")
    c1 = _claim("c1", "Curie won three Nobel Prizes.", (0, 29))
    c2 = _claim("c2", "Curie was born in Warsaw.", (30, 52))
    c3 = _claim("c3", "I like her.", (53, 72), category="opinion")
    first = outcome_of(c1, refuted)
    first.correction = Correction(text="Curie won two Nobel Prizes.", evidence=[1])
    outcomes = [
        first,
        outcome_of(c2, supported),
        ClaimOutcome(claim=c3, status="not_checkworthy"),
    ]
    return DocumentReport(
        document=doc, method="keyed", label_space="true_false", claims=outcomes,
        summary=summarise(outcomes), sentences=3,
    )  # fmt: skip


def test_the_view_of_a_report_has_rows_evidence_and_a_safe_link():
    v = view(_report())
    assert [(r.id, r.verdict) for r in v.claims] == [
        ("c1", "refuted"),
        ("c2", "supported"),
        ("c3", "skipped"),
    ]
    first = v.claims[0]
    assert first.correction == "Curie won two Nobel Prizes." and first.correction_cites == "[1]"
    assert first.evidence[0].url is None  # a javascript: address is never a link
    assert first.rationale == "Two, not three."
    assert ("Factuality", "50%") in v.totals


def test_a_live_view_marks_unchecked_claims_pending():
    text = "Alpha is one. Beta is two."
    claims = [
        {"id": "c1", "text": "Alpha is one.", "spans": [[0, 13]], "category": "factual"},
        {"id": "c2", "text": "Beta is two.", "spans": [[14, 26]], "category": "factual"},
    ]
    v = live_view(text, claims, {"c2": {"status": "checked", "support": "refuted"}})
    assert [(s.text, s.verdict) for s in v.segments] == [
        ("Alpha is one.", "pending"),
        (" ", None),
        ("Beta is two.", "refuted"),
    ]
    assert not v.done and v.totals == []


def test_the_partial_renders_alone_and_escapes_the_document():
    env = Environment(
        loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined
    )
    html = env.get_template("_document.html.j2").render(doc=view(_report()))
    assert "&lt;b&gt;I&lt;/b&gt;" in html and "<b>I</b>" not in html
    assert "On &lt;Curie&gt;" in html
    assert '<mark class="claim-mark v-refuted" data-claims="c1"' in html
    assert '<mark class="claim-mark v-supported" data-claims="c2"' in html
    assert "javascript:" not in html
    assert "suggestion, not verified" in html and 'id="claim-c1"' in html


async def test_the_document_check_traces_its_claims_then_each_result():
    from veracity.core import context
    from veracity.core.events import ClaimChecked, ClaimsFound
    from veracity.documents import DocumentChecker
    from veracity.evidence.claims import ClaimExtractor, ExtractionConfig
    from veracity.llm.client import ManagedLLM
    from veracity.methods.base import BaseMethod
    from veracity.testing import ScriptedLLM

    class Keyed(BaseMethod):
        name = "keyed"
        default_labels = "true_false"
        input_kinds = ("claim",)

        async def run(self, item, ctx):
            if "boom" in item.text:
                raise RuntimeError("the source fell over")
            return self.verdict(label="false" if "three" in item.text else "true")

    text = "Curie won three prizes. The boom was loud. I love it."
    llm = ScriptedLLM()
    llm.on(".*", '{"claims": ["factual", "factual", "opinion"]}', tag="claims:checkworthy")
    config = ExtractionConfig(decompose=False, decontextualise=False)
    checker = DocumentChecker(Keyed(llm), ClaimExtractor(ManagedLLM(llm), config))
    seen = []
    with context.observe(seen.append):
        report = await checker.report(from_text(text))
    found = [e for e in seen if isinstance(e, ClaimsFound)]
    done = {e.claim_id: e for e in seen if isinstance(e, ClaimChecked)}
    assert len(found) == 1 and found[0].count == 3
    first = found[0].claims[0]
    assert first["id"] == "c1" and text[slice(*first["spans"][0])] == "Curie won three prizes."
    assert seen.index(found[0]) < min(seen.index(e) for e in done.values())
    assert (done["c1"].status, done["c1"].support, done["c1"].label) == (
        "checked",
        "refuted",
        "false",
    )
    assert done["c2"].status == "error" and "fell over" in done["c2"].error
    assert done["c3"].status == "not_checkworthy"
    assert [o.status for o in report.claims] == ["checked", "error", "not_checkworthy"]
