"""The Python API: `check` / `acheck` (one input: a claim, article, post or a whole
document, claim by claim); `check_document` / `acheck_document` return a document's report."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veracity.core.config import RunConfig
from veracity.core.types import Verdict
from veracity.runtime import layered_config
from veracity.runtime.inputs import Input, InputKind, infer_kind
from veracity.runtime.inputs import read_input as as_input
from veracity.runtime.service import LLM, Veracity

if TYPE_CHECKING:
    from veracity.runtime.documents import DocumentReport, DocumentText

__all__ = [
    "InputKind",
    "acheck",
    "acheck_document",
    "as_input",
    "check",
    "check_document",
    "infer_kind",
]


async def acheck(
    item: str | Input | Path | Mapping[str, Any] | None,
    method: str | None = None,
    *,
    llm: LLM | None = None,
    labels: str | None = None,
    config: Mapping[str, Any] | None = None,
    kind: InputKind = "claim",
    sources: Mapping[str, Mapping[str, Any]] | None = None,
    run_config: RunConfig | str | Path | None = None,
    variant: str | None = None,
    url: str | None = None,
    extraction: Mapping[str, Any] | None = None,
    corrections: bool = False,
    concurrency: int | None = None,
) -> Verdict:
    """Check one input with a registered method.

    A document (``kind="document"``, a `DocumentText`, a file `Path` or a `url`) is
    checked claim by claim with one claim method (default: ``rag``, the cheapest
    retrieving one), built once for the whole document; its verdict is a
    `veracity.documents.report.DocumentVerdict` whose ``report`` holds each claim with
    its spans, status, verdict and any correction, and the document's totals.

    Args:
        item: text, a mapping, or a Claim / Article / Post / DocumentText (None: `url`).
        method: registered method name (see `veracity methods`); default: the run
            config's, else ``direct``.
        llm: the model; default: built from the run config / ``VERACITY_*`` settings
            (the embedded model).
        labels: label space name, overriding the method's default.
        config: method config overrides (``method_config``).
        kind: how to read plain text.
        sources: evidence sources by name, as in a run config's ``sources:``.
        run_config: a run or experiment config (object or YAML path) to start from.
        variant: a variant of that config.
        url: a web page to fetch and check as a document (public addresses only).
        extraction: a document's claim-extraction settings
            (`veracity.evidence.claims.ExtractionConfig` fields, e.g. ``{"decompose": False}``).
        corrections: suggest a rewrite of each refuted claim of a document, from its evidence.
        concurrency: a document's claims checked at once (default: the run's ``concurrency``).
    """
    base = run_config if isinstance(run_config, RunConfig) else None
    path = None if isinstance(run_config, RunConfig) else run_config
    flags = {"method": method, "labels": labels, "method_config": config, "sources": sources}
    cfg = layered_config(path, variant=variant, flags=flags, base=base)
    document = {"url": url, "extraction": extraction, "corrections": corrections}
    async with Veracity(cfg, llm=llm) as service:  # reads and checks the input, then runs
        return await service.check(
            item, kind=kind, method=method, concurrency=concurrency, **document
        )


def check(
    item: str | Input | Path | Mapping[str, Any] | None,
    method: str | None = None,
    **kwargs: Any,
) -> Verdict:
    """Synchronous `acheck`. Inside running async code, await `acheck` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(acheck(item, method, **kwargs))
    raise RuntimeError("veracity.check() was called inside a running event loop; use acheck()")


async def acheck_document(
    document: str | Path | DocumentText | None = None, method: str | None = None, **kwargs: Any
) -> DocumentReport:
    """`acheck` of a document, returning its report (the verdict's ``report``): kept for
    callers of the earlier API; same arguments as `acheck`."""
    verdict = await acheck(document, method, kind="document", **kwargs)
    return verdict.report  # type: ignore[attr-defined]


def check_document(
    document: str | Path | DocumentText | None = None, method: str | None = None, **kwargs: Any
) -> DocumentReport:
    """Synchronous `acheck_document`. Inside running async code, await that instead."""
    return check(document, method, kind="document", **kwargs).report  # type: ignore[attr-defined]
