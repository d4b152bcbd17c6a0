"""The trace of a check: typed events (`veracity.core.events`) in order of occurrence,
and each event in words for people (`event_sentence`; `describe_event` for a stored one).

Stored JSON becomes events by one road, `veracity.core.events.parse_event`: a stored
trace's events (`Trace`), a running check's events read back from the server's job store
(`describe_event`), and an event as it is recorded (`Trace.record` stamps its time and
scrubs credentials on the JSON form, then reads it back the same way). Building an event
from keyword fields is `make_event` (strict; for code that has the kind as a string).

`veracity.core.types` re-exports `Trace`, `TraceEvent` and `EventKind`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidatorFunctionWrapHandler, WrapValidator

from veracity.core.events import (
    EVENT_CLASSES,
    AgentStep,
    AgentTurn,
    ClaimChecked,
    ClaimsFound,
    Decision,
    Fault,
    KnownEvent,
    MemoryAccess,
    ModelCall,
    Note,
    OtherEvent,
    Ruling,
    SearchDone,
    Stage,
    StopSignal,
    ToolCall,
    TraceEvent,
    TreeNode,
    event_tag,
    make_event,
    parse_event,
)
from veracity.core.redaction import scrub_value

E = TypeVar("E", bound=TraceEvent)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


EventKind = Literal[
    "llm_call", "search", "agent_turn", "ruling", "stop_signal", "tool_call", "tree_node",
    "memory_recall", "stage", "decision", "error", "note", "claims_found", "claim_checked",
]  # fmt: skip


def _stored(value: Any, _handler: ValidatorFunctionWrapHandler) -> TraceEvent:
    """A trace's event, stored or live, read by `parse_event` (which refuses nothing)."""
    return parse_event(value)


class Trace(_Strict):
    """The ordered, JSON-serialisable record of everything a check did."""

    events: list[Annotated[KnownEvent, WrapValidator(_stored)]] = Field(default_factory=list)
    started: float = Field(default_factory=time.time, exclude=True)

    def record(self, event: TraceEvent) -> TraceEvent:
        """Append `event`, stamped with its time and with credentials scrubbed from its
        payload; the recorded event is returned."""
        clean = scrub_value(event.model_dump(mode="json"))
        clean["t"] = round(time.time() - self.started, 4)
        recorded = type(event).model_validate(clean)  # the stored form: as parse_event reads it
        self.events.append(recorded)
        return recorded

    def add(self, kind: EventKind, name: str, **data: Any) -> TraceEvent:
        """Append the event of a known `kind` made from keyword fields (`make_event`).

        Raises:
            ValueError: an unknown kind, or `data` that does not fit it (a bug in the caller).
        """
        return self.record(make_event(kind, name, **data))

    def of_kind(self, kind: str) -> list[TraceEvent]:
        return [e for e in self.events if e.kind == kind]

    def of_class(self, cls: type[E]) -> list[E]:
        """The events of one class, in order."""
        return [e for e in self.events if isinstance(e, cls)]


# --------------------------------------------------------------------------- sentences

SENTENCE_CHARS = 160  # free text (a turn, a query, an error) is cut here in a sentence


def describe_event(kind: str, name: str, data: Mapping[str, Any]) -> str:
    """One plain sentence saying what a stored trace event records, for people: progress
    lists, reports ("Searched wikipedia for “…”: 4 results", "Politician, round 2
    (rebuttal): …", "Setup: …"). `data` is the event's payload as stored (see
    `event_sentence`).

    Only for events read back from storage as JSON (the server's job store streaming a
    running check's events): the one place a dict is parsed into its event class here.
    Code that holds an event object calls `event_sentence`; the web UI reads a stored
    verdict's trace back into classes once (`veracity.server.views.stored_events`).

    Every kind has a sentence of its own; a kind it does not know, and fields a sentence
    does not name, come out as ``key: value`` pairs, never as JSON. The sentence is plain
    text that quotes untrusted parts (queries, turns, errors): escape it where it is shown.
    """
    return event_sentence(parse_event({"kind": kind, "name": name, "data": dict(data)}))


def event_sentence(event: TraceEvent) -> str:
    """The sentence of `event`, chosen by its class (see `describe_event`).

    An `OtherEvent` of a known kind (a stored event that does not fit its class) gets its
    kind's sentence where its fields allow; any other event comes out as pairs.
    """
    data = event.data
    cls: type[TraceEvent] | None = type(event)
    if isinstance(event, OtherEvent):
        cls = EVENT_CLASSES.get(event_tag({"kind": event.kind, "data": data}))
    sentence = _SENTENCES.get(cls) if cls is not None else None
    if sentence is not None:
        try:
            return sentence(event.name, data)
        except (TypeError, ValueError, KeyError, AttributeError):  # a field of an odd type
            pass
    return f"{_who(event.kind)} from {event.name}: {_pairs(data)}".rstrip(": ")


def _short(value: Any, limit: int = SENTENCE_CHARS) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _who(name: str) -> str:
    """`name` to start a sentence: ``round_judge`` -> ``Round judge``."""
    text = name.replace("_", " ").strip()
    return text[:1].upper() + text[1:]


def _plural(n: Any, word: str) -> str:
    count = f"{n:,}" if isinstance(n, int) else str(n)
    return f"{count} {word}{'' if n == 1 else 's'}"


def _percent(value: Any) -> str:
    return f"{value * 100:.0f}%" if isinstance(value, int | float) else str(value)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3g}"
    if isinstance(value, Mapping):
        return f"({_pairs(value, limit=60)})" if value else "none"
    if isinstance(value, list | tuple):
        if not value:
            return "none"
        if len(value) <= 5 and all(isinstance(v, str | int | float) for v in value):
            return _short(", ".join(_value(v) for v in value), 80)
        return _plural(len(value), "item")
    return _short(value, 80)


def _pairs(data: Mapping[str, Any], skip: tuple[str, ...] = (), limit: int = 240) -> str:
    """``key: value; key: value`` of the fields of `data` not in `skip` (unset ones left out)."""
    parts = [
        f"{k.replace('_', ' ')}: {_value(v)}"
        for k, v in data.items()
        if k not in skip and v is not None
    ]
    return _short("; ".join(parts), limit)


def _with_rest(text: str, data: Mapping[str, Any], named: tuple[str, ...]) -> str:
    rest = _pairs(data, named)
    return f"{text} ({rest})" if rest else text


def _llm_call(name: str, d: Mapping[str, Any]) -> str:
    tokens = (d.get("prompt_tokens") or 0) + (d.get("completion_tokens") or 0)
    where = f", round {d['round']}" if d.get("round") is not None else ""
    cached = " (cached)" if d.get("cached") else ""
    return f"Model call for {d.get('purpose') or name}{where}: {_plural(tokens, 'token')}{cached}"


def _search(name: str, d: Mapping[str, Any]) -> str:
    query = d.get("query")
    text = query.get("text") if isinstance(query, Mapping) else query
    kind = d.get("source_kind")
    source = f"{name} ({kind})" if kind and kind != name else name
    found = _plural(len(d.get("results") or []), "result")
    cached = " (cached)" if d.get("cached") else ""
    asked = f" for “{_short(text, 100)}”" if text else ""
    return f"Searched {source}{asked}: {found}{cached}"


def _agent_step(name: str, d: Mapping[str, Any]) -> str:
    steps = f" of {d['steps']}" if d.get("steps") else ""
    action = str(d.get("action") or "")
    if action and d.get("input"):
        action += f" “{_short(d['input'], 80)}”"
    said = " — ".join(p for p in (action, _short(d.get("thought") or "")) if p)
    return f"{_who(name)}, step {d['step']}{steps}: {said}".rstrip(": ")


def _agent_turn(name: str, d: Mapping[str, Any]) -> str:
    where = [f"round {d['round']}" if d.get("round") is not None else "", d.get("phase") or ""]
    head = ", ".join([_who(name), *(w for w in where if w)])
    if d.get("stance"):
        head += f" ({d['stance']})"
    return f"{head}: {_short(d['text'])}" if d.get("text") else head


def _ruling(name: str, d: Mapping[str, Any]) -> str:
    after = f" after round {d['round']}" if d.get("round") is not None else ""
    if d.get("decision"):
        sure = f" ({_percent(d['confidence'])})" if d.get("confidence") is not None else ""
        text = f"{_who(name)} ruled {d['decision']}{sure}{after}"
    else:
        text = f"{_who(name)}: no ruling yet{after}"
    return f"{text}: {_short(d['reason'])}" if d.get("reason") else text


def _stop_signal(name: str, d: Mapping[str, Any]) -> str:
    after = f" after round {d['round']}" if d.get("round") is not None else ""
    reading = {True: "stop", False: "continue"}.get(d.get("stop"), "reading")
    figures = [
        f"margin {d['margin']:.2f}" if isinstance(d.get("margin"), int | float) else "",
        f"confidence {_percent(d['confidence'])}" if d.get("confidence") is not None else "",
    ]
    text = ", ".join([f"{_who(name)}{after}: {reading}", *(f for f in figures if f)])
    return _with_rest(text, d, ("round", "stop", "margin", "confidence"))


def _tool_call(name: str, d: Mapping[str, Any]) -> str:
    args = d.get("arguments")
    text = f"{_who(name)} called {d.get('tool') or 'a tool'}"
    if isinstance(args, Mapping) and args:
        text += f" ({_pairs(args, limit=100)})"
    return f"{text}, which failed: {_short(d['error'])}" if d.get("error") else text


def _tree_node(name: str, d: Mapping[str, Any]) -> str:
    status = f" ({d['status']})" if d.get("status") else ""
    text = f"Argument {d.get('node_id')}{status}"
    text += f": {_short(d['claim'])}" if d.get("claim") else " updated"
    scores = [
        f"veracity {_percent(d['veracity'])}" if d.get("veracity") is not None else "",
        f"reliability {_percent(d['reliability'])}" if d.get("reliability") is not None else "",
    ]
    shown = ", ".join(s for s in scores if s)
    return f"{text} — {shown}" if shown else text


def _memory(name: str, d: Mapping[str, Any]) -> str:
    about = f" for {_value(d['entities'])}" if d.get("entities") else ""
    if d.get("action") == "store":
        return f"Evidence memory stored{about}"
    return f"Evidence memory recall{about}: {_plural(d.get('hits') or 0, 'hit')}"


def _stage(name: str, d: Mapping[str, Any]) -> str:
    step = str(d.get("step") or "stage").replace("_", " ")
    if d.get("round") is not None:
        step = f"round {d['round']}" if step == "round" else f"{step}, round {d['round']}"
        step += f" of {d['rounds']}" if d.get("rounds") else ""
    shown = ("step", "round", "rounds", "prompts")  # prompt hashes are for reruns, not people
    return _with_rest(f"{_who(name)}: {step}", d, shown)


def _decision(name: str, d: Mapping[str, Any]) -> str:
    said = d.get("label") or d.get("decision")
    text = f"{_who(name)} decided {said}" if said else f"{_who(name)} decided"
    return _with_rest(text, d, ("label", "decision"))


def _error(name: str, d: Mapping[str, Any]) -> str:
    text = f"Fault in {name}: {_short(d.get('error') or 'unknown error')}"
    if d.get("attempt") is not None:
        delay = d.get("retry_in_s")
        wait = f" in {delay:.1f} s" if isinstance(delay, int | float) else ""
        return f"{text} (attempt {d['attempt']}, retrying{wait})"
    if d.get("attempts") is not None:
        return f"{text} (gave up after {_plural(d['attempts'], 'attempt')})"
    return text


def _note(name: str, d: Mapping[str, Any]) -> str:
    said = d.get("text") or d.get("note")
    if said:
        return _with_rest(f"{_who(name)}: {_short(said, 240)}", d, ("text", "note"))
    return f"{_who(name)}: {_pairs(d)}".rstrip(": ")


def _claims_found(name: str, d: Mapping[str, Any]) -> str:
    return f"Found {_plural(d.get('count') or 0, 'claim')} to check"


def _claim_checked(name: str, d: Mapping[str, Any]) -> str:
    status = d.get("status")
    text = f"Claim {d.get('claim_id')}"
    if status == "error":
        return f"{text} failed: {_short(d.get('error') or 'unknown error')}"
    if status == "not_checkworthy":
        return f"{text} not checked (not a factual claim)"
    if status == "abstained":
        return f"{text}: no decision"
    said = d.get("label") or "checked"
    score = f" (score {_percent(d['score'])})" if d.get("score") is not None else ""
    support = f", {d['support']}" if d.get("support") else ""
    return f"{text}: {said}{score}{support}"


_SENTENCES: dict[type[TraceEvent], Callable[[str, Mapping[str, Any]], str]] = {
    ModelCall: _llm_call,
    SearchDone: _search,
    AgentStep: _agent_step,
    AgentTurn: _agent_turn,
    Ruling: _ruling,
    StopSignal: _stop_signal,
    ToolCall: _tool_call,
    TreeNode: _tree_node,
    MemoryAccess: _memory,
    Stage: _stage,
    Decision: _decision,
    Fault: _error,
    Note: _note,
    ClaimsFound: _claims_found,
    ClaimChecked: _claim_checked,
}
