"""What the web UI shows of a verdict, read from the verdict and its typed trace events.

Every view is built from the event classes of `veracity.core.events` (a stored trace is
read back into them once, by `stored_events`), never from a method's name, so a new
method's debate, stop signals, trajectory or tree appears without changes here; events no
view knows are listed generically. What only one method has (a post's replies by stance)
comes from that method's `BaseMethod.view_parts` hook, rendered by a generic template.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from veracity.core.events import (
    AgentStep,
    AgentTurn,
    Fault,
    Ruling,
    SearchDone,
    StopSignal,
    ToolCall,
    TraceEvent,
    parse_event,
)
from veracity.core.events import TreeNode as TreeNodeEvent
from veracity.core.trace import event_sentence
from veracity.core.weblinks import web_link
from veracity.runtime.views import ViewPart, method_view_parts

PASSAGE_WINDOW = 320  # characters of passage shown around a quoted span


@dataclass
class Segment:
    text: str
    mark: bool = False


KNOWN_STANCES = ("supports", "refutes", "neutral")


@dataclass
class EvidenceView:
    source: str  # the source that found the document: wikipedia, local:scifact, duckduckgo
    title: str
    url: str | None  # http(s) only: the link of the title
    date: str | None
    segments: list[Segment]
    quote: str | None
    quote_found: bool
    quote_verified: bool | None
    stance: str | None  # supports, refutes or neutral; None where the method did not say
    credibility: float | None
    note: str | None


@dataclass
class TreeNode:
    id: str
    data: dict[str, Any]
    children: list[TreeNode] = field(default_factory=list)


@dataclass
class Report:
    """Everything the report fragment renders."""

    evidence: list[EvidenceView]
    rounds: list[dict[str, Any]]  # debate: round, turns, rulings
    stop_signals: list[dict[str, Any]]
    parts: list[ViewPart]  # the method's own panels (`BaseMethod.view_parts`)
    trajectory: list[dict[str, Any]]
    tree: list[TreeNode]
    searches: list[dict[str, Any]]
    errors: list[dict[str, Any]]
    events: list[dict[str, Any]]


_NODE_FIELDS = ("claim", "veracity", "reliability", "status", "parent_id", "iteration")


def _pick(data: dict[str, Any], *keys: str) -> dict[str, Any]:
    """`keys` from `data`, None where absent (trace payloads omit unset fields)."""
    return {k: data.get(k) for k in keys}


def passage(text: str, quote: str | None) -> tuple[list[Segment], bool]:
    """`text` cut to a window around `quote`, with the quote marked; (segments, found)."""
    if not quote:
        short = text if len(text) <= 2 * PASSAGE_WINDOW else text[: 2 * PASSAGE_WINDOW] + "…"
        return [Segment(short)], False
    start = text.find(quote)
    if start < 0:
        start = text.lower().find(quote.lower())
    if start < 0:
        short = text if len(text) <= 2 * PASSAGE_WINDOW else text[: 2 * PASSAGE_WINDOW] + "…"
        return [Segment(short)], False
    end = start + len(quote)
    lo, hi = max(0, start - PASSAGE_WINDOW), min(len(text), end + PASSAGE_WINDOW)
    before = ("…" if lo > 0 else "") + text[lo:start]
    after = text[end:hi] + ("…" if hi < len(text) else "")
    return [Segment(before), Segment(text[start:end], mark=True), Segment(after)], True


def evidence_views(verdict: Mapping[str, Any]) -> list[EvidenceView]:
    out = []
    for ev in verdict.get("evidence") or []:
        doc = ev.get("document") or {}
        segments, found = passage(doc.get("text", ""), ev.get("quote"))
        out.append(
            EvidenceView(
                source=doc.get("source", "unknown"),
                title=doc.get("title") or doc.get("id", ""),
                url=web_link(doc.get("url")),
                date=(doc.get("published_at") or "")[:10] or None,
                segments=segments,
                quote=ev.get("quote"),
                quote_found=found,
                quote_verified=ev.get("quote_verified"),
                stance=ev.get("stance") if ev.get("stance") in KNOWN_STANCES else None,
                credibility=ev.get("credibility"),
                note=ev.get("note"),
            )
        )
    return out


def debate_rounds(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    """Debate turns and rulings grouped by round, in order (turns with a round number)."""
    rounds: dict[int, dict[str, Any]] = {}
    for e in events:
        data = e.data
        rnd = data.get("round")
        if rnd is None or not isinstance(e, AgentTurn | AgentStep | Ruling):
            continue
        slot = rounds.setdefault(rnd, {"round": rnd, "turns": [], "rulings": []})
        if isinstance(e, Ruling):
            slot["rulings"].append(
                {"judge": e.name, **_pick(data, "decision", "confidence", "reason")}
            )
        else:
            slot["turns"].append({"role": e.name, **_pick(data, "phase", "stance", "text")})
    return [rounds[k] for k in sorted(rounds)]


def stop_signals(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    """Every stopping reading, by round: who read it, stop or not, margin, confidence and
    the other scalar readings (e.g. a learned policy's p_stop / p_continue)."""
    main = ("round", "stop", "margin", "confidence")
    rows = []
    for e in events:
        if not isinstance(e, StopSignal):
            continue
        data = e.data
        extra = {
            k: v for k, v in data.items()
            if k not in main and v is not None and not isinstance(v, dict | list)
        }  # fmt: skip
        rows.append({"name": e.name, **{k: data.get(k) for k in main}, "extra": extra})
    return sorted(rows, key=lambda r: (r["round"] is None, r["round"] or 0))


def trajectory(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    """Agent steps and tool calls, in order."""
    out = []
    for e in events:
        match e:
            case ToolCall():
                fields = _pick(e.data, "tool", "arguments", "error", "result")
                out.append({"type": "tool", "name": e.name, **fields})
            case AgentStep():
                fields = _pick(e.data, "step", "thought", "action", "input", "observation")
                out.append({"type": "step", "name": e.name, **fields})
    return out


def argument_tree(events: Sequence[TraceEvent]) -> list[TreeNode]:
    """The latest state of every tree node, nested under its parent."""
    nodes: dict[str, TreeNode] = {}
    order: list[str] = []
    for e in events:
        if not isinstance(e, TreeNodeEvent):
            continue
        node_id = str(e.node_id)
        if node_id not in nodes:
            order.append(node_id)
            nodes[node_id] = TreeNode(node_id, {})
        latest = {k: v for k, v in e.data.items() if v is not None}
        nodes[node_id].data = {**nodes[node_id].data, **latest}
    for node in nodes.values():
        node.data = {**_pick(node.data, *_NODE_FIELDS), **node.data}
    roots = []
    for node_id in order:
        node = nodes[node_id]
        parent = node.data.get("parent_id")
        if parent is not None and str(parent) in nodes and str(parent) != node_id:
            nodes[str(parent)].children.append(node)
        else:
            roots.append(node)
    return roots


def searches(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        if not isinstance(e, SearchDone):
            continue
        text = e.query.get("text") if isinstance(e.query, dict) else e.query
        out.append(
            {
                "source": e.name, "kind": e.source_kind, "query": text or "",
                "results": e.results or [], "cached": e.cached, "t": e.t,
            }
        )  # fmt: skip
    return out


def event_rows(events: Sequence[TraceEvent]) -> list[dict[str, Any]]:
    """Every event: kind, name, time, the event in words and its data as indented JSON."""
    return [
        {
            "kind": e.kind,
            "name": e.name,
            "t": e.t,
            "text": event_sentence(e),
            "data": json.dumps(e.data, indent=2, ensure_ascii=False, default=str),
        }
        for e in events
    ]


def stored_events(verdict: Mapping[str, Any]) -> list[TraceEvent]:
    """The typed events of a stored verdict's trace (JSON from the job store or a run
    directory; an event that does not fit its class reads as an `OtherEvent`)."""
    raw = (verdict.get("trace") or {}).get("events") or []
    return [parse_event(e) for e in raw if isinstance(e, Mapping)]


def method_parts(
    method: str | None, events: Sequence[TraceEvent], item: Mapping[str, Any]
) -> list[ViewPart]:
    """The panels the check's method adds (`BaseMethod.view_parts`, through the runtime)."""
    return method_view_parts(method, events, item)


def build_report(verdict: Mapping[str, Any], request: Mapping[str, Any]) -> Report:
    events = stored_events(verdict)
    item = request.get("input") or {}
    return Report(
        evidence=evidence_views(verdict),
        rounds=debate_rounds(events),
        stop_signals=stop_signals(events),
        parts=method_parts(verdict.get("method") or request.get("method"), events, item),
        trajectory=trajectory(events),
        tree=argument_tree(events),
        searches=searches(events),
        errors=[
            {"name": e.name, **_pick(e.data, "error", "attempt")}
            for e in events
            if isinstance(e, Fault)
        ],
        events=event_rows(events),
    )
