"""A checked document as annotated text: ordered segments, each tagged with its claims.

Every front end that shows a document in place (the web UI, the HTML report) renders the
same view from here, so the rules live in one spot:

- `segments` cuts the text at every claim span's start and end: each segment is a run of
  text covered by the same set of claims (none: plain text). Overlapping spans split into
  their shared and unshared parts; touching spans stay separate segments; spans are
  clipped to the text and empty or reversed ones are dropped.
- A segment's verdict class is its claims' most alarming: ``refuted`` over ``error`` over
  ``nei`` over ``pending`` over ``supported`` over ``skipped``.
- A Markdown document's heading lines (``# Title``) are recognised (`markdown_headings`):
  their segments carry the heading's level, the ``#`` marks are segments of their own
  (``syntax``) that the page hides. The text is otherwise shown as it is, preformatted:
  the claims' spans are offsets into exactly this text, so a Markdown renderer (which
  rewrites and drops characters) would misplace them, and links, images or HTML written
  in a document must never become live markup. Nothing else of Markdown is interpreted.
- `view` turns a `DocumentReport` (or claims still being checked) into a `DocumentView`:
  the segments, a row per claim with its verdict, score, rationale, evidence and suggested
  correction, and the totals, every value already a display string or a safe link, so a
  template needs no filter or server state (``server/templates/_document.html.j2``).

Nothing here escapes HTML: the templates do (autoescape); the values are plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, Literal

from veracity.core.weblinks import web_link
from veracity.documents.report import ClaimOutcome, DocumentReport

VerdictClass = Literal["supported", "refuted", "nei", "pending", "error", "skipped"]
CLASS_NAMES: dict[str, str] = {
    "supported": "Supported",
    "refuted": "Refuted",
    "nei": "Mixed or undecided",
    "pending": "Being checked",
    "error": "Error",
    "skipped": "Not checked (not a factual claim)",
}
"""The verdict classes in legend order, with what a badge calls them."""
RULES: dict[str, str] = {
    "supported": "the method's label is on the true side",
    "refuted": "the method's label is on the false side",
    "nei": "a middle label (e.g. half-true, not enough info) or no label",
}
"""How a checked claim gets its class, as the legend states it: by its label
(`veracity.documents.report.support_of`), never by its score."""
_PRECEDENCE: tuple[str, ...] = ("refuted", "error", "nei", "pending", "supported", "skipped")
MAX_EVIDENCE_CHARS = 400  # of each evidence passage shown in a claim's details


@dataclass(frozen=True)
class Mark:
    """One claim to mark: its id, its spans in the text and its verdict class."""

    claim: str
    spans: Sequence[tuple[int, int]]
    verdict: str = "pending"


@dataclass(frozen=True)
class Segment:
    """A run of the text covered by the same claims (`claims` empty: plain text)."""

    start: int
    end: int
    text: str
    claims: tuple[str, ...] = ()
    verdict: str | None = None  # the class shown (None: plain text)
    heading: int = 0  # in a Markdown heading line: its level (1-6); 0: not
    syntax: bool = False  # a Markdown heading's ``#`` marks (shown dim or hidden)

    @property
    def marked(self) -> bool:
        return bool(self.claims)


def worst(classes: Iterable[str]) -> str | None:
    """The class shown where several claims meet (see the module docstring); None: none."""
    seen = set(classes)
    for name in _PRECEDENCE:
        if name in seen:
            return name
    return next(iter(sorted(seen)), None)


def segments(text: str, marks: Sequence[Mark]) -> list[Segment]:
    """`text` cut into ordered segments at every span boundary of `marks`.

    The segments cover the text exactly (their texts join to `text`); each lists the
    claims whose spans cover it, in the order `marks` gives them.

    Example:
        >>> [(s.text, s.claims) for s in segments("ab cd", [Mark("c1", [(0, 2)])])]
        [('ab', ('c1',)), (' cd', ())]
    """
    size = len(text)
    clipped: list[tuple[int, int, int]] = []  # (start, end, index of the mark)
    for i, mark in enumerate(marks):
        for start, end in mark.spans:
            lo, hi = max(0, min(start, size)), max(0, min(end, size))
            if lo < hi:
                clipped.append((lo, hi, i))
    cuts = sorted({0, size, *(lo for lo, _, _ in clipped), *(hi for _, hi, _ in clipped)})
    out: list[Segment] = []
    for lo, hi in pairwise(cuts):
        covering = sorted({i for s, e, i in clipped if s <= lo and hi <= e})
        ids = tuple(dict.fromkeys(marks[i].claim for i in covering))
        verdict = worst(marks[i].verdict for i in covering) if covering else None
        out.append(Segment(lo, hi, text[lo:hi], ids, verdict))
    return out


_HEADING = re.compile(r"^(#{1,6})[ \t]+\S.*$", re.MULTILINE)


def markdown_headings(text: str) -> list[tuple[int, int, int, int]]:
    """The ATX heading lines of a Markdown text: ``(line start, text start, line end,
    level)`` each (the ``#`` marks and the blanks after them run from line start to text
    start)."""
    found = []
    for m in _HEADING.finditer(text):
        marks = len(m.group(1))
        start = m.start() + marks
        while start < m.end() and text[start] in " \t":
            start += 1
        found.append((m.start(), start, m.end(), marks))
    return found


def with_headings(text: str, parts: Sequence[Segment]) -> list[Segment]:
    """`parts` (segments of `text`) cut further at each Markdown heading's marks and end,
    the pieces inside a heading tagged with its level (and ``syntax`` for the marks)."""
    heads = markdown_headings(text)
    if not heads:
        return list(parts)
    cuts = sorted({p for line, start, end, _ in heads for p in (line, start, end)})
    out: list[Segment] = []
    for part in parts:
        inner = [c for c in cuts if part.start < c < part.end]
        for lo, hi in pairwise([part.start, *inner, part.end]):
            level, syntax = 0, False
            for line, start, end, n in heads:
                if line <= lo and hi <= end:
                    level, syntax = n, hi <= start
                    break
            out.append(Segment(lo, hi, text[lo:hi], part.claims, part.verdict, level, syntax))
    return out


def verdict_class(outcome: ClaimOutcome | None) -> str:
    """The class of a claim's outcome (None: not checked yet)."""
    if outcome is None:
        return "pending"
    if outcome.status == "error":
        return "error"
    if outcome.status == "not_checkworthy":
        return "skipped"
    if outcome.status == "checked" and outcome.support in ("supported", "refuted"):
        return outcome.support
    return "nei"  # abstained, or a middle label


@dataclass
class EvidenceRow:
    title: str
    url: str | None  # a safe http(s) link, or None
    source: str
    passage: str
    stance: str | None


@dataclass
class ClaimRow:
    """One claim as a table row and its details."""

    id: str
    text: str
    category: str | None
    verdict: str  # the verdict class
    verdict_name: str
    label: str | None = None
    score: str = "–"  # percent, or a dash
    rationale: str = ""
    error: str | None = None
    correction: str | None = None
    correction_cites: str = ""
    evidence: list[EvidenceRow] = field(default_factory=list)
    first: int = 0  # where its first span starts (the table's order)


@dataclass
class DocumentView:
    """What an annotated-document template renders."""

    title: str | None
    url: str | None
    method: str | None
    segments: list[Segment]
    claims: list[ClaimRow]
    legend: list[tuple[str, str]]
    totals: list[tuple[str, str]]  # (name, value) for a summary line; empty while running
    done: bool
    truncated: bool = False
    stopped: bool = False  # the check ended (cancelled, failed) before every claim was checked
    names: dict[str, str] = field(default_factory=lambda: dict(CLASS_NAMES))
    # claims the model wrote that are not in the text (dropped, never checked)
    dropped: list[str] = field(default_factory=list)
    file: str | None = None  # the file's name, when it was read from one


def legend(names: Mapping[str, str]) -> list[tuple[str, str]]:
    """The legend's (class, text) rows: each class's name and, for a verdict, its rule."""
    return [(k, f"{v}: {RULES[k]}" if k in RULES else v) for k, v in names.items()]


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


def _evidence(outcome: ClaimOutcome) -> list[EvidenceRow]:
    if outcome.verdict is None:
        return []
    rows = []
    for e in outcome.verdict.evidence:
        text = " ".join((e.quote or e.document.text).split())
        cut = text if len(text) <= MAX_EVIDENCE_CHARS else text[:MAX_EVIDENCE_CHARS] + "…"
        stance = str(getattr(e.stance, "value", e.stance))
        rows.append(
            EvidenceRow(
                title=e.document.title or e.document.url or e.document.id,
                url=web_link(e.document.url),
                source=e.document.source,
                passage=cut,
                stance=None if stance == "unknown" else stance,
            )
        )
    return rows


def claim_row(outcome: ClaimOutcome) -> ClaimRow:
    """The row of a claim that has an outcome."""
    cls = verdict_class(outcome)
    v = outcome.verdict
    fix = outcome.correction
    return ClaimRow(
        id=outcome.claim.id,
        text=outcome.claim.text,
        category=outcome.claim.category,
        verdict=cls,
        verdict_name=CLASS_NAMES[cls],
        label=v.label if v is not None else None,
        score=_percent(v.score if v is not None else None),
        rationale=(v.rationale or "").strip() if v is not None else "",
        error=outcome.error,
        correction=fix.text if fix is not None else None,
        correction_cites=", ".join(f"[{i}]" for i in fix.evidence) if fix is not None else "",
        evidence=_evidence(outcome),
        first=min((s for s, _ in outcome.claim.spans), default=0),
    )


def _totals(report: DocumentReport) -> list[tuple[str, str]]:
    s = report.summary
    rows = [
        ("Claims", str(s.claims)),
        ("Checked", str(s.checked)),
        ("Supported", str(s.supported)),
        ("Refuted", str(s.refuted)),
        ("Mixed", str(s.mixed)),
        ("Abstained", str(s.abstained)),
        ("Errors", str(s.errors)),
        ("Not checked", str(s.not_checkworthy)),
        ("Dropped, not in the text", str(s.dropped_unanchored)),
        ("Factuality", _percent(s.factuality)),  # FActScore's: supported of check-worthy
        ("Factuality, length-penalised (γ = 10)", _percent(s.factuality_penalised)),
        ("Supported of those with a label", _percent(s.supported_share_of_decided)),
    ]
    return rows


def view(report: DocumentReport) -> DocumentView:
    """The annotated view of a finished document check."""
    rows = sorted((claim_row(o) for o in report.claims), key=lambda r: (r.first, r.id))
    marks = [Mark(o.claim.id, o.claim.spans, verdict_class(o)) for o in report.claims]
    doc = report.document
    parts = segments(doc.text, marks)
    if doc.format == "markdown":
        parts = with_headings(doc.text, parts)
    return DocumentView(
        title=doc.title,
        url=web_link(doc.url),
        method=report.method,
        segments=parts,
        claims=rows,
        legend=legend(CLASS_NAMES),
        totals=_totals(report),
        done=True,
        truncated=doc.truncated or report.sentences_truncated,
        dropped=list(report.dropped_unanchored),
        file=doc.file,
    )


def live_view(
    text: str,
    claims: Sequence[Mapping[str, Any]],
    checked: Mapping[str, Mapping[str, Any]],
    *,
    title: str | None = None,
    url: str | None = None,
    method: str | None = None,
    stopped: bool = False,
    dropped: Sequence[str] = (),
) -> DocumentView:
    """The view of a check still running (or `stopped` early), from its progress events.

    Args:
        text: the document's text.
        claims: the extracted claims (``id``, ``text``, ``spans``, ``category``).
        checked: by claim id, what each finished claim's event said (``status``,
            ``support``, ``label``, ``score``, ``error``).
        dropped: the texts of the claims dropped as not anchored in the text.
    """
    names = dict(CLASS_NAMES)
    if stopped:  # its unchecked claims will not be checked now
        names["pending"] = "Not checked (the check stopped)"
    rows, marks = [], []
    for c in claims:
        cid = str(c.get("id", ""))
        spans = [(int(s[0]), int(s[1])) for s in c.get("spans") or [] if len(s) == 2]
        done = checked.get(cid)
        cls = _class_of_event(done, c.get("category"))
        marks.append(Mark(cid, spans, cls))
        rows.append(
            ClaimRow(
                id=cid,
                text=str(c.get("text", "")),
                category=c.get("category"),
                verdict=cls,
                verdict_name=names[cls],
                label=(done or {}).get("label"),
                score=_percent((done or {}).get("score")),
                error=(done or {}).get("error"),
                first=min((s for s, _ in spans), default=0),
            )
        )
    rows.sort(key=lambda r: (r.first, r.id))
    return DocumentView(
        title=title,
        url=web_link(url),
        method=method,
        segments=segments(text, marks),
        claims=rows,
        legend=legend(names),
        totals=[],
        done=False,
        stopped=stopped,
        names=names,
        dropped=[str(d) for d in dropped],
    )


def _class_of_event(done: Mapping[str, Any] | None, category: Any) -> str:
    if done is None:
        return "skipped" if category not in (None, "factual") else "pending"
    status = done.get("status")
    if status == "error":
        return "error"
    if status == "not_checkworthy":
        return "skipped"
    support = done.get("support")
    if status == "checked" and support in ("supported", "refuted"):
        return str(support)
    return "nei"


__all__ = [
    "CLASS_NAMES", "RULES", "ClaimRow", "DocumentView", "EvidenceRow", "Mark", "Segment",
    "claim_row", "legend", "live_view", "markdown_headings", "segments", "verdict_class",
    "view", "with_headings", "worst",
]  # fmt: skip
