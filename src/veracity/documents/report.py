"""What checking a document gives: each claim in place with its verdict, and the totals.

A claim's outcome is one of: ``checked`` (the method gave a label), ``abstained`` (it
gave none, on purpose), ``error`` (the check failed) or ``not_checkworthy`` (an opinion,
advice, question or trivial statement: not sent to the method). Claims the extraction
dropped as not anchored in the text (`veracity.evidence.claims.anchor`) have no outcome:
the report lists their texts (``dropped_unanchored``) and the summary counts them; they
are no fact of the document's factuality.

A checked claim's **support** is decided by one function, `support_of`, which the report,
the live events, every view (terminal, web UI, HTML report) and the evaluation metrics
all use: the verdict's **label** decides (it is the method's answer), by its score in the
label space: at least 2/3 ``supported``, at most 1/3 ``refuted``, between ``mixed``
(a middle label such as HALF-TRUE, or NEI / uncertain: supported in part, or not
settled). The verdict's own ``score`` is used only when its label is not one of the
space's. So a SAFE, FacTool or FactCheck-GPT verdict whose label is false because one of
its three sub-facts failed is ``refuted``, whatever share of its sub-facts held.

The document's **factuality** is FActScore's (Min et al., 2023; ``get_score`` in
shmsw25/FActScore): the share of its facts that are supported, where its facts are the
check-worthy claims sent to the method and every fact not found supported counts
against it: refuted, mixed, abstained and failed alike. A document with no check-worthy
claim did not respond (None). ``factuality_penalised`` multiplies it by FActScore's
length penalty (γ = 10: ``exp(1 - γ / facts)`` for at most γ facts, else 1), the figure
the release reports as its score by default. Over several documents `factscore` takes
the macro average over the documents that responded, with the respond ratio beside it.
The older figure, supported claims over claims with a label (abstentions and errors left
out), is kept as ``supported_share_of_decided``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.errors import LabelError
from veracity.core.labels import LabelSpace, get_label_space
from veracity.core.types import Trace, Usage, Verdict
from veracity.documents.reading import DocumentText
from veracity.evidence.claims import ExtractedClaim

Status = Literal["checked", "abstained", "error", "not_checkworthy"]
Support = Literal["supported", "refuted", "mixed"]
SUPPORTED_FROM, REFUTED_TO = 2 / 3, 1 / 3
GAMMA = 10  # FActScore's length penalty: documents with at most this many facts are penalised


class Correction(BaseModel):
    """A suggested rewrite of a refuted claim, grounded in the passages it cites."""

    model_config = ConfigDict(extra="forbid")

    text: str
    evidence: list[int] = Field(min_length=1)  # 1-based positions in the verdict's evidence
    suggestion: Literal[True] = True  # always a suggestion, never a verified fact


class ClaimOutcome(BaseModel):
    """One claim of the document, where it is, and what the check found."""

    model_config = ConfigDict(extra="forbid")

    claim: ExtractedClaim
    status: Status
    support: Support | None = None
    verdict: Verdict | None = None
    error: str | None = None
    correction: Correction | None = None
    reused: bool = False  # the verdict of the same claim's earlier check (see DocumentChecker)


class DocumentSummary(BaseModel):
    """Totals over a document's claims."""

    model_config = ConfigDict(extra="forbid")

    claims: int
    checked: int
    supported: int
    refuted: int
    mixed: int
    abstained: int
    errors: int
    not_checkworthy: int
    labels: dict[str, int]
    # FActScore: supported share of the check-worthy claims (undecided = not supported)
    factuality: float | None
    factuality_penalised: float | None = None  # the same times the length penalty (γ = 10)
    supported_share_of_decided: float | None = None  # supported share of checked claims
    # claims the extraction dropped: not anchored in any sentence (not in `claims`)
    dropped_unanchored: int = 0
    reused: int = 0  # claims that took an earlier check's verdict (no new check)


class DocumentReport(BaseModel):
    """The whole result of checking a document."""

    model_config = ConfigDict(extra="forbid")

    document: DocumentText
    method: str
    label_space: str
    claims: list[ClaimOutcome]
    summary: DocumentSummary
    sentences: int
    duplicates: int = 0
    sentences_truncated: bool = False
    # claims the model wrote that share too little with any sentence (in no claim count,
    # never checked), as it wrote them; and claims moved to the sentence they came from
    dropped_unanchored: list[str] = Field(default_factory=list)
    reattached: int = 0
    usage: Usage = Field(default_factory=Usage)  # extraction and corrections included
    wall_time_s: float = 0.0


class DocumentVerdict(Verdict):
    """A document's verdict: a `Verdict` whose typed payload, `report`, holds every claim
    with its own verdict (and trace) nested under it.

    Its label is where the document's factuality falls in the claim method's label space
    (`label_at`), its score that factuality; a document with no check-worthy
    claim abstains. The claims' usage is summed into its own.
    """

    report: DocumentReport

    @classmethod
    def of(cls, report: DocumentReport, trace: Trace | None = None) -> DocumentVerdict:
        """The verdict `report` gives (see the class docstring); `trace`: the document
        check's own events (its claims' traces stay under their claims)."""
        score = report.summary.factuality
        fields: dict = {"label": None, "abstained": True, "abstain_reason": "no check-worthy claim"}
        if score is not None:
            fields = {"label": label_at(get_label_space(report.label_space), score), "score": score}
        return cls(
            **fields, label_space=report.label_space, method=report.method,
            rationale=_rationale(report.summary), usage=report.usage, report=report,
            trace=trace or Trace(),
        )  # fmt: skip


def label_at(space: LabelSpace, score: float) -> str:
    """The label of `space` for a veracity `score`: its band in a space defined by score
    cut-offs, else the label whose score is nearest (the less true one on a tie)."""
    if space.cutoffs is not None:
        return space.from_score(score)
    scores = space.scores
    return min(space.labels, key=lambda label: (abs(scores[label] - score), scores[label]))


def _rationale(summary: DocumentSummary) -> str:
    return (
        f"{summary.supported} of {summary.claims} claims supported, {summary.refuted} refuted, "
        f"{summary.mixed} mixed, {summary.abstained} abstained, {summary.errors} failed, "
        f"{summary.not_checkworthy} not check-worthy"
    )


def support_of_label(label: str | None, space: LabelSpace) -> Support | None:
    """Where `label` falls in `space`: supported, refuted or mixed (None: no label, or
    one the space does not have)."""
    if label is None:
        return None
    found = space.find(label)
    return None if found is None else _side(space.scores[found])


def support_of(verdict: Verdict) -> Support | None:
    """Where a labelled verdict falls (see the module docstring): its label decides; its
    score only when the label is not one of its space's. None: no label."""
    if verdict.label is None:
        return None
    try:
        space = get_label_space(verdict.label_space)
    except LabelError:
        space = None
    by_label = support_of_label(verdict.label, space) if space is not None else None
    if by_label is not None:
        return by_label
    return _side(verdict.score) if verdict.score is not None else None


def _side(score: float) -> Support:
    if score >= SUPPORTED_FROM:
        return "supported"
    return "refuted" if score <= REFUTED_TO else "mixed"


def length_penalty(facts: int, gamma: int = GAMMA) -> float:
    """FActScore's length penalty: ``exp(1 - gamma / facts)`` up to `gamma` facts, else 1."""
    if facts < 1:
        raise ValueError("the length penalty needs at least one fact")
    return 1.0 if facts > gamma else math.exp(1 - gamma / facts)


def factuality_of(supported: int, facts: int) -> float | None:
    """FActScore of one document: supported facts over all its facts (None: no facts)."""
    return supported / facts if facts else None


def outcome_of(claim: ExtractedClaim, verdict: Verdict) -> ClaimOutcome:
    """A claim's outcome from its verdict."""
    if verdict.error is not None:
        return ClaimOutcome(claim=claim, status="error", verdict=verdict, error=verdict.error)
    if verdict.label is None:
        return ClaimOutcome(claim=claim, status="abstained", verdict=verdict)
    return ClaimOutcome(claim=claim, status="checked", support=support_of(verdict), verdict=verdict)


def summarise(outcomes: list[ClaimOutcome], dropped_unanchored: int = 0) -> DocumentSummary:
    """The totals of one document's `outcomes` (see the module docstring for factuality);
    `dropped_unanchored` claims were dropped before checking and count nowhere else."""
    status = Counter(o.status for o in outcomes)
    support = Counter(o.support for o in outcomes if o.status == "checked")
    labels = Counter(
        o.verdict.label for o in outcomes if o.verdict is not None and o.verdict.label is not None
    )
    checked = status["checked"]
    facts = checked + status["abstained"] + status["error"]
    factuality = factuality_of(support["supported"], facts)
    return DocumentSummary(
        claims=len(outcomes),
        checked=checked,
        supported=support["supported"],
        refuted=support["refuted"],
        mixed=support["mixed"],
        abstained=status["abstained"],
        errors=status["error"],
        not_checkworthy=status["not_checkworthy"],
        labels=dict(sorted(labels.items())),
        factuality=factuality,
        factuality_penalised=None if factuality is None else factuality * length_penalty(facts),
        supported_share_of_decided=support["supported"] / checked if checked else None,
        dropped_unanchored=dropped_unanchored,
        reused=sum(o.reused for o in outcomes),
    )


class FactScore(BaseModel):
    """FActScore over several documents (see the module docstring).

    Attributes:
        documents: documents counted (each with its facts known).
        responded: documents with at least one fact (check-worthy claim).
        respond_ratio: responded / documents.
        factuality: mean of the responding documents' factuality (macro average).
        factuality_penalised: the same with each document's length penalty (γ = 10).
        facts_per_response: mean facts of a responding document.
        supported_share_of_decided: supported over checked claims, all documents pooled
            (micro average, abstentions and errors left out: the figure called factuality
            before FActScore's definition was adopted).
    """

    model_config = ConfigDict(extra="forbid")

    documents: int
    responded: int
    respond_ratio: float | None
    factuality: float | None
    factuality_penalised: float | None
    facts_per_response: float | None
    supported_share_of_decided: float | None
    gamma: int = GAMMA


def factscore(documents: Iterable[tuple[int, int, int]], gamma: int = GAMMA) -> FactScore:
    """FActScore over documents given as ``(supported, checked, facts)`` each: supported
    claims, claims with a label, and check-worthy claims sent to the method."""
    rows = list(documents)
    answered = [(s, f) for s, _, f in rows if f > 0]
    scores = [s / f for s, f in answered]
    penalised = [s / f * length_penalty(f, gamma) for s, f in answered]
    checked = sum(c for _, c, _ in rows)
    return FactScore(
        documents=len(rows),
        responded=len(answered),
        respond_ratio=len(answered) / len(rows) if rows else None,
        factuality=_mean(scores),
        factuality_penalised=_mean(penalised),
        facts_per_response=_mean([f for _, f in answered]),
        supported_share_of_decided=sum(s for s, _, _ in rows) / checked if checked else None,
        gamma=gamma,
    )


def _mean(values: list[float] | list[int]) -> float | None:
    return sum(values) / len(values) if values else None
