"""Trace events in words (`veracity.core.trace.describe_event`): what the web UI's progress
list, its full trace and the run report show instead of JSON."""

from __future__ import annotations

import pytest

from veracity.core.events import EVENT_KINDS
from veracity.core.trace import Trace, describe_event, event_sentence


def _sentences(trace: Trace) -> list[str]:
    return [event_sentence(e) for e in trace.events]


def test_every_kind_of_event_reads_as_a_sentence_not_as_json():
    t = Trace()
    t.add("llm_call", "radar:judge", prompt_tokens=900, completion_tokens=120, cached=True,
          round=2, purpose="judge")  # fmt: skip
    t.add("search", "wikipedia", cached=False, query={"text": "Klitschko  medal", "top_k": 5},
          results=["a", "b", "c", "d"], source_kind="wikipedia")  # fmt: skip
    t.add("agent_turn", "politician", round=2, phase="rebuttal", stance="TRUE", text="Look again.")
    t.add("ruling", "judge", round=2, decision="TRUE", confidence=0.9, reason="it was sold")
    t.add("stop_signal", "stop_agent", round=1, stop=False, margin=-0.4, detail={"p_stop": 0.3})
    t.add("tool_call", "planner", tool="search", arguments={"q": "medal"}, error="timeout")
    t.add("tree_node", "toe", node_id="a1", claim="He sold it", veracity=0.9, status="supported")
    t.add("memory_recall", "memory", action="recall", entities=["Klitschko"], hits=2)
    t.add("stage", "radar", step="round", round=2, rounds=5)
    t.add("decision", "stance_scorer", detail={"scores": {"r1": 0.9, "r2": -0.8}})
    t.add("error", "wikipedia", error="SourceUnreachable: timeout", attempts=3)
    t.add("note", "setup", text="no sources given: rag searches the default local corpus")
    t.add("claims_found", "claims", count=2, claims=[{"id": "c1", "spans": [[0, 9]]}])
    t.add("claim_checked", "claims", claim_id="c1", status="checked", label="false",
          score=0.0, support="refuted")  # fmt: skip
    assert {e.kind for e in t.events} == EVENT_KINDS  # one of each kind
    assert _sentences(t) == [
        "Model call for judge, round 2: 1,020 tokens (cached)",
        "Searched wikipedia for “Klitschko medal”: 4 results",
        "Politician, round 2, rebuttal (TRUE): Look again.",
        "Judge ruled TRUE (90%) after round 2: it was sold",
        "Stop agent after round 1: continue, margin -0.40 (p stop: 0.3)",
        "Planner called search (q: medal), which failed: timeout",
        "Argument a1 (supported): He sold it — veracity 90%",
        "Evidence memory recall for Klitschko: 2 hits",
        "Radar: round 2 of 5",
        "Stance scorer decided (scores: (r1: 0.9; r2: -0.8))",
        "Fault in wikipedia: SourceUnreachable: timeout (gave up after 3 attempts)",
        "Setup: no sources given: rag searches the default local corpus",
        "Found 2 claims to check",
        "Claim c1: false (score 0%), refuted",
    ]


def test_steps_stages_retries_and_a_source_bound_to_another_role():
    t = Trace()
    t.add("agent_turn", "react", step=2, steps=6, action="search", input="medal", thought="why")
    t.add(
        "stage", "s2mad", step="stance_separation", detail={"mode": "stance", "p": ["r1"], "n": []}
    )
    t.add("error", "web", error="SourceRateLimited: 429", attempt=1, retry_in_s=1.25)
    t.add("search", "web", cached=True, query="aspirin", results=[], source_kind="local")
    t.add("ruling", "judge", round=1)
    t.add("note", "input_limits", detail={"cuts": [{"field": "body", "kept": 4000}]})
    assert _sentences(t) == [
        "React, step 2 of 6: search “medal” — why",
        "S2mad: stance separation (mode: stance; p: r1; n: none)",
        "Fault in web: SourceRateLimited: 429 (attempt 1, retrying in 1.2 s)",
        "Searched web (local) for “aspirin”: 0 results (cached)",
        "Judge: no ruling yet after round 1",
        "Input limits: cuts: 1 item",
    ]


def test_an_unknown_kind_and_free_fields_come_out_as_key_value_pairs():
    data = {"score": 0.12345, "ok": True, "nested": {"a": 1}, "none": None}
    text = describe_event("custom_probe", "my_plugin", data)
    assert text == "Custom probe from my_plugin: score: 0.123; ok: yes; nested: (a: 1)"
    assert "{" not in text and '"' not in text


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("error", {"error": "x", "attempts": "three"}),
        ("search", {"results": 7, "query": 3}),
        ("stop_signal", {"margin": "wide", "confidence": "high"}),
        ("llm_call", {"prompt_tokens": "many"}),
    ],
)
def test_fields_of_an_odd_type_never_break_the_sentence(kind, data):
    text = describe_event(kind, "someone", data)
    assert text and "someone" in text.lower()


def test_long_free_text_is_cut_and_white_space_folded():
    text = describe_event("agent_turn", "pro", {"round": 1, "text": "word\n\n  " * 200})
    assert len(text) < 200 and text.endswith("…") and "\n" not in text
