"""The document task of `veracity eval`: find a response's claims, check them, score both.

A dataset whose input kind is ``document`` (``factcheck_bench_documents``,
``factool_qa_documents``) is run as a document task. For each response `DocumentTask`:

1. runs the shared claim-extraction stage (`veracity.evidence.claims.ClaimExtractor`),
   which reads the question the response answers beside it, and checks each check-worthy
   claim with the run's claim method (`DocumentChecker`; the question is the document's
   title too);
2. checks each check-worthy annotated ("gold") claim with the same method
   (``check_gold_claims``), so checking can be scored apart from extraction; a method
   that extracts claims takes each as one atomic claim (`given_atomic`); and, for a set
   that annotates check-worthiness, puts each annotated claim in a category with the
   extraction's own step (``classify_gold_claims``, one call per response);
3. scores how alike each extracted claim is to each annotated claim (`ClaimMatcher`:
   cosine similarity of sentence embeddings, or word overlap when no embedder is
   installed) and keeps the whole matrix, so the threshold is applied when the metrics
   are computed (`veracity.evaluation.document_metrics`).

The response's label: false when a checked claim is refuted (`veracity.documents.report.
support_of`, the rule the report and the views use: its label on the false side of the
label space), true when at least one claim was checked and none is, and no label (an
abstention) when no claim was checked. Everything is kept in the
verdict's ``metadata["document_task"]``; the verdict's usage holds every model call
(extraction, checks, gold checks), so the run's usage counts them per document.

Settings: the run config's ``document:`` section (`DocumentTaskConfig`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veracity.core import context
from veracity.core.bounds import Concurrency
from veracity.core.errors import EvalError, StructuredOutputError, problem_text
from veracity.core.labels import LabelSpace
from veracity.core.types import Claim, Usage, Verdict
from veracity.documents import DocumentChecker, reading
from veracity.documents.report import ClaimOutcome, Support, support_of, support_of_label
from veracity.evidence.claims import ClaimExtractor, ExtractionConfig, given_atomic, word_overlap

TASK_KEY = "document_task"
DOCUMENT_KIND = "document"
Matcher = Literal["auto", "embedding", "lexical"]


class DocumentTaskConfig(BaseModel):
    """The ``document:`` section of a run config.

    Attributes:
        extraction: the claim-extraction settings (`ExtractionConfig`).
        match: how extracted claims are matched to annotated ones: ``embedding`` (cosine
            similarity of `embedder`'s sentence embeddings), ``lexical`` (word-set
            overlap, Jaccard) or ``auto`` (embedding when the embedder loads, else
            lexical; the one used is named in the metrics).
        embedder: the sentence embedder (`veracity.nlp.embeddings.get_embedder`).
        embedding_threshold: a pair matches at or above this cosine similarity.
        lexical_threshold: a pair matches at or above this word overlap.
        check_gold_claims: also check every check-worthy annotated claim.
        classify_gold_claims: also put every annotated claim of a set that annotates
            check-worthiness in a category with the extraction's own step (one call per
            response), for check-worthiness F1 over the annotated claims.
        claim_concurrency: claims of one response checked at once (None: the run's
            concurrency).
    """

    model_config = ConfigDict(extra="forbid")

    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    match: Matcher = "auto"
    embedder: str = "all-MiniLM-L6-v2"
    embedding_threshold: float = Field(default=0.7, gt=0.0, le=1.0)
    lexical_threshold: float = Field(default=0.5, gt=0.0, le=1.0)
    check_gold_claims: bool = True
    classify_gold_claims: bool = True
    claim_concurrency: Concurrency | None = Field(default=None, ge=1)

    def threshold(self, matcher: str) -> float:
        """The threshold of the matcher used (``lexical`` or an embedding one)."""
        return self.lexical_threshold if matcher == "lexical" else self.embedding_threshold


def task_config(data: Mapping[str, Any] | None) -> DocumentTaskConfig:
    """The ``document:`` section as `DocumentTaskConfig`.

    Raises:
        EvalError: a key or value it does not take, named.
    """
    try:
        return DocumentTaskConfig.model_validate(dict(data or {}))
    except ValidationError as exc:
        raise EvalError(f"document: {problem_text(exc, limit=5)}") from exc


class ClaimMatcher:
    """Similarity of extracted claims to annotated claims, by embedding or word overlap."""

    def __init__(self, kind: Matcher = "auto", embedder: str = "all-MiniLM-L6-v2"):
        self.embedder: Any = None
        self.note: str | None = None
        if kind != "lexical":
            try:
                from veracity.nlp.embeddings import get_embedder

                self.embedder = get_embedder(embedder)
                self.embedder.embed(["a claim"])  # loads it now: a missing model fails here
            except (ImportError, OSError, RuntimeError) as exc:
                if kind == "embedding":
                    raise EvalError(
                        f"document.match is embedding but the embedder {embedder!r} cannot be "
                        f"loaded ({exc}); install it or set document.match: lexical"
                    ) from exc
                self.embedder = None
                self.note = f"no embedder ({type(exc).__name__}): claims matched by word overlap"
        self.name = f"embedding:{embedder}" if self.embedder is not None else "lexical"

    def similarity(self, extracted: Sequence[str], gold: Sequence[str]) -> list[list[float]]:
        """Rows: extracted claims; columns: annotated claims; values in [0, 1]."""
        if not extracted or not gold:
            return [[] for _ in extracted]
        if self.embedder is None:
            return [[round(word_overlap(e, g), 4) for g in gold] for e in extracted]
        vectors = self.embedder.embed([*extracted, *gold])
        sims = np.clip(vectors[: len(extracted)] @ vectors[len(extracted) :].T, 0.0, 1.0)
        return [[round(float(v), 4) for v in row] for row in sims]


_TRUTH: dict[Support | None, str | None] = {"supported": "true", "refuted": "false"}


def truth_of(label: str | None, space: LabelSpace) -> str | None:
    """``true`` / ``false`` for a label on that side of `space` (the rule of
    `veracity.documents.report.support_of_label`); None for no label or a middle one."""
    return _TRUTH.get(support_of_label(label, space))


def verdict_truth(verdict: Verdict) -> str | None:
    """``true`` / ``false`` for a verdict on that side by `support_of` (the report's rule);
    None for no label or a middle one."""
    return _TRUTH.get(support_of(verdict))


def _verdict_row(verdict: Verdict | None, status: str) -> dict[str, Any]:
    """A checked claim's row; its truth is `support_of`'s, the rule the report uses."""
    return {
        "status": status,
        "label": verdict.label if verdict is not None else None,
        "truth": verdict_truth(verdict) if verdict and status == "checked" else None,
        "score": verdict.score if verdict is not None else None,
        "error": verdict.error if verdict is not None else None,
    }


def _outcome_row(outcome: ClaimOutcome) -> dict[str, Any]:
    claim = outcome.claim
    row = _verdict_row(outcome.verdict, outcome.status)
    if outcome.status == "error" and outcome.verdict is None:
        row["error"] = outcome.error
    return {"id": claim.id, "text": claim.text, "category": claim.category,
            "checkworthy": claim.checkworthy, "spans": claim.spans, **row}  # fmt: skip


class DocumentTask:
    """The run's claim method wrapped to check whole responses (see the module docstring).

    It is what the engine calls for each job: ``check(item)`` returns one `Verdict` per
    response, labelled in the claim method's label space.

    Args:
        method: the run's claim method (it must check claims).
        llm: the run's model (the extraction stage uses it, cached and counted).
        config: the ``document:`` settings.
        gold: example id -> its annotated claims (``metadata["gold_claims"]``).
        concurrency: claims of one response checked at once.
    """

    input_kinds = (DOCUMENT_KIND,)

    def __init__(
        self,
        method: Any,
        llm: Any,
        config: DocumentTaskConfig,
        gold: Mapping[str, list[dict[str, Any]]],
        concurrency: int,
        matcher: ClaimMatcher | None = None,
    ):
        if "claim" not in getattr(method, "input_kinds", ()):
            raise EvalError(f"{method.name} does not check claims: it cannot run a document task")
        self.method = method
        self.name = method.name
        self.label_space: LabelSpace = method.label_space
        self.config = config
        self.gold = gold
        self.concurrency = config.claim_concurrency or concurrency
        self.checker = DocumentChecker(
            method,
            ClaimExtractor(llm, config.extraction, prompts=method.claim_prompts),
            concurrency=self.concurrency,
        )
        self.matcher = matcher or ClaimMatcher(config.match, config.embedder)
        self.sources = getattr(method, "sources", {})
        self.setup_notes = [*getattr(method, "setup_notes", []), *filter(None, [self.matcher.note])]

    def recipe(self) -> Callable[[Any], DocumentTask]:
        """How a worker of another engine (Ray) builds this task over the run it built:
        picklable, the settings and annotated claims bound."""
        return partial(task_over, config=self.config, gold=dict(self.gold),
                       concurrency=self.concurrency)  # fmt: skip

    async def check(self, item: Claim) -> Verdict:
        """Extract, check and match the claims of one response.

        A failed extraction (replies that stay invalid) is the response's error; its
        annotated claims are checked all the same.
        """
        started = time.perf_counter()
        title = (item.context or "").removeprefix("answer to the question: ").strip() or None
        document = reading.from_text(item.text, title=title, question=title)
        report, error, lost = None, None, None
        try:
            report = await self.checker.report(document)
        except StructuredOutputError as exc:
            error = f"claim extraction failed: {exc}"
            lost = getattr(exc, "usage", None)  # what the failed extraction cost
        document_wall = time.perf_counter() - started
        space = self.label_space
        outcomes = report.claims if report is not None else []
        extracted = [_outcome_row(o) for o in outcomes]
        gold = list(self.gold.get(item.id, []))
        gold_rows, usage = await self._check_gold(gold)
        worth, unclassified = await self._classify_gold(gold, item.text, title, usage)
        gold_calls = usage.llm_calls
        similarity = self.matcher.similarity([c["text"] for c in extracted],
                                             [g["text"] for g in gold])  # fmt: skip
        checks = sum(o.verdict.usage.llm_calls for o in outcomes if o.verdict is not None)
        if report is not None:
            usage.add(report.usage)
        elif lost is not None:
            usage.add(lost)
        label, reason = self._response_label(extracted) if error is None else (None, error)
        task = {
            "matcher": self.matcher.name,
            "extracted": extracted,
            "gold": [
                {**g, "check": r, **({"predicted_category": k} if k is not None else {})}
                for g, r, k in zip(gold, gold_rows, worth, strict=True)
            ],
            "gold_unclassified": unclassified,
            "similarity": similarity,
            "summary": report.summary.model_dump(mode="json") if report is not None else None,
            "extraction_error": error,
            "extraction_llm_calls": (
                report.usage.llm_calls - checks
                if report is not None
                else lost.llm_calls
                if lost is not None
                else 0
            ),
            "document_wall_s": round(document_wall, 3),
            "gold_llm_calls": gold_calls,
        }
        return Verdict(
            label=label, label_space=space.name, method=self.name, usage=usage, error=error,
            abstained=label is None and error is None,
            abstain_reason=reason if label is None and error is None else None,
            rationale=reason, metadata={TASK_KEY: task},
        )  # fmt: skip

    def _response_label(self, extracted: list[dict[str, Any]]) -> tuple[str | None, str]:
        checked = [c for c in extracted if c["status"] == "checked"]
        false = [c["id"] for c in checked if c["truth"] == "false"]
        ranked = sorted(self.label_space.labels, key=self.label_space.score)
        if false:
            ids = ", ".join(false)
            return ranked[0], f"{len(false)} of {len(checked)} checked claims false: {ids}"
        if checked:
            return ranked[-1], f"none of {len(checked)} checked claims is false"
        counts = {s: sum(c["status"] == s for c in extracted) for s in
                  ("abstained", "error", "not_checkworthy")}  # fmt: skip
        parts = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no claims found"
        return None, f"no claim was checked ({parts})"

    async def _classify_gold(
        self, gold: list[dict[str, Any]], text: str, question: str | None, usage: Usage
    ) -> tuple[list[str | None], str | None]:
        """The extraction's check-worthiness category of each annotated claim, when the set
        annotates categories (Factcheck-Bench's check-worthiness subtask: the annotated
        claims classified, so the figure does not depend on which claims were extracted);
        its model calls are added to `usage`. Returns the categories (None: not classified)
        and, where they were not, why (None: classified, or the set annotates none)."""
        none: list[str | None] = [None] * len(gold)
        if not gold or not any(g.get("category") is not None for g in gold):
            return none, None
        if not (self.config.classify_gold_claims and self.config.extraction.checkworthiness):
            return none, "off (document.classify_gold_claims or extraction.checkworthiness)"
        why = None
        with context.check_context() as ctx:
            try:
                found: list[str | None] = list(
                    await self.checker.extractor.categorise(
                        [g["text"] for g in gold], text, question=question
                    )
                )
            except StructuredOutputError as exc:
                found, why = none, f"classification failed: {exc}"
        usage.add(ctx.usage)
        return found, why

    async def _check_gold(self, gold: list[dict[str, Any]]) -> tuple[list[dict | None], Usage]:
        """Each check-worthy annotated claim checked with the method (None: not checked)."""
        usage = Usage()
        if not self.config.check_gold_claims:
            return [None] * len(gold), usage
        gate = asyncio.Semaphore(self.concurrency)

        async def one(k: int, claim: dict[str, Any]) -> dict[str, Any] | None:
            if claim.get("checkworthy") is False:
                return None
            async with gate:
                try:
                    with given_atomic(claim["text"]):  # annotated claims are atomic already
                        verdict = await self.method.check(Claim(id=f"g{k + 1}", text=claim["text"]))
                except Exception as exc:  # a method bug must not lose the other claims
                    return {"status": "error", "label": None, "truth": None, "score": None,
                            "error": f"{type(exc).__name__}: {exc}"}  # fmt: skip
            usage.add(verdict.usage)
            status = "error" if verdict.error else "checked" if verdict.label else "abstained"
            return _verdict_row(verdict, status)

        rows = await asyncio.gather(*(one(k, c) for k, c in enumerate(gold)))
        return list(rows), usage

    def prompt_hashes(self) -> dict[str, str]:
        return self.method.prompt_hashes()


def task_over(
    run: Any, config: DocumentTaskConfig, gold: Mapping[str, Any], concurrency: int
) -> DocumentTask:
    """The document task over a built `run` (its claim method and model): what a worker
    of another engine checks with (`DocumentTask.recipe`)."""
    return DocumentTask(run.method, run.llm, config, gold, concurrency)


def document_method(method: Any, llm: Any, config: Any, examples: Sequence[Any]) -> DocumentTask:
    """The document task over `examples` with the run's claim `method` and model.

    Args:
        method: the run's claim method.
        llm: the run's model.
        config: the run config (its ``document`` section and ``concurrency``).
        examples: the examples to run, each with ``metadata["gold_claims"]``.

    Raises:
        EvalError: the ``document`` section is invalid, or the method checks no claims.
    """
    settings = task_config(config.document)
    gold = {e.id: list(e.metadata.get("gold_claims") or []) for e in examples}
    return DocumentTask(method, llm, settings, gold, config.concurrency)


__all__ = [
    "DOCUMENT_KIND",
    "TASK_KEY",
    "ClaimMatcher",
    "DocumentTask",
    "DocumentTaskConfig",
    "document_method",
    "task_config",
    "truth_of",
    "verdict_truth",
]
