"""Trace events: one class per kind, in a union discriminated by ``kind``.

Every step a check records is an instance of one of these classes, emitted as an object
(``ctx.emit(SearchDone(name="wikipedia", cached=False, results=ids))``). The fields a
consumer may rely on are declared (those every emitter gives are required). Consumers (the
CLI, the server, the MCP server, reports) dispatch on the class; what only one method
shows comes from that method (`veracity.methods.base.BaseMethod.view_parts`).

Closed classes. Every class but `OtherEvent` refuses a field it does not declare: a typo
or a new field is an error where the event is built, not a silent payload. A class
declares the fields its kind means everywhere (a stage's ``step`` and ``round``, a model
call's tokens, a tool call's documents); what one method alone records (S2MAD's ``p``/``n``
split, ToE's ``node``, RADAR's pool sizes) goes in the one declared place every class has,
``detail``: a dict of JSON values (``Stage(name=..., step="split", detail={"p": 3})``).
`OtherEvent`, the class of kinds this version does not know (a plugin's), stays open.

The JSON form is the same as before the classes existed, ``{"kind", "name", "t",
"data"}`` with the payload under ``data``; ``detail``'s entries sit in ``data`` beside the
declared fields, so stored runs and live streams look as they did. Reading that form
back (`parse_event`, a stored trace) puts a field the class does not declare into
``detail`` instead of refusing it, so a run written by an older version still reads. A
stored event whose kind is unknown (a plugin's, a newer version's) or that does not fit
its class reads as an `OtherEvent`, which every consumer renders generically.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    JsonValue,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    Tag,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import to_jsonable_python

_ENVELOPE = ("kind", "name", "t")
_NOT_PAYLOAD = (*_ENVELOPE, "detail")


class TraceEvent(BaseModel):
    """Base of every trace event: what (``kind``), who (``name``), when (``t``).

    Build a subclass (`SearchDone`, `Stage`, ...); `parse_event` turns stored JSON, old or
    new, into the right class. `data` is the payload (the fields given, ``detail``'s
    entries among them) as a dict, as it appears in the JSON.
    """

    model_config = ConfigDict(extra="forbid")

    kind: str
    name: str  # who or what: an agent role, a source name, a stage name
    t: float = 0.0  # seconds since the trace started (set when the event is recorded)
    # what one method alone records with the event; in the JSON form beside the fields
    detail: dict[str, JsonValue] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _open_envelope(cls, value: Any) -> Any:
        """Accept the stored form ``{"kind", "name", "t", "data": {...}}``: a field of the
        payload that the class does not declare goes into ``detail``."""
        if not (
            isinstance(value, Mapping)
            and "kind" in value
            and isinstance(value.get("data"), Mapping)
        ):
            return value
        head = {k: v for k, v in value.items() if k != "data"}
        if cls.model_config.get("extra") != "forbid":  # OtherEvent keeps what it reads
            return {**value["data"], **head}
        fields, detail = {}, {}
        for key, item in value["data"].items():
            (fields if key in cls.model_fields and key not in _NOT_PAYLOAD else detail)[key] = item
        return {**fields, **head, **({"detail": detail} if detail else {})}

    @field_validator("detail", mode="before")
    @classmethod
    def _jsonable(cls, value: Any) -> Any:
        """Tuples, paths and models become their JSON values; a key that names a declared
        field is refused (it would be the same key twice in the JSON form)."""
        value = to_jsonable_python(value)
        if isinstance(value, Mapping):
            clash = sorted(k for k in value if k in cls.model_fields)
            if clash:
                raise ValueError(f"detail repeats declared fields: {', '.join(clash)}")
        return value

    @model_serializer(mode="wrap")
    def _close_envelope(
        self, handler: SerializerFunctionWrapHandler, info: SerializationInfo
    ) -> dict[str, Any]:
        flat = handler(self)
        keep = self.model_fields_set | set(self.model_extra or ())
        data = {k: v for k, v in flat.items() if k in keep and k not in _NOT_PAYLOAD}
        data.update(flat.get("detail") or {})
        return {"kind": self.kind, "name": self.name, "t": self.t, "data": data}

    @property
    def data(self) -> dict[str, Any]:
        """The payload: the fields given when the event was made (or stored), with
        ``detail``'s entries (and an `OtherEvent`'s extras) beside them."""
        keep = self.model_fields_set | set(self.model_extra or ())
        full = {**self.__dict__, **(self.model_extra or {})}
        data = {k: v for k, v in full.items() if k in keep and k not in _NOT_PAYLOAD}
        return {**data, **self.detail}


class ModelCall(TraceEvent):
    """One model call: tokens, whether it came from the cache, the request hash."""

    kind: Literal["llm_call"] = "llm_call"
    prompt_tokens: int = Field(ge=0)
    completion_tokens: int = Field(ge=0)
    cached: bool
    model: str | None = None
    latency_s: float | None = None
    request_hash: str | None = None
    round: int | None = None  # debate round the call belongs to, when there is one
    purpose: str | None = None  # who or what the call was for (a role, stop, judge, ...)
    sample: int | None = None  # index of a sampled answer (probability estimates)
    cached_prompt_tokens: int | None = Field(default=None, ge=0)  # reused by the server
    finish_reason: str | None = None
    temperature: float | None = None
    priced_as: str | None = None  # the price list's model, when the reply named another
    messages: list[dict[str, Any]] | None = None  # the request (when prompts are traced) ...
    response: str | None = None  # ... and the reply's text


class SearchDone(TraceEvent):
    """One search of a source, with the ids/URLs it returned."""

    kind: Literal["search"] = "search"
    cached: bool
    source_kind: str | None = None
    query: dict[str, Any] | str | None = None
    results: list[dict[str, Any] | str] = Field(default_factory=list)
    latency_s: float | None = None
    http_live: int | None = None  # HTTP answers fetched live ...
    http_cached: int | None = None  # ... and from the HTTP cache


class AgentTurn(TraceEvent):
    """An agent's contribution that is not a loop step: a debate turn, an analyst's report."""

    kind: Literal["agent_turn"] = "agent_turn"
    round: int | None = None
    phase: str | None = None
    text: str | None = None
    stance: str | None = None


class AgentStep(TraceEvent):
    """One step of an agent loop (ReAct, FIRE, MERMAID's executor): thought and action."""

    kind: Literal["agent_turn"] = "agent_turn"
    step: int
    steps: int | None = None  # the step limit of the loop the step belongs to
    thought: str | None = None
    action: str | None = None
    input: Any = None  # what the action was given (a query, arguments)
    answer: str | None = None
    observation: str | None = None  # what the action returned, as the agent read it


class Ruling(TraceEvent):
    """A judge's decision (a label, or ``decision=None``: the debate is not settled yet)."""

    kind: Literal["ruling"] = "ruling"
    round: int | None = None
    decision: str | None = None
    reason: str | None = None
    confidence: float | None = None
    probabilities: dict[str, float] | None = None
    answer: str | None = None  # the judge's reply as read (before mapping to a label)
    estimator: str | None = None  # how its probabilities were read (logprobs, sampling)
    matched_mass: float | None = None  # probability mass that matched a label


class StopSignal(TraceEvent):
    """A stopping policy's reading after a round (RADAR's margin and confidence, ...)."""

    kind: Literal["stop_signal"] = "stop_signal"
    round: int | None = None
    stop: bool | None = None
    margin: float | None = None
    confidence: float | None = None
    reason: str | None = None  # why it stopped or went on


class ToolCall(TraceEvent):
    """A tool call made by an agent (ReAct, FIRE, MCP) and whether it failed."""

    kind: Literal["tool_call"] = "tool_call"
    tool: str
    arguments: dict[str, Any] | None = None
    error: str | None = None
    step: int | None = None
    round: int | None = None
    reason: str | None = None  # why the agent called it
    documents: list[str] | None = None  # ids of the documents it returned
    from_memory: bool | None = None  # replayed from the agent's memory, not called
    latency_s: float | None = None


class TreeNode(TraceEvent):
    """A node of an argument tree at one iteration (ToE)."""

    kind: Literal["tree_node"] = "tree_node"
    node_id: str
    parent_id: str | None = None
    claim: str | None = None
    veracity: float | None = None
    reliability: float | None = None
    status: str | None = None
    iteration: int | None = None


class MemoryAccess(TraceEvent):
    """An evidence-memory recall or store."""

    kind: Literal["memory_recall"] = "memory_recall"
    action: Literal["recall", "store"]
    entities: list[str] = Field(default_factory=list)
    hits: int | None = None  # a recall: documents found
    new: int | None = None  # a store: documents not stored before ...
    duplicates: int | None = None  # ... and ones already stored


class Stage(TraceEvent):
    """A stage of a method starting (``step="start"``), ending (``"end"``) or passing."""

    kind: Literal["stage"] = "stage"
    step: str | None = None
    round: int | None = None  # a debate round starting (``step="round"``) ...
    rounds: int | None = None  # ... and the number of the last round it may run
    phase: str | None = None  # the debate phase of a round (opening, rebuttal, ...)
    iterations: int | None = None  # the iteration limit of a method that iterates (ToE)
    input_kind: str | None = None  # a check starting: the kind of input ...
    prompts: dict[str, str] | None = None  # ... and the hash of each template it renders
    label: str | None = None  # a check or a stage ending: the label it came to
    documents: list[str] | None = None  # ids of the documents a stage found


class Decision(TraceEvent):
    """A choice a method made on the way (a label, a policy's action, stance scores)."""

    kind: Literal["decision"] = "decision"
    label: str | None = None
    answer: str | None = None
    probabilities: dict[str, float] | None = None
    estimator: str | None = None  # how the probabilities were read (logprobs, sampling)
    matched_mass: float | None = None  # probability mass that matched a label
    samples: int | None = None  # answers sampled for the probabilities
    tie: list[str] | None = None  # labels tied for the most probable


class Fault(TraceEvent):
    """A fault: retried (``attempt``), final (``attempts``) or ending the check (``fatal``)."""

    kind: Literal["error"] = "error"
    error: str
    attempt: int | None = None
    retry_in_s: float | None = None
    attempts: int | None = None
    fatal: bool | None = None
    search_failed: bool | None = None  # a search that failed after its retries
    gave_up: bool | None = None  # the last attempt failed too
    timeout_s: float | None = None  # a timeout: the limit ...
    local: bool | None = None  # ... and whether the model runs on this machine
    note: str | None = None  # advice on the fault
    query: dict[str, Any] | str | None = None  # the search that failed
    tool: str | None = None  # the tool whose call failed
    url: str | None = None  # the page that failed to load
    step: int | None = None  # the agent step it happened in ...
    round: int | None = None  # ... or the debate round


class Note(TraceEvent):
    """Something worth knowing about how the check ran (in ``text`` or ``note``)."""

    kind: Literal["note"] = "note"
    text: str | None = None
    note: str | None = None


class ClaimsFound(TraceEvent):
    """A document's claims, as the claim-extraction stage found them (before any check).

    Each claim is ``{"id", "text", "spans", "category"}``: its spans are ``[start, end]``
    character offsets into the document's text; ``category`` is None when not assessed.
    """

    kind: Literal["claims_found"] = "claims_found"
    count: int = Field(ge=0)
    claims: list[dict[str, Any]] = Field(default_factory=list)
    sentences: int | None = None  # sentences read
    dropped_unanchored: list[str] = Field(default_factory=list)  # claims with no span found


class ClaimChecked(TraceEvent):
    """One claim of a document done: checked, abstained, failed or not check-worthy."""

    kind: Literal["claim_checked"] = "claim_checked"
    claim_id: str
    status: str  # checked, abstained, error, not_checkworthy
    support: str | None = None  # supported, refuted, mixed (a checked claim)
    label: str | None = None
    score: float | None = None
    error: str | None = None


class OtherEvent(TraceEvent):
    """An event of a kind this version does not know (a plugin's, a newer version's), or a
    stored one that does not fit its class; rendered generically. The one open class: its
    fields are whatever it was given."""

    model_config = ConfigDict(extra="allow")


EVENT_CLASSES: dict[str, type[TraceEvent]] = {
    "llm_call": ModelCall,
    "search": SearchDone,
    "agent_step": AgentStep,
    "agent_turn": AgentTurn,
    "ruling": Ruling,
    "stop_signal": StopSignal,
    "tool_call": ToolCall,
    "tree_node": TreeNode,
    "memory_recall": MemoryAccess,
    "stage": Stage,
    "decision": Decision,
    "error": Fault,
    "note": Note,
    "claims_found": ClaimsFound,
    "claim_checked": ClaimChecked,
}
"""The class of each tag of the union (the event kinds, with ``agent_turn`` split in two:
a step of a loop, ``agent_step``, has a ``step``)."""

EVENT_KINDS = frozenset(cls.model_fields["kind"].default for cls in EVENT_CLASSES.values())


def event_tag(value: Any) -> str:
    """The union tag of a value: its kind, ``agent_step`` for a turn with a step, and
    ``other`` for a kind this version does not know."""
    if isinstance(value, TraceEvent):
        kind, fields = value.kind, value.data
    elif isinstance(value, Mapping):
        kind = value.get("kind")
        data = value.get("data")
        fields = data if isinstance(data, Mapping) else value
    else:
        return "other"
    if isinstance(value, OtherEvent) or kind not in EVENT_KINDS:
        return "other"
    if kind == "agent_turn" and fields.get("step") is not None:
        return "agent_step"
    return str(kind)


KnownEvent = Annotated[
    Annotated[ModelCall, Tag("llm_call")]
    | Annotated[SearchDone, Tag("search")]
    | Annotated[AgentStep, Tag("agent_step")]
    | Annotated[AgentTurn, Tag("agent_turn")]
    | Annotated[Ruling, Tag("ruling")]
    | Annotated[StopSignal, Tag("stop_signal")]
    | Annotated[ToolCall, Tag("tool_call")]
    | Annotated[TreeNode, Tag("tree_node")]
    | Annotated[MemoryAccess, Tag("memory_recall")]
    | Annotated[Stage, Tag("stage")]
    | Annotated[Decision, Tag("decision")]
    | Annotated[Fault, Tag("error")]
    | Annotated[Note, Tag("note")]
    | Annotated[ClaimsFound, Tag("claims_found")]
    | Annotated[ClaimChecked, Tag("claim_checked")]
    | Annotated[OtherEvent, Tag("other")],
    Discriminator(event_tag),
]
"""Any trace event, by its ``kind`` (an unknown kind gives an `OtherEvent`)."""

_ADAPTER: TypeAdapter[TraceEvent] = TypeAdapter(KnownEvent)


def parse_event(value: Mapping[str, Any] | TraceEvent) -> TraceEvent:
    """The event of a stored (or live) value, old form or new, as its class; one that does
    not fit its class becomes an `OtherEvent` (nothing stored is refused)."""
    try:
        return _ADAPTER.validate_python(value)
    except ValidationError:
        if isinstance(value, TraceEvent):
            value = value.model_dump(mode="json")
        return OtherEvent.model_validate(value)


def make_event(kind: str, name: str, **data: Any) -> TraceEvent:
    """The event of a known `kind` from keyword fields (strict: for code that has the kind
    as a string; emitters build the class itself).

    Raises:
        ValueError: an unknown kind, or fields that do not fit the kind's class (a field
            it does not declare among them: put a method's own in ``detail``).
    """
    if kind not in EVENT_KINDS:
        raise ValueError(f"unknown trace event kind {kind!r}")
    return _ADAPTER.validate_python({**data, "kind": kind, "name": name})


__all__ = [
    "EVENT_CLASSES", "EVENT_KINDS", "AgentStep", "AgentTurn", "ClaimChecked", "ClaimsFound",
    "Decision", "Fault",
    "KnownEvent", "MemoryAccess", "ModelCall", "Note", "OtherEvent", "Ruling", "SearchDone",
    "Stage", "StopSignal", "ToolCall", "TraceEvent", "TreeNode", "event_tag", "make_event",
    "parse_event",
]  # fmt: skip
