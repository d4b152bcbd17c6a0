"""Trace events as classes (`veracity.core.events`): emitted as objects, required fields
enforced, one union discriminated by kind, and consumers that dispatch on the class while
an unknown kind still renders generically."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from veracity.cli.progress import CheckActivity
from veracity.core import context
from veracity.core.events import (
    AgentStep,
    AgentTurn,
    Fault,
    ModelCall,
    OtherEvent,
    SearchDone,
    Stage,
    ToolCall,
    TraceEvent,
    parse_event,
)
from veracity.core.trace import Trace, event_sentence
from veracity.mcp.server import _progress_text

SECRET = "sk-live-abcdefghijklmnop1234"


def test_an_emitted_event_is_recorded_stamped_scrubbed_and_observed():
    seen: list[TraceEvent] = []
    with context.check_context() as ctx, context.observe(seen.append):
        url = f"https://h.test/v1?api_key={SECRET}"
        ctx.emit(Fault(name="llm", error=f"cannot reach {url}", attempt=1))
        ctx.emit(SearchDone(name="wiki", cached=False, query="medal", results=["a"]))
    fault, search = ctx.trace.events
    assert seen == [fault, search]  # observers get the recorded (scrubbed) objects
    assert isinstance(fault, Fault) and fault.attempt == 1 and SECRET not in fault.error
    assert isinstance(search, SearchDone) and search.t >= fault.t >= 0
    assert SECRET not in ctx.trace.model_dump_json()
    assert ctx.trace.of_class(SearchDone) == [search]


@pytest.mark.parametrize(
    ("make", "missing"),
    [
        (lambda: ModelCall(name="x", completion_tokens=1, cached=False), "prompt_tokens"),
        (lambda: SearchDone(name="wiki"), "cached"),
        (lambda: ToolCall(name="planner", arguments={}), "tool"),
        (lambda: Fault(name="web", attempt=1), "error"),
        (lambda: AgentStep(name="react", thought="why"), "step"),
    ],
)
def test_a_class_refuses_an_event_without_its_required_fields(make, missing):
    with pytest.raises(ValidationError, match=missing):
        make()


def test_the_union_picks_the_class_by_kind_and_keeps_the_stored_form():
    step = {"kind": "agent_turn", "name": "react", "t": 1.5, "data": {"step": 2, "thought": "t"}}
    turn = {"kind": "agent_turn", "name": "judge", "t": 2.0, "data": {"round": 1, "text": "no"}}
    probe = {"kind": "plugin_probe", "name": "mine", "t": 3.0, "data": {"score": 0.5}}
    trace = Trace.model_validate({"events": [step, turn, probe]})
    assert [type(e) for e in trace.events] == [AgentStep, AgentTurn, OtherEvent]
    assert trace.events[0].step == 2 and trace.events[1].text == "no"
    assert trace.events[2].data == {"score": 0.5}
    assert trace.model_dump(mode="json")["events"] == [step, turn, probe]
    assert parse_event(probe).kind == "plugin_probe"


def test_a_plugin_emits_a_kind_of_its_own_and_every_consumer_shows_it_generically():
    with context.check_context() as ctx:
        ctx.emit(OtherEvent(kind="plugin_probe", name="mine", score=0.5, ok=True))
        with pytest.raises(ValueError, match="unknown trace event kind"):
            ctx.event("plugin_probe", "mine", score=0.5)  # the string form knows its kinds
    (event,) = ctx.trace.events
    assert event_sentence(event) == "Plugin probe from mine: score: 0.5; ok: yes"
    assert _progress_text(event) is None  # MCP progress shows the classes it follows
    activity = CheckActivity(started=0.0)
    assert activity.observe(event, 1.0) is False and activity.calls == 0


def test_the_cli_and_mcp_progress_dispatch_on_the_class():
    activity = CheckActivity(started=0.0)
    call = ModelCall(name="radar:judge", prompt_tokens=3, completion_tokens=1, cached=False)
    activity.observe(Stage(name="react", step="start"), 0.0)
    activity.observe(call, 1.0)
    assert (activity.calls, activity.actor) == (1, "radar:judge")
    assert activity.observe(AgentStep(name="react", step=1, steps=4), 2.0) is True
    assert activity.loop is not None and activity.loop.text() == "step 2/4"
    activity.observe(Fault(name="web", error="timeout", search_failed=True), 3.0)
    assert activity.failed_searches == 1
    assert _progress_text(call) == "llm_call: radar:judge"
    assert _progress_text(Stage(name="radar", step="round")) == "radar round"
    assert _progress_text(Fault(name="web", error="timeout")) is None
