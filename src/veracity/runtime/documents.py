"""Checking a whole document through the service: `Veracity.plan_document` does the work.

A document check passes the same rules as any check (the method exists, loads and takes
``claim`` inputs; the label space exists; request options are allowed), then reads the
document (text, a file, or a URL fetched through the runtime's guarded HTTP client), then
builds the claim method's run ONCE for the whole document, so its caches, its sources'
caches and any memory it keeps are shared by every claim, and the claim extractor on the
run's model. The claims are checked several at once, at most the run's ``concurrency``.

The default claim method is ``rag`` (`DEFAULT_DOCUMENT_METHOD`): of the registered claim
methods that retrieve evidence it costs least per claim, one search and one model call,
where ``fire``, ``safe`` or ``factool`` search and ask several times per claim and the
debates and trees (``toe``, ``radar``, ``d2d``) make tens of calls.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from veracity.core.bounds import MAX_CONCURRENCY, completion_tokens_problem
from veracity.core.errors import InputError, problem_text
from veracity.documents import DocumentChecker, DocumentReport, DocumentText, reading
from veracity.evidence.claims import ClaimExtractor, ExtractionConfig
from veracity.runtime.rules import (
    KIND_REFUSED,
    CheckRefused,
    method_class,
    request_options,
    require_labels,
)

if TYPE_CHECKING:
    from veracity.runtime import Run


class _Service(Protocol):
    """What a document check needs of `veracity.runtime.service.Veracity`."""

    options_refusal: str | None

    def models(self) -> list[str]: ...

    def _pick_sources(self, names: Sequence[str] | None) -> tuple[str, ...] | None: ...

    def run(
        self,
        method: str | None = ...,
        labels: str | None = ...,
        options: Mapping[str, Any] | None = ...,
        sources: Sequence[str] | None = ...,
        model: str | None = ...,
    ) -> Run: ...


DEFAULT_DOCUMENT_METHOD = "rag"
EXTRACTION_REFUSED = "invalid extraction options"
CONCURRENCY_REFUSED = "invalid concurrency"

DocumentInput = DocumentText | str | Path


@dataclass
class DocumentPlan:
    """A document check that passed every rule: its run, checker and the rules' choices.

    The document itself is read by `read` (a URL is fetched then), so nothing is fetched
    for a check that is refused.
    """

    run: Run
    checker: DocumentChecker
    source: DocumentInput | None
    url: str | None

    async def read(self) -> DocumentText:
        """The document: as given, from its file, or fetched from its URL.

        Raises:
            InputError: it cannot be read (the message names it and a fix).
        """
        return await read_document(self.source, url=self.url)

    async def check(self, document: DocumentText | None = None) -> DocumentReport:
        """Check `document` (default: `read` it) claim by claim."""
        return await self.checker.check(document or await self.read())


async def read_document(source: DocumentInput | None, *, url: str | None = None) -> DocumentText:
    """A `DocumentText` from text, a file path or a URL (exactly one of `source`, `url`).

    A URL is fetched through the runtime's guarded HTTP client (public addresses only,
    redirects re-checked, size and time limits).

    Raises:
        InputError: none or both given, or the document cannot be read.
    """
    if (source is None) == (url is None):
        raise InputError("give a document: its text, a file path or a URL (one of them)")
    if url is not None:
        from veracity.runtime.home import user_http_client

        return await reading.from_url(url, user_http_client())
    if isinstance(source, DocumentText):
        return source
    if isinstance(source, Path):
        return reading.from_file(source)
    if isinstance(source, str):
        return reading.from_text(source)
    raise InputError(
        f"cannot read a {type(source).__name__} as a document; give text, a Path or a URL"
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


def plan_document(
    service: _Service,
    source: DocumentInput | None = None,
    *,
    url: str | None = None,
    method: str | None = None,
    labels: str | None = None,
    options: Mapping[str, Any] | None = None,
    sources: Sequence[str] | None = None,
    model: str | None = None,
    extraction: ExtractionConfig | Mapping[str, Any] | None = None,
    corrections: bool = False,
    concurrency: int | None = None,
) -> DocumentPlan:
    """Check every rule of a document check, then build its run and checker (once).

    See `veracity.runtime.service.Veracity.plan_document` for the arguments.
    """
    if (source is None) == (url is None):
        raise InputError("give a document: its text, a file path or a URL (one of them)")
    name = method or DEFAULT_DOCUMENT_METHOD
    cls = method_class(name)
    if "claim" not in tuple(getattr(cls, "input_kinds", ())):
        kinds = ", ".join(getattr(cls, "input_kinds", ()))
        raise CheckRefused(
            KIND_REFUSED,
            f"{name} checks {kinds} inputs, not claims, so it cannot check a document's "
            f"claims; pick a claim method (see `veracity methods`)",
        )
    require_labels(labels)
    chosen = service._pick_sources(sources)
    settings = request_options(name, options, service.options_refusal)
    config = extraction_config(extraction)
    if concurrency is not None and not 1 <= concurrency <= MAX_CONCURRENCY:
        raise CheckRefused(
            CONCURRENCY_REFUSED,
            f"concurrency must be between 1 and {MAX_CONCURRENCY}, not {concurrency}",
        )
    if isinstance(source, str):
        reading.from_text(source)  # a blank text is refused before anything is built
    if model is not None and model not in service.models():
        from veracity.runtime.rules import MODEL_NOT_ALLOWED

        raise CheckRefused(MODEL_NOT_ALLOWED, f"choose one of: {', '.join(service.models())}")
    run = service.run(name, labels, settings, chosen, model)
    window = run.llm.capabilities.context_window
    too_long = completion_tokens_problem(config, window, "extraction")
    if too_long:
        raise CheckRefused(EXTRACTION_REFUSED, too_long)
    at_once = concurrency or (run.spec.concurrency if run.spec else run.config.concurrency)
    checker = DocumentChecker(
        run.method,
        ClaimExtractor(run.llm, config, prompts=run.method.claim_prompts),
        concurrency=at_once,
        corrections=corrections,
    )
    return DocumentPlan(run=run, checker=checker, source=source, url=url)


__all__ = [
    "CONCURRENCY_REFUSED",
    "DEFAULT_DOCUMENT_METHOD",
    "EXTRACTION_REFUSED",
    "DocumentInput",
    "DocumentPlan",
    "DocumentReport",
    "DocumentText",
    "ExtractionConfig",
    "extraction_config",
    "plan_document",
    "read_document",
]
