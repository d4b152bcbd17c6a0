"""What the web UI's report shows, built from typed trace events (no server needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from veracity.core import registry
from veracity.core.events import (
    ClaimChecked,
    ClaimsFound,
    MemoryAccess,
    Stage,
    TraceEvent,
    parse_event,
)
from veracity.core.types import Document, Evidence, Trace, Verdict
from veracity.methods.base import BaseMethod
from veracity.methods.s2mad import S2MADMethod
from veracity.methods.view import ViewGroup, ViewItem, ViewPart
from veracity.server import views
from veracity.server.store import JobRow
from veracity.server.ui import templates


def _verdict(trace: Trace, **fields) -> dict:
    base = {"label": "TRUE", "label_space": "true_half_false", "method": "m", "score": 1.0}
    return Verdict(**{**base, **fields}, trace=trace).model_dump(mode="json")


def _events(trace: Trace) -> list[TraceEvent]:
    """The events as the web UI gets them: stored as JSON, read back into their classes."""
    return views.stored_events({"trace": trace.model_dump(mode="json")})


def _render(verdict: dict, report: views.Report) -> str:
    row = JobRow(
        "j1", "2026-01-01T00:00:00", None, None, "done", {"input": {}}, verdict["method"],
        "claim", "x", "TRUE", 1.0, verdict, None, None,
    )  # fmt: skip
    return templates.get_template("_report.html.j2").render(
        auth=False, job=row, verdict=verdict, report=report, warning=None
    )


def test_the_quoted_span_is_marked_inside_a_window_of_its_passage():
    text = "A" * 500 + " the medal was sold in 2012 " + "B" * 500
    segments, found = views.passage(text, "The medal was sold")
    assert found
    assert [s.mark for s in segments] == [False, True, False]
    assert segments[1].text == "the medal was sold"
    assert segments[0].text.startswith("…") and segments[2].text.endswith("…")
    missing, found = views.passage("short passage", "not there")
    assert not found and missing[0].text == "short passage"


def test_debate_rounds_stop_signals_and_rulings_come_out_by_round():
    t = Trace()
    t.add("agent_turn", "politician", round=1, phase="opening", text="it happened")
    t.add("agent_turn", "scientist", round=1, phase="opening", text="no record of it")
    t.add(
        "stop_signal", "stop_agent", round=1, margin=-0.4, detail={"p_stop": 0.3, "p_continue": 0.7}
    )
    t.add("stop_signal", "stopping", round=1, stop=False)
    t.add("agent_turn", "politician", round=2, phase="rebuttal", text="look again")
    t.add("ruling", "round_judge", round=2, decision="TRUE", confidence=0.9, reason="sold")
    t.add("stop_signal", "stopping", round=2, stop=True)
    events = _events(t)
    rounds = views.debate_rounds(events)
    assert [r["round"] for r in rounds] == [1, 2]
    assert [x["role"] for x in rounds[0]["turns"]] == ["politician", "scientist"]
    assert rounds[1]["rulings"][0]["decision"] == "TRUE"
    signals = views.stop_signals(events)
    assert [(s["round"], s["name"], s["stop"]) for s in signals] == [
        (1, "stop_agent", None), (1, "stopping", False), (2, "stopping", True),
    ]  # fmt: skip
    assert signals[0]["extra"] == {"p_stop": 0.3, "p_continue": 0.7}


def test_s2mads_stance_panel_comes_from_s2mad_with_the_reply_texts_and_scores():
    t = Trace()
    t.add("decision", "stance_scorer", detail={"scores": {"r1": 0.9, "r2": -0.8}})
    t.add(
        "stage",
        "s2mad",
        step="stance_separation",
        detail={"mode": "stance", "p": ["r1"], "n": ["r2"]},
    )
    item = {"replies": [{"id": "r1", "text": "yes"}, {"id": "r2", "text": "no"}]}
    parts = S2MADMethod.view_parts(_events(t), item)
    assert parts == [
        ViewPart(
            "stance-groups",
            "Replies by stance",
            [
                ViewGroup("Supporting (1)", [ViewItem("yes", "stance 0.90")]),
                ViewGroup("Opposing (1)", [ViewItem("no", "stance -0.80")]),
            ],
        )
    ]
    verdict = _verdict(t, method="s2mad")
    report = views.build_report(verdict, {"input": item})
    assert report.parts == parts  # the report asks the verdict's method
    html = _render(verdict, report)
    assert 'id="stance-groups"' in html and "Supporting (1)" in html
    assert views.build_report(_verdict(t, method="m"), {"input": item}).parts == []


def test_tree_nodes_nest_under_their_parents_with_their_latest_state():
    t = Trace()
    t.add("tree_node", "toe", node_id="root", claim="the claim", iteration=0)
    t.add("tree_node", "toe", node_id="a", parent_id="root", claim="sub 1", veracity=0.2)
    t.add("tree_node", "toe", node_id="b", parent_id="a", claim="sub 2")
    t.add("tree_node", "toe", node_id="root", veracity=0.7, status="resolved")
    t.add("tree_node", "toe", node_id="orphan", parent_id="gone", claim="lost parent")
    roots = views.argument_tree(_events(t))
    assert [r.id for r in roots] == ["root", "orphan"]
    assert roots[0].data["claim"] == "the claim" and roots[0].data["veracity"] == 0.7
    assert roots[0].children[0].children[0].data["claim"] == "sub 2"


def test_the_report_renders_every_view_and_lists_every_event():
    t = Trace()
    t.add("search", "wiki", cached=False, query={"text": "medal auction"}, results=["d1"])
    t.add("agent_turn", "agent", step=1, thought="search first", action="search", input="q")
    t.add("tool_call", "agent", tool="search", arguments={"q": "medal"})
    t.add("agent_turn", "pro", round=1, phase="opening", text="<script>alert(1)</script>")
    t.add("tree_node", "toe", node_id="n1", claim="root claim")
    t.add("memory_recall", "memory", action="recall", entities=["X"], hits=1)
    t.add("error", "wiki", error="timeout", attempt=1)
    doc = Document(id="d1", text="He sold the medal in 2012.", title="Auction", url="https://e.x/a")
    ev = Evidence(document=doc, quote="sold the medal", quote_verified=True)
    verdict = _verdict(t, evidence=[ev], rationale="because")
    row = JobRow(
        "j1", "2026-01-01T00:00:00", None, None, "done", {"input": {}}, "m", "claim", "x",
        "TRUE", 1.0, verdict, None, None,
    )  # fmt: skip
    report = views.build_report(verdict, row.request)
    html = templates.get_template("_report.html.j2").render(
        auth=False, job=row, verdict=verdict, report=report, warning=None
    )
    for section in ("verdict", "evidence", "debate", "trajectory", "tree", "searches", "faults"):
        assert f'id="{section}"' in html, section
    assert "<mark>sold the medal</mark>" in html and "Quote found" in html
    assert "&lt;script&gt;" in html and "<script>" not in html  # untrusted text is escaped
    assert html.count('class="kind kind-') == len(t.events)
    assert "kind-memory_recall" in html  # no special view: listed generically


def test_a_failed_verdict_and_a_job_without_one_say_so():
    failed = _verdict(Trace(), label=None, error="StructuredOutputError: no JSON", score=None)
    row = JobRow(
        "j", "t", None, None, "failed", {}, "m", "claim", "x", None, None, None, "boom", None
    )
    html = templates.get_template("_report.html.j2").render(
        auth=False, job=row, verdict=failed, report=views.build_report(failed, {}), warning=None
    )
    assert "Failed" in html and "no JSON" in html
    html = templates.get_template("_report.html.j2").render(
        auth=False, job=row, verdict=None, report=None, warning=None
    )
    assert "No verdict" in html and "boom" in html


def test_an_abstention_is_shown_as_no_decision_with_its_reason():
    verdict = _verdict(
        Trace(), label=None, score=None, abstained=True, abstain_reason="the judges disagreed"
    )
    row = JobRow("j", "t", None, None, "done", {}, "m", "claim", "x", None, None, None, None, None)
    html = templates.get_template("_report.html.j2").render(
        auth=False, job=row, verdict=verdict, report=views.build_report(verdict, {}), warning=None
    )
    assert "No decision" in html and "the judges disagreed" in html
    assert 'class="card verdict abstained"' in html


class _TallyMethod(BaseMethod):
    """A demo method of this test: its own panel counts the stages of its trace."""

    name = "tally_demo"

    async def run(self, item, ctx):  # never run here
        raise NotImplementedError

    @classmethod
    def view_parts(cls, events, item):
        steps = [e.step for e in events if isinstance(e, Stage) and e.step]
        items = [ViewItem(step, "stage") for step in steps]
        return [ViewPart("tally", f"Tally of {item.get('text')}", [ViewGroup("Steps", items)])]


def test_a_method_registered_in_a_test_adds_its_own_panel_to_the_rendered_report(monkeypatch):
    t = Trace()
    t.add("stage", "tally_demo", step="<b>counted</b>")
    verdict = _verdict(t, method="tally_demo")
    monkeypatch.setitem(registry.methods._items, "tally_demo", _TallyMethod)
    report = views.build_report(verdict, {"input": {"text": "the claim"}})
    html = _render(verdict, report)
    monkeypatch.undo()
    assert 'id="tally"' in html and "Tally of the claim" in html
    assert '&lt;b&gt;counted&lt;/b&gt; <span class="muted">(stage)</span>' in html
    # a method this server does not have: the generic panels only
    assert views.build_report(verdict, {"input": {}}).parts == []


def test_the_server_package_names_no_method():
    package = Path(views.__file__).parent
    names = ("s2mad", "radar", "zofia", "toe", "mermaid", "stance_separation")
    pattern = re.compile(r"\b(" + "|".join(names) + r")\b", re.IGNORECASE)
    found = [
        f"{path.relative_to(package)}:{n}: {line.strip()}"
        for path in sorted(package.rglob("*"))
        if path.is_file() and path.suffix in (".py", ".j2", ".js", ".html", ".css")
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


@pytest.mark.parametrize(
    ("cls", "fields"),
    [
        (ClaimsFound, {"count": 1, "claim_count": 1}),
        (ClaimChecked, {"claim_id": "c1", "status": "checked", "verdict": "TRUE"}),
        (MemoryAccess, {"action": "store", "stored": 2}),
    ],
)
def test_closed_events_refuse_a_field_they_do_not_declare(cls, fields):
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        cls(name="x", **fields)
    stored = {"kind": cls.model_fields["kind"].default, "name": "x", "t": 0.0, "data": fields}
    read = parse_event(stored)  # a stored one is still read: the stray field in its detail
    assert type(read) is cls and read.data == fields and len(read.detail) == 1


def test_the_fields_closed_events_carry_are_declared_and_round_trip():
    assert ClaimsFound(name="claims", count=0).dropped_unanchored == []
    assert MemoryAccess(name="m", action="recall").new is None
    found = ClaimsFound(name="claims", count=1, claims=[], dropped_unanchored=["c2"])
    assert parse_event(found.model_dump(mode="json")) == found
    store = MemoryAccess(name="evidence_memory", action="store", new=2, duplicates=1)
    assert parse_event(store.model_dump(mode="json")).data == {
        "action": "store", "new": 2, "duplicates": 1,
    }  # fmt: skip


def test_a_documents_claim_view_gives_the_method_hook_the_claim_as_its_input(monkeypatch):
    from veracity.server.document_views import claim_report

    t = Trace()
    t.add("stage", "tally_demo", step="read")
    claim = {"id": "c1", "text": "the medal was sold", "spans": [[0, 18]]}
    verdict = {"claims": [{"claim": claim, "verdict": _verdict(t, method="tally_demo")}]}
    row = JobRow(
        "j", "t", None, None, "done", {"input": {"kind": "document", "text": "the medal..."}},
        "tally_demo", "document", "x", None, None, verdict, None, None,
    )  # fmt: skip
    monkeypatch.setitem(registry.methods._items, "tally_demo", _TallyMethod)
    text, report = claim_report(row, "c1")
    assert text == "the medal was sold"
    assert report.parts[0].title == "Tally of the medal was sold"
