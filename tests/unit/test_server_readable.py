"""The web UI reads as a person expects: the checked input first, evidence labelled by
its real source with its stance, an empty rationale flagged, the trace in words; all of
it escaped (rendered from the templates, no server needed)."""

from __future__ import annotations

import pytest

from veracity.core.types import Document, Evidence, Stance, Trace, Verdict
from veracity.server import views
from veracity.server.inputs import OPENING_CHARS, input_view
from veracity.server.store import JobRow
from veracity.server.summaries import JobSummaryRow, summarize
from veracity.server.ui import templates

SCRIPT = "<script>alert(1)</script>"


def _row(request: dict, verdict: dict | None = None, job_id: str = "j1") -> JobRow:
    return JobRow(
        job_id, "2026-01-01T00:00:00+00:00", None, None, "done", request, "rag", "claim",
        "stored preview", None, None, verdict, None, None,
    )  # fmt: skip


def _listed(row: JobRow) -> JobSummaryRow:
    line, replies = summarize(row.request, row.preview)
    kind = row.request["input"]["kind"]  # the store's input_kind column
    return JobSummaryRow(
        row.id, row.created_at, row.started_at, row.finished_at, row.status, row.method,
        kind, row.preview, row.label, row.score, row.rerun_of, line, replies,
    )  # fmt: skip


def _report(verdict: Verdict) -> str:
    data = verdict.model_dump(mode="json")
    return templates.get_template("_report.html.j2").render(
        auth=False, job=_row({}, data), verdict=data, warning=None,
        report=views.build_report(data, {}),
    )  # fmt: skip


def _verdict(**fields) -> Verdict:
    base = {"label": "false", "label_space": "true_false", "method": "rag", "score": 0.1}
    return Verdict(**{**base, **fields})


# --------------------------------------------------------------------------- the input


def test_a_claim_is_shown_whole_with_its_speaker_and_date():
    request = {"input": {"kind": "claim", "text": "The Eiffel Tower  is\nin Berlin.",
                         "speaker": "a blogger", "date": "2024-04-01"}}  # fmt: skip
    v = input_view(request)
    assert (v.kind, v.text, v.cut, v.heading) == (
        "claim",
        "The Eiffel Tower is in Berlin.",
        False,
        "Claim checked",
    )
    assert v.about == "said by a blogger · 2024-04-01"


def test_an_article_shows_its_title_and_opening_cut_at_a_word():
    body = "Paris officials confirmed the move on Monday. " * 30
    request = {"input": {"kind": "article", "title": "Tower moves east", "body": body,
                         "url": "https://news.example/tower",
                         "published_at": "2024-04-01T00:00:00Z"}}  # fmt: skip
    v = input_view(request)
    assert v.title == "Tower moves east" and v.cut and v.text.endswith("…")
    assert len(v.text) <= OPENING_CHARS + 1 and body.startswith(v.text[:-1])
    assert v.url == "https://news.example/tower" and v.date == "2024-04-01"
    assert v.line.startswith("Tower moves east — Paris officials")


def test_a_post_shows_its_text_and_number_of_replies():
    replies = [{"id": f"r{i}", "text": "no"} for i in range(3)]
    v = input_view({"input": {"kind": "post", "text": "Fire on Main St.", "replies": replies}})
    assert (v.text, v.replies, v.about) == ("Fire on Main St.", 3, "3 replies")
    assert input_view({"input": {"kind": "post", "text": "x", "replies": [replies[0]]}}).about == (
        "1 reply"
    )


def test_a_request_without_input_shows_the_stored_preview():
    assert input_view({}, "stored preview").text == "stored preview"


def test_the_input_fragment_escapes_text_and_links_only_web_addresses():
    request = {"input": {"kind": "article", "title": SCRIPT, "body": f"Body {SCRIPT}",
                         "url": "javascript:alert(1)"}}  # fmt: skip
    html = templates.get_template("_input.html.j2").render(v=input_view(request))
    assert "<script>" not in html and html.count("&lt;script&gt;") == 2
    assert "javascript:" not in html and "<a " not in html
    assert 'id="checked-heading">Article checked<' in html


def test_the_history_lists_each_input_as_a_person_reads_it():
    rows = [
        _row({"input": {"kind": "claim", "text": f"Claim {SCRIPT}"}}, job_id="a"),
        _row(
            {"input": {"kind": "article", "title": "Tower moves", "body": "It moved."}}, job_id="b"
        ),
        _row(
            {"input": {"kind": "post", "text": "Fire!", "replies": [{"id": "r", "text": "x"}]}},
            job_id="c",
        ),
    ]
    listed = [_listed(r) for r in rows]  # as the store lists them: summary columns
    html = templates.get_template("_history.html.j2").render(auth=False, rows=listed, more=None)
    assert "Claim &lt;script&gt;" in html and "<script>" not in html
    assert "Tower moves — It moved." in html and "(article)" in html
    assert "Fire!" in html and "(post, 1 reply)" in html


# --------------------------------------------------------------------------- the verdict


def test_an_empty_rationale_is_flagged_as_a_notice():
    html = _report(_verdict(rationale="  "))
    assert 'class="notice" id="no-rationale"' in html and "No rationale given" in html
    html = _report(_verdict(rationale="The tower stands in Paris."))
    assert "no-rationale" not in html and "The tower stands in Paris." in html


def test_evidence_shows_its_source_and_stance_and_no_unknown_stance():
    docs = [
        Document(id="d1", text="Tower in Paris.", title="Local passage", source="local:scifact"),
        Document(
            id="d2", text="Tower.", title="Web page", source="duckduckgo", url="https://e.x/t"
        ),
        Document(
            id="d3", text="Odd.", title="Bad link", source="wikipedia", url="javascript:alert(1)"
        ),
    ]
    evidence = [
        Evidence(document=docs[0], stance=Stance.REFUTES, note="cited"),
        Evidence(document=docs[1], stance=Stance.SUPPORTS),
        Evidence(document=docs[2], note="retrieved, not cited"),
    ]
    html = _report(_verdict(evidence=evidence, rationale="r"))
    sources = [s.split("<")[0] for s in html.split('class="ev-source">')[1:]]
    assert sources == ["local:scifact", "duckduckgo", "wikipedia"]
    assert 'stance-refutes">refutes<' in html and 'stance-supports">supports<' in html
    assert "unknown" not in html
    assert html.count("retrieved, not cited") == 1
    assert 'href="https://e.x/t"' in html and "javascript:" not in html


def test_the_full_trace_lists_each_event_in_words_with_its_raw_data_escaped():
    t = Trace()
    t.add("note", "setup", text="no sources given")
    t.add("agent_turn", "pro", round=1, text=SCRIPT)
    html = _report(_verdict(trace=t, rationale="r"))
    assert "Setup: no sources given" in html
    assert "Pro, round 1: &lt;script&gt;" in html and "<script>" not in html


@pytest.mark.parametrize("stance", ["unknown", None, "bogus"])
def test_a_stance_that_is_not_known_is_not_shown(stance):
    ev = {"document": {"id": "d", "text": "t", "source": "wikipedia"}}
    if stance is not None:
        ev["stance"] = stance
    assert views.evidence_views({"evidence": [ev]})[0].stance is None
