"""Rich rendering of a checked document for the terminal: the text with each claim's span
marked by its verdict, a table of the claims, the totals with the factuality.

Everything shown comes from the document, the model or the evidence, so it is untrusted
text: it goes into `rich.text.Text` objects as plain text (``Text.append``), never through
markup, so ``[bold]`` or ``[link=…]`` in a document prints as it is written.
"""

from __future__ import annotations

from collections import defaultdict

from rich.console import Group
from rich.table import Table
from rich.text import Text

from veracity.core.textio import plural
from veracity.documents import ClaimOutcome, DocumentReport

# a span shared by several claims (one sentence, several atomic claims) shows the worst
_RANK = {"refuted": 0, "error": 1, "mixed": 2, "abstained": 3, "supported": 4, "unchecked": 5}
_STYLE = {
    "refuted": "bold red underline",
    "error": "magenta underline",
    "mixed": "yellow underline",
    "abstained": "cyan underline",
    "supported": "green underline",
    "unchecked": "dim",
}
RATIONALE_CHARS = 160


def outcome_key(outcome: ClaimOutcome) -> str:
    """What a claim's mark shows: its support, else its status (``unchecked``: not
    check-worthy)."""
    if outcome.status == "checked":
        return outcome.support or "mixed"
    if outcome.status == "not_checkworthy":
        return "unchecked"
    return "abstained" if outcome.status == "abstained" else "error"


def annotated_text(report: DocumentReport) -> Text:
    """The document's text with each claim's span styled by its verdict and followed by
    its claim ids, e.g. ``She won three Nobel Prizes.⟨c2⟩``."""
    text = report.document.text
    at: dict[tuple[int, int], list[ClaimOutcome]] = defaultdict(list)
    for outcome in report.claims:
        for span in outcome.claim.spans:
            at[tuple(span)].append(outcome)  # type: ignore[index]
    shown = Text()
    pos = 0
    for start, end in sorted(at):
        if start < pos or end > len(text):
            continue  # spans are sentences, so they do not overlap; never print text twice
        worst = min((outcome_key(o) for o in at[(start, end)]), key=_RANK.__getitem__)
        shown.append(text[pos:start])
        shown.append(text[start:end], style=_STYLE[worst])
        ids = " ".join(o.claim.id for o in at[(start, end)])
        shown.append(f"⟨{ids}⟩", style=_STYLE[worst].replace(" underline", "") + " dim")
        pos = end
    shown.append(text[pos:])
    return shown


def _verdict_cell(outcome: ClaimOutcome) -> Text:
    style = _STYLE[outcome_key(outcome)].replace(" underline", "")
    verdict = outcome.verdict
    if outcome.status == "checked" and verdict is not None and verdict.label is not None:
        return Text(verdict.label, style=style)
    words = {"not_checkworthy": f"not checked ({outcome.claim.category})"}
    return Text(words.get(outcome.status, outcome.status), style=style)


def _why(outcome: ClaimOutcome) -> str:
    verdict = outcome.verdict
    if outcome.error:
        why = outcome.error
    elif verdict is None:
        why = ""
    else:
        why = verdict.rationale or verdict.abstain_reason or ""
    why = " ".join(why.split())
    if len(why) > RATIONALE_CHARS:
        why = why[: RATIONALE_CHARS - 1] + "…"
    if outcome.correction is not None:
        cited = ", ".join(str(i) for i in outcome.correction.evidence)
        why += f"{' ' if why else ''}suggested correction (evidence {cited}): "
        why += outcome.correction.text
    return why


def claims_table(report: DocumentReport) -> Table:
    """One row per claim: id, claim, verdict, score, a short rationale."""
    table = Table("id", "claim", "verdict", "score", "rationale", show_lines=False)
    for outcome in report.claims:
        verdict = outcome.verdict
        score = "" if verdict is None or verdict.score is None else f"{verdict.score:.2f}"
        table.add_row(
            Text(outcome.claim.id),
            Text(outcome.claim.text),
            _verdict_cell(outcome),
            Text(score),
            Text(_why(outcome)),
        )
    return table


def totals_line(report: DocumentReport) -> Text:
    """The document's counts and factuality (FActScore's: an abstention or error counts
    as not supported), with the length-penalised figure and the supported share of the
    claims that got a label beside it."""
    s = report.summary
    facts = s.checked + s.abstained + s.errors
    factuality = "n/a (no check-worthy claim)" if s.factuality is None else f"{s.factuality:.0%}"
    line = Text()
    line.append(f"{s.claims} claims: ", style="bold")
    line.append(f"{s.supported} supported", style="green")
    line.append(" · ")
    line.append(f"{s.refuted} refuted", style="red")
    line.append(f" · {s.mixed} mixed · {s.abstained} abstained · {s.errors} errors · ")
    line.append(f"{s.not_checkworthy} not check-worthy · ")
    if s.dropped_unanchored:
        line.append(f"{s.dropped_unanchored} dropped (not in the text) · ", style="magenta")
    line.append(f"factuality {factuality}", style="bold")
    line.append(f" of {facts} check-worthy (FActScore")
    if s.factuality_penalised is not None:
        line.append(f"; {s.factuality_penalised:.0%} length-penalised")
    if s.supported_share_of_decided is not None:
        line.append(f"; {s.supported_share_of_decided:.0%} of the {s.checked} with a label")
    line.append(f") (method {report.method}, {report.label_space})")
    u = report.usage
    line.append(
        f"\n{plural(u.llm_calls, 'LLM call')} · {plural(u.searches, 'search')} · "
        f"{report.wall_time_s:.1f}s"
    )
    return line


def dropped_lines(report: DocumentReport) -> Text | None:
    """The claims the extraction dropped as not anchored in the text (None: none): the
    model wrote them, but they share too little with any sentence to be the text's."""
    if not report.dropped_unanchored:
        return None
    n = len(report.dropped_unanchored)
    shown = Text(
        f"{plural(n, 'claim')} dropped, not found in the text (the model wrote "
        f"{'it' if n == 1 else 'them'}; not checked, not counted):",
        style="magenta",
    )
    for text in report.dropped_unanchored:
        shown.append("\n  – ")
        shown.append(text)  # untrusted: plain text, never markup
    return shown


def legend_line() -> Text:
    """What the marks' colours mean: the label decides (`veracity.documents.report.support_of`,
    the rule of every view), never the score."""
    line = Text("colours follow the method's label: ", style="dim")
    line.append("supported", style="green")
    line.append(" = a label on the true side · ", style="dim")
    line.append("refuted", style="red")
    line.append(" = on the false side · ", style="dim")
    line.append("mixed", style="yellow")
    line.append(" = a middle label (half-true, not enough info) · ", style="dim")
    line.append("abstained", style="cyan")
    line.append(" · ", style="dim")
    line.append("error", style="magenta")
    line.append(" · not checked (dim)", style="dim")
    return line


def document_view(report: DocumentReport) -> Group:
    """The annotated text, the claims table and the totals, in that order."""
    parts: list = []
    if report.document.title:
        parts.append(Text(report.document.title, style="bold"))
    if report.document.url:
        parts.append(Text(report.document.url, style="dim"))
    parts += [annotated_text(report), legend_line(), Text(""), claims_table(report)]
    parts.append(totals_line(report))
    dropped = dropped_lines(report)
    if dropped is not None:
        parts.append(dropped)
    if report.document.truncated or report.sentences_truncated:
        parts.append(
            Text(
                "note: only the start of the document was read (raise the extraction's "
                "max_sentences, or check a shorter part)",
                style="dim",
            )
        )
    return Group(*parts)


__all__ = [
    "annotated_text", "claims_table", "document_view", "dropped_lines", "legend_line",
    "outcome_key", "totals_line",
]  # fmt: skip
