"""The examples of a run, as its report lists them: what was checked, the gold and the
predicted label, the outcome, and each verdict's reasons, evidence and trace in words.

Wrong ones come first, then abstentions, errors and crashes, then examples without a
gold label (a batch), then correct ones; dataset order within each group. Texts are
untrusted: the HTML template escapes them (autoescape) and makes links of http(s)
addresses only (`veracity.core.weblinks.web_link`); `md_cell` makes them safe in a Markdown
table cell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from veracity.core.events import ModelCall
from veracity.core.trace import event_sentence
from veracity.core.weblinks import web_link
from veracity.evaluation.store import PredictionRecord

MAX_ROWS = 2000  # examples listed; the rest are counted
MAX_DETAILED = 300  # examples with their reasons, evidence and trace
MAX_EVENTS = 200  # trace events shown per example
ROW_CHARS = 160  # the input as the table shows it
MAX_EVIDENCE = 10

OUTCOME_ORDER = {
    "wrong": 0, "abstained": 1, "error": 1, "crashed": 1, "no gold": 2, "correct": 3,
}  # fmt: skip


@dataclass
class EvidenceLine:
    title: str
    source: str
    url: str | None  # http(s) only
    stance: str | None  # supports, refutes or neutral


@dataclass
class ExampleRow:
    """One example of the run, ready to show.

    Attributes:
        n: its place in the list (the anchor ``ex-N`` of its details).
        outcome: wrong, correct, abstained, error, crashed or "no gold".
        text: what was checked, cut for the table; `input` in full as recorded.
        reason: why there is no label (an abstention's reason, an error, a crash).
        detailed: whether its details (evidence, trace) are in the report.
        trace: (seconds, sentence) of its trace events, model calls left out.
    """

    n: int
    id: str
    outcome: str
    text: str
    input: str | None
    gold: str | None
    predicted: str | None
    reason: str | None = None
    rationale: str = ""
    detailed: bool = False
    evidence: list[EvidenceLine] = field(default_factory=list)
    trace: list[tuple[str, str]] = field(default_factory=list)
    more_events: int = 0
    model_calls: int = 0


def outcome(record: PredictionRecord) -> str:
    """wrong, correct, abstained, error, crashed, or "no gold" (a batch has no labels)."""
    if record.status == "exception":
        return "crashed"
    if record.status in ("error", "abstained"):
        return record.status
    if record.gold is None:
        return "no gold"
    return "correct" if record.correct else "wrong"


def example_rows(records: list[PredictionRecord]) -> tuple[list[ExampleRow], int]:
    """The examples to list, wrong ones first (see the module docstring), and how many
    more the report leaves out (beyond `MAX_ROWS`)."""
    order = sorted(range(len(records)), key=lambda i: (OUTCOME_ORDER[outcome(records[i])], i))
    rows = [
        _row(n, records[i], detailed=n <= MAX_DETAILED) for n, i in enumerate(order[:MAX_ROWS], 1)
    ]
    return rows, max(0, len(records) - MAX_ROWS)


def _row(n: int, record: PredictionRecord, *, detailed: bool) -> ExampleRow:
    verdict = record.verdict
    text = record.input or ""
    row = ExampleRow(
        n=n,
        id=record.id,
        outcome=outcome(record),
        text=text if len(text) <= ROW_CHARS else text[: ROW_CHARS - 1].rstrip() + "…",
        input=record.input,
        gold=record.gold,
        predicted=record.predicted,
        reason=_reason(record),
        rationale=(verdict.rationale.strip() if verdict else ""),
        detailed=detailed,
    )
    if detailed and verdict is not None:
        row.evidence = [_evidence(e.model_dump(mode="json")) for e in verdict.evidence]
        row.evidence = row.evidence[:MAX_EVIDENCE]
        events = verdict.trace.events
        row.model_calls = sum(1 for e in events if isinstance(e, ModelCall))
        shown = [e for e in events if not isinstance(e, ModelCall)]
        row.trace = [(f"{e.t:.2f}", event_sentence(e)) for e in shown[:MAX_EVENTS]]
        row.more_events = max(0, len(shown) - MAX_EVENTS)
    return row


def _reason(record: PredictionRecord) -> str | None:
    verdict = record.verdict
    if record.status == "exception":
        lines = (record.exception or "").strip().splitlines()
        return lines[-1] if lines else "the method crashed"
    if verdict is None:
        return None
    if verdict.error:
        return verdict.error
    return verdict.abstain_reason if verdict.abstained else None


def _evidence(ev: dict[str, Any]) -> EvidenceLine:
    doc = ev.get("document") or {}
    url = doc.get("url")
    stance = ev.get("stance")
    return EvidenceLine(
        title=str(doc.get("title") or doc.get("id") or ""),
        source=str(doc.get("source") or "unknown"),
        url=web_link(url),
        stance=stance if stance in ("supports", "refutes", "neutral") else None,
    )


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|<>~&])")


def md_cell(value: Any) -> str:
    """`value` as text that stays one Markdown table cell and renders as written: one
    line, with Markdown's and HTML's special characters escaped."""
    text = "" if value is None else " ".join(str(value).split())
    if not text:
        return "–"
    return _MD_SPECIAL.sub(r"\\\1", text)
