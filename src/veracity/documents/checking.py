"""Checking a document: extract its claims, check each with a claim method, collect.

`DocumentChecker` runs the shared claim-extraction stage (`veracity.evidence.claims`) over
the document's text (and the question it answers, when it is an answer), then sends every
check-worthy claim, made atomic and self-contained by that stage, to one registered claim
method, several at once (`concurrency`). A claim method that extracts claims itself
(SAFE, FacTool, FactCheck-GPT) takes each as its one claim (`given_atomic`), never
splitting it again. The method is
the same object for all of the document's claims, so its caches, its sources' caches
and any memory it keeps are shared across them. Refuted claims may get a suggested
correction grounded in the evidence their verdict cites (`corrections=True`).

A claim whose check fails is recorded as an error on that claim; the other claims go on.

Claims are checked as they are found: the extractor streams them window by window
(`ClaimExtractor.stream`), and each window's check-worthy claims are under way while later
windows are still being extracted, so the first verdict comes early.

Progress is traced as it happens: a `ClaimsFound` event as each window's claims are found,
listing every claim found so far (their ids, texts, spans and categories, and the texts of
the claims dropped as not anchored in the text, ``dropped_unanchored``), then a
`ClaimChecked` event as each claim ends (its status, support, label and score), so live
views can mark the document in place.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core import context
from veracity.core.errors import StructuredOutputError
from veracity.core.events import ClaimChecked, ClaimsFound
from veracity.core.types import Claim, Trace, Verdict
from veracity.core.usage import Usage
from veracity.documents.reading import DocumentText
from veracity.documents.report import (
    ClaimOutcome,
    Correction,
    DocumentReport,
    DocumentVerdict,
    outcome_of,
    summarise,
)
from veracity.evidence.claims import (
    ClaimExtraction,
    ClaimExtractor,
    ExtractedClaim,
    given_atomic,
)
from veracity.llm.base import LLM
from veracity.llm.structured import complete_structured
from veracity.prompting import render_messages

PROMPTS = "veracity.documents"
MAX_EVIDENCE_CHARS = 600  # per passage shown to the correction prompt
REUSE_KEPT = 4096  # verdicts of recurring claims kept (the most recently used)


class ExtractionFailed(StructuredOutputError):
    """The document's claims could not be extracted (replies stayed invalid); `usage`
    holds the model calls the attempt cost, so a caller can still count them."""

    def __init__(self, cause: StructuredOutputError, usage: Usage):
        super().__init__(str(cause), cause.attempts)
        self.usage = usage


class _CorrectionReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    correction: str | None = Field(default=None, max_length=600)
    evidence: list[int] = Field(default_factory=list, max_length=10)


class DocumentChecker:
    """The composite method that checks a document over one claim method.

    It has a method's face (``name``, ``input_kinds``, ``label_space``, ``check``), so a run
    checks a `DocumentText` with it on the same road as any input; anything else it is
    given goes to the claim method unchanged. `check` returns a `DocumentVerdict` whose
    typed payload is the `DocumentReport`, every claim's verdict (with its own trace)
    nested under that claim.

    Args:
        method: a registered claim method, already built (it must check ``claim`` inputs).
        extractor: the claim-extraction stage (normally on the method's LLM).
        concurrency: claims checked at once.
        corrections: suggest a rewrite for each refuted claim that cites evidence.
        llm: the model that writes corrections (default: the extractor's).

    A claim that recurs, in this document or a later one this object checks (the rows of a
    batch), with the same text, date and context, takes the verdict of its first check
    instead of a second check (the last `REUSE_KEPT` kept): its outcome says ``reused``
    and its verdict's usage is zero, as it cost nothing again (the summary counts them).
    A check that ended in a recorded fault is not kept: a later occurrence checks again.
    """

    def __init__(
        self,
        method: Any,
        extractor: ClaimExtractor,
        *,
        concurrency: int = 4,
        corrections: bool = False,
        llm: LLM | None = None,
    ):
        if "claim" not in method.input_kinds:
            raise TypeError(f"{method.name} does not check claims, so it cannot check documents")
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.method = method
        self.extractor = extractor
        self.concurrency = concurrency
        self.corrections = corrections
        self.llm = llm or extractor.llm
        self._verdicts: OrderedDict[tuple[Any, ...], asyncio.Future[Verdict]] = OrderedDict()

    @property
    def name(self) -> str:
        return self.method.name

    @property
    def input_kinds(self) -> tuple[str, ...]:
        return ("document", *self.method.input_kinds)

    @property
    def label_space(self) -> Any:
        return self.method.label_space

    async def check(self, item: Any) -> Verdict:
        """A document's `DocumentVerdict`; any other input is the claim method's to check."""
        if getattr(item, "kind", None) != "document":
            return await self.method.check(item)
        report, trace = await self._checked(item)
        return DocumentVerdict.of(report, trace)

    async def report(self, document: DocumentText) -> DocumentReport:
        """Every claim of `document` with its outcome, and the document's totals."""
        return (await self._checked(document))[0]

    async def _checked(self, document: DocumentText) -> tuple[DocumentReport, Trace]:
        """The report and the document's own trace. Claims are checked as the extractor
        streams them (`ClaimExtractor.stream`): the first window's claims are under way
        while later windows are extracted. Each `ClaimsFound` lists every claim found so
        far (a view that keeps the last one shows them all)."""
        started = time.perf_counter()
        with context.check_context() as ctx:
            gate = asyncio.Semaphore(self.concurrency)

            async def one(claim: ExtractedClaim) -> ClaimOutcome:
                if not claim.checkworthy:
                    outcome = ClaimOutcome(claim=claim, status="not_checkworthy")
                else:
                    async with gate:
                        outcome = await self._claim(claim, document)
                ctx.emit(_checked(outcome))
                return outcome

            stream = self.extractor.stream(document.text, question=document.question)
            tasks: list[asyncio.Task[ClaimOutcome]] = []
            try:
                async for batch in stream:
                    ctx.emit(_found(stream.result()))
                    tasks += [asyncio.ensure_future(one(c)) for c in batch]
                if not tasks:  # nothing found: said once all the same
                    ctx.emit(_found(stream.result()))
                outcomes = list(await asyncio.gather(*tasks))
            except StructuredOutputError as exc:
                raise ExtractionFailed(exc, ctx.usage.model_copy()) from exc
            finally:
                for task in tasks:
                    task.cancel()
        usage = ctx.usage.model_copy()
        for outcome in outcomes:
            if outcome.verdict is not None:
                usage.add(outcome.verdict.usage)
        found = stream.result()
        report = DocumentReport(
            document=document,
            method=self.method.name,
            label_space=self.method.label_space.name,
            claims=outcomes,
            summary=summarise(outcomes, len(found.dropped)),
            sentences=len(found.sentences),
            duplicates=found.duplicates,
            sentences_truncated=found.truncated,
            dropped_unanchored=[c.text for c in found.dropped],
            reattached=found.reattached,
            usage=usage,
            wall_time_s=round(time.perf_counter() - started, 3),
        )
        return report, ctx.trace

    async def _claim(self, claim: ExtractedClaim, document: DocumentText) -> ClaimOutcome:
        item = Claim(
            id=claim.id,
            text=claim.text,
            date=document.published_at.date() if document.published_at else None,
            context=f"a statement in the document {document.title!r}" if document.title else None,
        )
        try:
            verdict, reused = await self._verdict(item)
        except Exception as exc:  # a method bug must not lose the other claims' results
            return ClaimOutcome(claim=claim, status="error", error=f"{type(exc).__name__}: {exc}")
        outcome = outcome_of(claim, verdict)
        outcome.reused = reused
        if self.corrections and outcome.support == "refuted" and verdict.evidence:
            outcome.correction = await self._correct(claim, verdict)
        return outcome

    async def _verdict(self, item: Claim) -> tuple[Verdict, bool]:
        """The claim method's verdict on `item`, or the one an earlier check of the same
        claim gave (True: reused; its usage zero)."""
        key = (" ".join(item.text.split()).casefold(), item.date, item.context)
        earlier = self._verdicts.get(key)
        if earlier is not None:
            self._verdicts.move_to_end(key)
            first = await asyncio.shield(earlier)
            return first.model_copy(update={"usage": Usage()}), True
        pending: asyncio.Future[Verdict] = asyncio.get_running_loop().create_future()
        self._verdicts[key] = pending
        while len(self._verdicts) > REUSE_KEPT:
            self._verdicts.popitem(last=False)
        try:
            with given_atomic(item.text):  # a method that extracts must not split it again
                verdict = await self.method.check(item)
        except BaseException as exc:
            self._verdicts.pop(key, None)  # a later occurrence checks it again
            if isinstance(exc, asyncio.CancelledError):
                pending.cancel()
            else:
                pending.set_exception(exc)
                pending.exception()  # retrieved: no "never retrieved" warning without waiters
            raise
        if verdict.error is not None and self._verdicts.get(key) is pending:
            # a fault of this check (retried, then recorded) is not the claim's verdict: a
            # later occurrence checks it again (those already waiting share this one)
            del self._verdicts[key]
        pending.set_result(verdict)
        return verdict, False

    async def _correct(self, claim: ExtractedClaim, verdict: Verdict) -> Correction | None:
        passages = [
            f"[{i}] {(e.quote or e.document.text)[:MAX_EVIDENCE_CHARS]}"
            for i, e in enumerate(verdict.evidence, 1)
        ]
        messages = render_messages(
            PROMPTS,
            "correct.j2",
            claim=claim.text,
            evidence="\n\n".join(passages),
            ids=f"1-{len(passages)}",
        )
        try:
            reply = await complete_structured(
                self.llm, messages, _CorrectionReply, temperature=0.0, max_tokens=256,
                tag=f"correct:{claim.id}",
            )  # fmt: skip
        except StructuredOutputError:
            return None
        value = reply.value
        cited = sorted({i for i in value.evidence if 1 <= i <= len(passages)})
        if not value.correction or not value.correction.strip() or not cited:
            return None  # the evidence does not say what the right statement is
        return Correction(text=" ".join(value.correction.split()), evidence=cited)


def _found(extraction: ClaimExtraction) -> ClaimsFound:
    listed = [
        {"id": c.id, "text": c.text, "spans": [list(s) for s in c.spans], "category": c.category}
        for c in extraction.claims
    ]
    return ClaimsFound(
        name="claims", count=len(listed), claims=listed, sentences=len(extraction.sentences),
        dropped_unanchored=[c.text for c in extraction.dropped],
    )  # fmt: skip


def _checked(outcome: ClaimOutcome) -> ClaimChecked:
    verdict = outcome.verdict
    return ClaimChecked(
        name="claims",
        claim_id=outcome.claim.id,
        status=outcome.status,
        support=outcome.support,
        label=verdict.label if verdict is not None else None,
        score=verdict.score if verdict is not None else None,
        error=outcome.error,
    )
