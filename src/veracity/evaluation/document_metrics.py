"""Metrics of the document task (`veracity.evaluation.document_task`), as pure functions.

Over the responses of a run, from what each record keeps in
``verdict.metadata["document_task"]``:

- **extraction**: extracted claims (every category) are matched one to one to the
  annotated claims: the pairs are taken in order of falling similarity, each claim at
  most once, while the similarity is at or above the threshold (`greedy_match`).
  Recall = matched annotated claims / annotated claims; precision = matched extracted
  claims / extracted claims. The matcher (an embedding model, or ``lexical``) and the
  threshold are named in the result.
- **check-worthiness**: as Factcheck-Bench's subtask scores it, over the annotated
  claims: each annotated claim put in a category by the extraction's own step
  (``document.classify_gold_claims``), ``factual`` or not, against the annotation's: F1
  of the ``factual`` class and macro-F1 over factual / not. The older figure, over the
  extracted claims that matched an annotated one (so it depends on what was extracted),
  is kept beside it as ``matched_pairs_f1_factual``. n/a for a set without categories
  (FacTool).
- **claims given gold claims**: each check-worthy annotated claim checked by the method;
  scored over those annotated true or false (unknown ones are counted apart): accuracy,
  per-class F1 and macro-F1 over true / false. An abstention or error counts as a miss
  (as in every metric of the harness) and is counted apart too.
- **claims given extracted claims**: the checked extracted claims that matched an
  annotated true / false claim, scored against it in the same way; unmatched checked
  claims are counted apart, by the side their label falls on.
- **responses**: the predicted response label against the gold one. Abstentions (no
  claim checked) and errors are never counted as false: ``accuracy``, the headline,
  counts them as misses; ``accuracy_answered`` beside it leaves them out. The same rule
  applied to the checks of the gold claims gives ``response_given_gold_claims``.
- **factuality**: FActScore over the responses (`veracity.documents.report.factscore`):
  per response, its supported extracted claims over its check-worthy ones (a claim
  refuted, mixed, abstained on or failed is not supported), the macro average over the
  responses with at least one, with and without the length penalty (γ = 10), the
  respond ratio, and ``supported_share_of_decided`` (supported over checked claims, all
  responses pooled: the figure called factuality before). Responses whose extraction
  failed are left out of all of it and counted.
- **cost**: claims per document produced and annotated; wall time and LLM calls per
  document (all of a response's calls: extraction, its checks and the gold checks), and
  apart: the extraction's calls, the gold checks' calls, and the wall time of extracting
  and checking the extracted claims (without the gold checks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from veracity.core.labels import get_label_space
from veracity.core.labels.scores import accuracy, macro_f1, per_class
from veracity.documents.report import factscore
from veracity.evaluation.document_task import TASK_KEY, task_config, truth_of, verdict_truth
from veracity.evaluation.metrics import Metrics

METRICS_FILE = "document_metrics.json"  # in the run directory, beside metrics.json
TRUTH = ("true", "false")
WORTH = ("factual", "not_factual")


def greedy_match(similarity: Sequence[Sequence[float]], threshold: float) -> list[tuple[int, int]]:
    """One-to-one (extracted, annotated) pairs at or above `threshold`, best first.

    Ties are taken in row, then column order, so the result is deterministic.
    """
    above = [
        (s, i, j) for i, row in enumerate(similarity) for j, s in enumerate(row) if s >= threshold
    ]
    pairs = sorted(above, key=lambda t: (-t[0], t[1], t[2]))
    used_i: set[int] = set()
    used_j: set[int] = set()
    out = []
    for _, i, j in pairs:
        if i not in used_i and j not in used_j:
            used_i.add(i)
            used_j.add(j)
            out.append((i, j))
    return sorted(out)


def _ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def label_scores(gold: list[str], pred: list[str | None], labels: Sequence[str]) -> dict[str, Any]:
    """Accuracy, per-class F1 and macro-F1 (None for no pairs); a None prediction misses."""
    if not gold:
        return {"n": 0, "accuracy": None, "macro_f1": None, "f1": {}}
    scores = per_class(gold, pred, list(labels))
    return {
        "n": len(gold),
        "accuracy": accuracy(gold, pred),
        "macro_f1": macro_f1(gold, pred, list(labels)),
        "f1": {k: v.f1 for k, v in scores.items()},
    }


def _checked_label(check: dict[str, Any] | None) -> str | None:
    return check["truth"] if check and check.get("status") == "checked" else None


class DocumentMetrics(BaseModel):
    """The document task's figures (see the module docstring); None: n/a."""

    model_config = ConfigDict(extra="forbid")

    documents: int
    matcher: str
    threshold: float
    extraction: dict[str, Any]
    checkworthiness: dict[str, Any]
    gold_claims: dict[str, Any]
    extracted_claims: dict[str, Any]
    response: dict[str, Any]
    response_given_gold_claims: dict[str, Any]
    factuality: dict[str, Any] = {}
    cost: dict[str, Any]

    def flat(self) -> dict[str, float]:
        """The figures as ``section.name`` -> number (for `Metrics.extra` and paper rows)."""
        out: dict[str, float] = {}
        for section in ("extraction", "checkworthiness", "gold_claims", "extracted_claims",
                        "response", "response_given_gold_claims", "factuality",
                        "cost"):  # fmt: skip
            for key, value in getattr(self, section).items():
                if isinstance(value, dict):
                    out.update({f"{section}.{key}:{k}": float(v) for k, v in value.items()})
                elif isinstance(value, int | float) and not isinstance(value, bool):
                    out[f"{section}.{key}"] = float(value)
        return out


def response_label(checks: Sequence[dict[str, Any] | None]) -> str | None:
    """false if a checked claim is false, true if one is checked, else None."""
    truths = [_checked_label(c) for c in checks if c and c.get("status") == "checked"]
    if "false" in truths:
        return "false"
    return "true" if truths else None


def _responses(rows: list[tuple[str, str | None, str]]) -> dict[str, Any]:
    """(gold, predicted or None, status) per response."""
    answered = [(g, p) for g, p, s in rows if p is not None]
    status = Counter(s for _, p, s in rows if p is None)
    return {
        "n": len(rows),
        "answered": len(answered),
        "abstained": status.pop("abstained", 0),
        "not_checked": status.pop("not_checked", 0),
        "errors": sum(status.values()),
        "accuracy": _ratio(sum(g == p for g, p, _ in rows), len(rows)),
        "accuracy_answered": _ratio(sum(g == p for g, p in answered), len(answered)),
        "predicted_false": sum(p == "false" for _, p in answered),
    }


class _Tally:
    """What `document_metrics` counts, record by record."""

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.ext: Counter[str] = Counter()
        self.worth: tuple[list[str], list[str | None]] = ([], [])  # matched pairs
        self.gold_worth: tuple[list[str], list[str | None]] = ([], [])  # annotated claims
        self.facts: list[tuple[int, int, int]] = []  # per response: supported, checked, facts
        self.gold_claims: tuple[list[str], list[str | None]] = ([], [])
        self.gold_status: Counter[str] = Counter()
        self.extracted: tuple[list[str], list[str | None]] = ([], [])
        self.unmatched: Counter[str] = Counter()
        self.responses: list[tuple[str | None, str | None, str]] = []
        self.responses_gold: list[tuple[str | None, str | None, str]] = []
        self.matchers: set[str] = set()
        self.categories = False
        self.walls: list[float] = []
        self.calls: list[int] = []
        self.split: Counter[str] = Counter()  # the task's own totals: calls by step, wall

    def add(self, rec: Any) -> None:
        task = rec.verdict.metadata.get(TASK_KEY) if rec.verdict is not None else None
        gold_label = _gold_truth(rec)
        status = "ok" if rec.predicted is not None else rec.status
        self.responses.append((gold_label, _truth(rec), status))
        self.walls.append(rec.latency_s)
        self.calls.append(rec.usage.llm_calls)
        if task is None:
            self.responses_gold.append((gold_label, None, status))
            return
        self.matchers.add(task["matcher"])
        self.split.update(
            extraction_calls=task.get("extraction_llm_calls", 0),
            gold_calls=task.get("gold_llm_calls", 0),
            document_wall_s=task.get("document_wall_s", 0.0),
        )
        extracted, gold = task["extracted"], task["gold"]
        pairs = greedy_match(task["similarity"], self.threshold)
        self.ext["extraction_failed"] += bool(task.get("extraction_error"))
        self.ext.update(gold=len(gold), extracted=len(extracted), matched=len(pairs),
                        checkworthy=sum(bool(c["checkworthy"]) for c in extracted),
                        checked=sum(c["status"] == "checked" for c in extracted))  # fmt: skip
        for i, j in pairs:
            if gold[j].get("category") is not None:
                self.categories = True
                self.worth[0].append(WORTH[0] if gold[j]["checkworthy"] else WORTH[1])
                self.worth[1].append(WORTH[0] if extracted[i]["checkworthy"] else WORTH[1])
        for g in gold:
            if g.get("category") is not None and g.get("predicted_category") is not None:
                self.gold_worth[0].append(WORTH[0] if g["checkworthy"] else WORTH[1])
                predicted = g["predicted_category"] == "factual"
                self.gold_worth[1].append(WORTH[0] if predicted else WORTH[1])
        if not task.get("extraction_error"):
            self.facts.append(_facts(extracted))
        self._extracted_claims(extracted, gold, dict(pairs))
        checks = [g.get("check") for g in gold]
        self._gold_claims(gold, checks)
        predicted = response_label(checks)
        gold_status = "ok" if predicted else ("abstained" if any(checks) else "not_checked")
        self.responses_gold.append((gold_label, predicted, gold_status))

    def _extracted_claims(self, extracted: list, gold: list, matched_to: dict[int, int]) -> None:
        for i, claim in enumerate(extracted):
            if claim["status"] != "checked":
                continue
            j = matched_to.get(i)
            if j is None:
                self.unmatched[claim["truth"] or "middle"] += 1
            elif gold[j].get("label") not in TRUTH:
                self.ext["matched_unlabelled"] += 1
            else:
                self.extracted[0].append(gold[j]["label"])
                self.extracted[1].append(claim["truth"])

    def _gold_claims(self, gold: list, checks: list) -> None:
        for g, check in zip(gold, checks, strict=True):
            if check is None:
                continue
            self.gold_status[check["status"]] += 1
            if g.get("label") in TRUTH:
                self.gold_claims[0].append(g["label"])
                self.gold_claims[1].append(_checked_label(check))
            else:
                self.gold_status["unlabelled_gold"] += 1

    def result(self) -> DocumentMetrics:
        n, ext = len(self.responses), self.ext
        worth = label_scores(*self.worth, WORTH) if self.categories else None
        gold_worth = label_scores(*self.gold_worth, WORTH) if self.gold_worth[0] else None
        extracted = label_scores(*self.extracted, TRUTH)
        extracted.update(checked=ext["checked"], matched_to_unlabelled=ext["matched_unlabelled"],
                         unmatched_checked=dict(self.unmatched))  # fmt: skip
        return DocumentMetrics(
            documents=n,
            matcher=", ".join(sorted(self.matchers)) or "none",
            threshold=self.threshold,
            extraction={
                "annotated_claims": ext["gold"],
                "extracted_claims": ext["extracted"],
                "matched": ext["matched"],
                "recall": _ratio(ext["matched"], ext["gold"]),
                "precision": _ratio(ext["matched"], ext["extracted"]),
                "failed": ext["extraction_failed"],  # answers whose extraction failed
            },
            checkworthiness=_worth(gold_worth, worth, self.categories),
            gold_claims={**label_scores(*self.gold_claims, TRUTH), **dict(self.gold_status)},
            extracted_claims=extracted,
            response=_responses(self.responses),
            response_given_gold_claims=_responses(self.responses_gold),
            factuality={
                **factscore(self.facts).model_dump(),
                "extraction_failed": ext["extraction_failed"],
            },
            cost={
                "claims_per_document_extracted": _ratio(ext["extracted"], n),
                "checkworthy_per_document_extracted": _ratio(ext["checkworthy"], n),
                "claims_per_document_annotated": _ratio(ext["gold"], n),
                "wall_s_per_document": _ratio(sum(self.walls), n),
                "llm_calls_per_document": _ratio(sum(self.calls), n),
                "extraction_llm_calls_per_document": _ratio(self.split["extraction_calls"], n),
                "gold_check_llm_calls_per_document": _ratio(self.split["gold_calls"], n),
                "extract_and_check_wall_s_per_document": _ratio(self.split["document_wall_s"], n),
            },
        )


def document_metrics(records: Sequence[Any], threshold: float) -> DocumentMetrics:
    """The document task's figures over `records` (prediction records of a document run).

    Records without the task's data (crashed responses) count as documents and as
    response errors only.
    """
    tally = _Tally(threshold)
    for rec in records:
        tally.add(rec)
    return tally.result()


def with_document_metrics(
    store: Any, records: Sequence[Any], metrics: Metrics, *, write: bool = True
) -> Metrics:
    """`metrics` with the document task's figures in ``extra`` (``section.name``), and
    (`write`) the whole `DocumentMetrics` written to ``document_metrics.json``; unchanged
    for a run that is not a document task.

    The threshold is the run config's (``document:``) for the matcher the run used.
    """
    tasks = [r.verdict.metadata[TASK_KEY] for r in records
             if r.verdict is not None and TASK_KEY in r.verdict.metadata]  # fmt: skip
    if not tasks:
        return metrics
    settings = task_config(store.read_config().get("document"))
    found = document_metrics(records, settings.threshold(tasks[0]["matcher"]))
    if write:
        store.write_json(store.path / METRICS_FILE, found.model_dump(mode="json"))
    return metrics.model_copy(update={"extra": {**metrics.extra, **found.flat()}})


HEADLINE = (
    ("claim extraction recall", "extraction.recall"),
    ("claim extraction precision", "extraction.precision"),
    ("check-worthiness F1 (factual)", "checkworthiness.f1_factual"),
    ("claims macro-F1, given the annotated claims", "gold_claims.macro_f1"),
    ("claims macro-F1, given the extracted claims", "extracted_claims.macro_f1"),
    ("answer accuracy (abstentions and errors count as misses)", "response.accuracy"),
    ("answer accuracy, abstentions and errors left out", "response.accuracy_answered"),
    ("factuality (FActScore, mean over answers)", "factuality.factuality"),
    ("factuality, length-penalised (γ = 10)", "factuality.factuality_penalised"),
    ("respond ratio", "factuality.respond_ratio"),
    ("supported of the checked claims (pooled)", "factuality.supported_share_of_decided"),
    ("claims per answer, extracted", "cost.claims_per_document_extracted"),
    ("claims per answer, annotated", "cost.claims_per_document_annotated"),
)


def headline(extra: dict[str, float]) -> list[tuple[str, float | None]]:
    """The document task's main figures for a report (empty for other runs; None: n/a)."""
    if "extraction.recall" not in extra and "cost.claims_per_document_annotated" not in extra:
        return []
    return [(name, extra.get(key)) for name, key in HEADLINE]


def _truth(rec: Any) -> str | None:
    """The record's response verdict as true / false, by `support_of` (the one rule the
    report and the views use; its verdict's space may differ)."""
    if rec.predicted is None or rec.verdict is None:
        return None
    return verdict_truth(rec.verdict.model_copy(update={"label": rec.predicted}))


def _gold_truth(rec: Any) -> str | None:
    """The response's gold label as true / false."""
    if rec.gold_original in TRUTH:
        return rec.gold_original
    if rec.gold is None or rec.verdict is None:
        return rec.gold
    return truth_of(rec.gold, get_label_space(rec.verdict.label_space))


def _worth(
    gold: dict[str, Any] | None, matched: dict[str, Any] | None, categories: bool
) -> dict[str, Any]:
    """Check-worthiness over the annotated claims (`gold`), the matched pairs' beside it."""
    if gold is None and not categories:
        return {"available": False, "note": "n/a: the set annotates no check-worthiness"}
    out: dict[str, Any] = {
        "available": gold is not None,
        "claims": gold["n"] if gold else 0,
        "f1_factual": gold["f1"].get(WORTH[0]) if gold else None,
        "macro_f1": gold["macro_f1"] if gold else None,
        "matched_pairs": matched["n"] if matched else 0,
        "matched_pairs_f1_factual": matched["f1"].get(WORTH[0]) if matched else None,
        "matched_pairs_macro_f1": matched["macro_f1"] if matched else None,
    }
    if gold is None:
        out["note"] = "the annotated claims were not classified (document.classify_gold_claims)"
    return out


def _facts(extracted: list[dict[str, Any]]) -> tuple[int, int, int]:
    """(supported, checked, check-worthy claims sent to the method) of one response."""
    checked = [c for c in extracted if c["status"] == "checked"]
    facts = sum(c["status"] in ("checked", "abstained", "error") for c in extracted)
    return sum(c["truth"] == "true" for c in checked), len(checked), facts


__all__ = [
    "METRICS_FILE",
    "DocumentMetrics",
    "document_metrics",
    "greedy_match",
    "label_scores",
    "response_label",
    "with_document_metrics",
]
