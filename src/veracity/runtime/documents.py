"""The document input kind's rules: a document is checked by a composite method over a
claim method, on the same road as every check (`veracity.runtime.service.Veracity.plan`).

How a run names it: the spec's method stays the **claim method**, and the input kind
selects the composite (`veracity.documents.DocumentChecker`). So a document check's run
is the claim method's own run, built once and kept by its spec (its caches, its sources'
caches and any memory it keeps are shared by every claim, and by claim checks on the same
spec); every claim method checks documents without a method per pair; and the run
directory records the method that gave the claims' verdicts. What only a document check
chooses (how claims are extracted, corrections, claims at once) is the check's
(`DocumentOptions`), not the run's.

The default claim method for a document is ``rag`` (`DEFAULT_DOCUMENT_METHOD`): of the
registered claim methods that retrieve evidence it costs least per claim, one search and
one model call, where ``fire``, ``safe`` or ``factool`` search and ask several times per
claim and the debates and trees (``toe``, ``radar``, ``d2d``) make tens of calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veracity.core.bounds import MAX_CONCURRENCY, completion_tokens_problem
from veracity.core.errors import problem_text
from veracity.documents import DocumentChecker, DocumentReport, DocumentText, reading
from veracity.evidence.claims import ClaimExtractor, ExtractionConfig
from veracity.runtime.rules import KIND_REFUSED, CheckRefused

if TYPE_CHECKING:
    from veracity.runtime import Run

DEFAULT_DOCUMENT_METHOD = "rag"
EXTRACTION_REFUSED = "invalid extraction options"
CONCURRENCY_REFUSED = "invalid concurrency"
OPTIONS_REFUSED = "document options on another input"


class DocumentOptions(BaseModel):
    """What a document check chooses beyond its run.

    Attributes:
        extraction: the claim-extraction settings.
        corrections: suggest a rewrite of each refuted claim, from its evidence.
        concurrency: claims checked at once (None: the run's ``concurrency``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    extraction: ExtractionConfig = Field(default_factory=ExtractionConfig)
    corrections: bool = False
    concurrency: int | None = Field(default=None, ge=1, le=MAX_CONCURRENCY)


def document_options(
    extraction: ExtractionConfig | Mapping[str, Any] | None = None,
    corrections: bool = False,
    concurrency: int | None = None,
) -> DocumentOptions:
    """A document check's options, validated once.

    Raises:
        CheckRefused: ``invalid extraction options`` or ``invalid concurrency``, saying
            which and why.
    """
    if concurrency is not None and not 1 <= concurrency <= MAX_CONCURRENCY:
        raise CheckRefused(
            CONCURRENCY_REFUSED,
            f"concurrency must be between 1 and {MAX_CONCURRENCY}, not {concurrency}",
        )
    return DocumentOptions(
        extraction=extraction_config(extraction), corrections=corrections, concurrency=concurrency
    )


def extraction_config(options: ExtractionConfig | Mapping[str, Any] | None) -> ExtractionConfig:
    """The claim-extraction settings `options` give (None: the defaults).

    Raises:
        CheckRefused: ``invalid extraction options``, saying which and why.
    """
    if options is None or isinstance(options, ExtractionConfig):
        return options or ExtractionConfig()
    try:
        return ExtractionConfig.model_validate(dict(options))
    except ValidationError as exc:
        raise CheckRefused(EXTRACTION_REFUSED, problem_text(exc, limit=5)) from exc


def claim_method_refusal(name: str, kinds: tuple[str, ...]) -> CheckRefused:
    """The refusal of a document check by method `name`, which takes no claims."""
    return CheckRefused(
        KIND_REFUSED,
        f"{name} checks {', '.join(kinds)} inputs, not claims, so it cannot check a "
        f"document's claims; pick a claim method (see `veracity methods`)",
    )


def document_method(run: Run, options: DocumentOptions) -> DocumentChecker:
    """The composite method checking documents over `run`'s claim method (the run's
    method, model, caches and sources are shared; this object is light).

    Raises:
        CheckRefused: the extraction's completion budget does not fit the model's window.
    """
    config = options.extraction
    too_long = completion_tokens_problem(config, run.llm.capabilities.context_window, "extraction")
    if too_long:
        raise CheckRefused(EXTRACTION_REFUSED, too_long)
    at_once = options.concurrency or run.spec.concurrency
    return DocumentChecker(
        run.method,
        ClaimExtractor(run.llm, config, prompts=run.method.claim_prompts),
        concurrency=at_once,
        corrections=options.corrections,
    )


async def fetch_document(url: str) -> DocumentText:
    """The document at `url`, fetched through the runtime's guarded HTTP client (public
    addresses only, redirects re-checked, size and time limits).

    Raises:
        InputError: it cannot be fetched or holds no text (the message names it and a fix).
    """
    from veracity.runtime.home import user_http_client

    return await reading.from_url(url, user_http_client())


__all__ = [
    "CONCURRENCY_REFUSED",
    "DEFAULT_DOCUMENT_METHOD",
    "EXTRACTION_REFUSED",
    "OPTIONS_REFUSED",
    "DocumentOptions",
    "DocumentReport",
    "DocumentText",
    "ExtractionConfig",
    "claim_method_refusal",
    "document_method",
    "document_options",
    "extraction_config",
    "fetch_document",
]
