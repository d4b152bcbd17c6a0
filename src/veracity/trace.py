"""The trace of a check: typed events in order of occurrence.

Each event kind has a payload model (`EVENT_DATA`) that every consumer (CLI, server
stream, web UI, reports) may rely on. `veracity.types` re-exports these names.
"""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.redaction import scrub_value


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


EventKind = Literal[
    "llm_call", "search", "agent_turn", "ruling", "stop_signal", "tool_call", "tree_node",
    "memory_recall", "stage", "decision", "error", "note",
]  # fmt: skip


class EventData(BaseModel):
    """Base of the typed payload of a trace event.

    Each kind declares the fields every consumer (CLI, server stream, UI, reports) may
    rely on; a method may add fields of its own (kept, JSON-serialisable).
    """

    model_config = ConfigDict(extra="allow")


class LLMCallData(EventData):
    """One model call: tokens, whether it came from the cache, the request hash."""

    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    cached: bool
    model: str | None = None
    latency_s: float | None = None
    request_hash: str | None = None
    round: int | None = None  # debate round the call belongs to, when there is one
    purpose: str | None = None  # who or what the call was for (a role, stop, judge, ...)
    sample: int | None = None  # index of a sampled answer (probability estimates)


class SearchData(EventData):
    """One search of a source, with the ids/URLs it returned."""

    cached: bool
    source_kind: str | None = None
    query: dict[str, Any] | str | None = None
    results: list[dict[str, Any] | str] = Field(default_factory=list)
    latency_s: float | None = None


class AgentTurnData(EventData):
    """An agent's contribution: a debate turn or a ReAct step."""

    round: int | None = None
    phase: str | None = None
    text: str | None = None
    stance: str | None = None
    step: int | None = None
    thought: str | None = None
    action: str | None = None


class RulingData(EventData):
    """A judge's decision (a label, or that the debate is not settled yet)."""

    round: int | None = None
    decision: str | None = None
    reason: str | None = None
    probabilities: dict[str, float] | None = None


class StopSignalData(EventData):
    """A stopping policy's reading after a round (RADAR's margin and confidence, ...)."""

    round: int | None = None
    stop: bool | None = None
    margin: float | None = None
    confidence: float | None = None


class ToolCallData(EventData):
    """A tool call made by an agent (ReAct, MCP) and what it returned."""

    tool: str | None = None
    arguments: dict[str, Any] | None = None
    error: str | None = None


class TreeNodeData(EventData):
    """A node of an argument tree at one iteration (ToE)."""

    node_id: str
    parent_id: str | None = None
    claim: str | None = None
    veracity: float | None = None
    reliability: float | None = None
    status: str | None = None
    iteration: int | None = None


class MemoryData(EventData):
    """An evidence-memory recall or store."""

    action: Literal["recall", "store"]
    entities: list[str] = Field(default_factory=list)
    hits: int | None = None


class StageData(EventData):
    """A stage of a method starting or ending."""

    step: str | None = None


class ErrorData(EventData):
    """A fault: retried (``attempt``) or final (``attempts`` / ``fatal``)."""

    error: str


EVENT_DATA: dict[str, type[EventData]] = {
    "llm_call": LLMCallData,
    "search": SearchData,
    "agent_turn": AgentTurnData,
    "ruling": RulingData,
    "stop_signal": StopSignalData,
    "tool_call": ToolCallData,
    "tree_node": TreeNodeData,
    "memory_recall": MemoryData,
    "stage": StageData,
    "decision": EventData,
    "error": ErrorData,
    "note": EventData,
}


class TraceEvent(_Strict):
    """One step of a check, in order of occurrence.

    The JSON form is stable: ``{"kind", "name", "t", "data"}``; `data` follows the
    kind's payload model (`EVENT_DATA`), available typed as `payload`.
    """

    kind: EventKind
    name: str  # who or what: an agent role, a source name, a stage name
    t: float  # seconds since the trace started
    data: dict[str, Any] = Field(default_factory=dict)

    @property
    def payload(self) -> EventData:
        """`data` as the kind's typed payload model."""
        return EVENT_DATA[self.kind].model_validate(self.data)


class Trace(_Strict):
    """The ordered, JSON-serialisable record of everything a check did."""

    events: list[TraceEvent] = Field(default_factory=list)
    started: float = Field(default_factory=time.time, exclude=True)

    def add(self, kind: EventKind, name: str, **data: Any) -> TraceEvent:
        """Append an event; `data` is validated against the kind's payload model.

        Raises:
            ValueError: `data` does not fit the kind (a bug in the caller).
        """
        model = EVENT_DATA.get(kind)
        if model is None:
            raise ValueError(f"unknown trace event kind {kind!r}")
        payload = model.model_validate(data)
        clean = scrub_value(payload.model_dump(mode="json", exclude_unset=True))
        event = TraceEvent(kind=kind, name=name, t=round(time.time() - self.started, 4), data=clean)
        self.events.append(event)
        return event

    def of_kind(self, kind: EventKind) -> list[TraceEvent]:
        return [e for e in self.events if e.kind == kind]
