"""Every trace event class but `OtherEvent` is closed (issue 39 item 6): an emitter that
passes a field its class does not declare fails where it builds the event, a method's own
figures go in the one declared place (``detail``), and stored traces written before (with
such fields loose in ``data``) still read, with those fields in ``detail``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError
from test_prompts_pinned import _pinned, build, cases, key
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core import context
from veracity.core.events import (
    EVENT_CLASSES,
    OtherEvent,
    Stage,
    TraceEvent,
    make_event,
    parse_event,
)
from veracity.core.trace import event_sentence
from veracity.evaluation.store import RunStore

OLD_RUN = Path(__file__).parents[1] / "data" / "old_run_acbda6b"


@pytest.mark.parametrize(("name", "layout"), cases(), ids=[key(n, lo) for n, lo in cases()])
async def test_every_method_emits_only_fields_its_events_declare(name, layout):
    """Each method checks the pinned example on the schema-filling model; every event it
    emits (nested checks' too) is of a known class with no undeclared field, and the check
    ends as it did when the prompts were pinned (a refused event would end it in an
    error)."""
    from veracity.llm.client import ManagedLLM
    from veracity.testing.injection import documents, make_input
    from veracity.testing.schema import schema_llm

    seen: list[TraceEvent] = []
    method = build(name, ManagedLLM(schema_llm()), documents(0), layout)
    with context.observe(seen.append):
        verdict = await method.check(make_input(name, 0, "claim", None))
    pinned = _pinned().get(key(name, layout))
    if pinned is not None:
        assert verdict.error == pinned["error"]
    assert seen
    loose = {
        f"{type(e).__name__}.{field}"
        for e in seen
        if not isinstance(e, OtherEvent)
        for field in (e.model_extra or {})
    }
    assert loose == set(), f"{name}: undeclared event fields {sorted(loose)}"
    assert not [e for e in seen if isinstance(e, OtherEvent)]


@pytest.mark.parametrize("cls", sorted(set(EVENT_CLASSES.values()), key=lambda c: c.__name__))
def test_every_known_class_refuses_an_undeclared_field_and_keeps_detail(cls):
    kind = cls.model_fields["kind"].default
    required = {
        n: {"int": 1, "bool": False, "str": "x"}.get(getattr(f.annotation, "__name__", ""), "x")
        for n, f in cls.model_fields.items()
        if f.is_required() and n != "name"
    }
    if kind == "agent_turn" and cls.__name__ == "AgentStep":
        required["step"] = 1
    if kind == "memory_recall":
        required["action"] = "recall"
    if kind == "claim_checked":
        required["status"] = "checked"
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        cls(name="n", **required, not_a_field=1)
    with pytest.raises(ValueError, match="not_a_field"):
        make_event(kind, "n", **required, not_a_field=1)  # the string form too
    event = cls(name="n", **required, detail={"own": (1, 2)})
    assert event.detail == {"own": [1, 2]}  # JSON values
    stored = event.model_dump(mode="json")
    assert stored["data"]["own"] == [1, 2] and "detail" not in stored["data"]
    back = parse_event(stored)
    assert type(back) is cls and back == event


def test_detail_cannot_repeat_a_declared_field():
    with pytest.raises(ValidationError, match="detail repeats declared fields: round"):
        Stage(name="debate", step="round", detail={"round": 2})


def test_a_stored_run_with_fields_no_class_declares_reads_them_into_detail(tmp_path):
    """The run acbda6b wrote, with events as an older version stored them (S2MAD's stance
    split and a stopping reading loose in ``data``): they read as their classes, the loose
    fields in ``detail``, write back unchanged, and the report shows them."""
    run = Path(shutil.copytree(OLD_RUN, tmp_path / "old"))
    path = run / "predictions.jsonl"
    lines = path.read_text().splitlines()
    first = json.loads(lines[0])
    older = [
        {"kind": "stage", "name": "s2mad", "t": 0.1,
         "data": {"step": "stance_separation", "mode": "stance", "p": ["r1"], "n": []}},
        {"kind": "stop_signal", "name": "stop_agent", "t": 0.2,
         "data": {"round": 1, "stop": False, "margin": -0.4, "p_stop": 0.3}},
    ]  # fmt: skip
    first["verdict"]["trace"]["events"][1:1] = older
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")

    events = RunStore(run).read_predictions()[0].verdict.trace.events
    assert not [e for e in events if isinstance(e, OtherEvent)]
    stage, signal = events[1], events[2]
    assert stage.step == "stance_separation" and stage.detail == {
        "mode": "stance", "p": ["r1"], "n": [],
    }  # fmt: skip
    assert signal.margin == -0.4 and signal.detail == {"p_stop": 0.3}
    again = [e.model_dump(mode="json") for e in events]
    assert again == first["verdict"]["trace"]["events"]  # the JSON form is unchanged
    assert event_sentence(stage) == "S2mad: stance separation (mode: stance; p: r1; n: none)"

    result = CliRunner().invoke(app, ["report", str(run)])
    assert result.exit_code == 0, result.output
    assert (
        "S2mad: stance separation (mode: stance; p: r1; n: none)"
        in (run / "report.html").read_text()
    )
