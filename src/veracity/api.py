"""The Python API: `check` / `acheck` (one input) and `check_document` /
`acheck_document` (a whole document, claim by claim)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veracity.core.config import RunConfig
from veracity.core.types import CheckInput, Verdict
from veracity.runtime import layered_config
from veracity.runtime.inputs import InputKind, infer_kind
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
    item: str | CheckInput | Mapping[str, Any],
    method: str | None = None,
    *,
    llm: LLM | None = None,
    labels: str | None = None,
    config: Mapping[str, Any] | None = None,
    kind: InputKind = "claim",
    sources: Mapping[str, Mapping[str, Any]] | None = None,
    run_config: RunConfig | str | Path | None = None,
    variant: str | None = None,
) -> Verdict:
    """Check one input with a registered method.

    Args:
        item: text, a mapping, or a Claim / Article / Post.
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
    """
    base = run_config if isinstance(run_config, RunConfig) else None
    path = None if isinstance(run_config, RunConfig) else run_config
    flags = {"method": method, "labels": labels, "method_config": config, "sources": sources}
    cfg = layered_config(path, variant=variant, flags=flags, base=base)
    with Veracity(cfg, llm=llm) as service:  # reads and checks the input, then runs
        return await service.check(item, kind=kind)


def check(
    item: str | CheckInput | Mapping[str, Any],
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
    document: str | Path | DocumentText | None = None,
    method: str | None = None,
    *,
    url: str | None = None,
    llm: LLM | None = None,
    labels: str | None = None,
    config: Mapping[str, Any] | None = None,
    sources: Mapping[str, Mapping[str, Any]] | None = None,
    extraction: Mapping[str, Any] | None = None,
    corrections: bool = False,
    concurrency: int | None = None,
    run_config: RunConfig | str | Path | None = None,
    variant: str | None = None,
) -> DocumentReport:
    """Check a whole document: find its claims, check each with one claim method.

    Args:
        document: its text, a file `Path` (txt, md, html, pdf) or a `DocumentText`.
        method: the claim method checking each claim (default: ``rag``, the cheapest
            retrieving one); built once for the whole document.
        url: a web page to fetch and check instead of `document` (public addresses only).
        llm, labels, config, sources, run_config, variant: as for `acheck`.
        extraction: claim-extraction settings (`veracity.evidence.claims.ExtractionConfig`
            fields, e.g. ``{"decompose": False}``).
        corrections: suggest a rewrite of each refuted claim, grounded in its evidence.
        concurrency: claims checked at once (default: the run config's ``concurrency``).

    Returns:
        Each claim with its character spans, status, verdict and any correction, and the
        document's totals and factuality.
    """
    base = run_config if isinstance(run_config, RunConfig) else None
    path = None if isinstance(run_config, RunConfig) else run_config
    flags = {"labels": labels, "method_config": config, "sources": sources}
    cfg = layered_config(path, variant=variant, flags=flags, base=base)
    async with Veracity(cfg, llm=llm) as service:
        return await service.check_document(
            document, url=url, method=method, labels=labels, extraction=extraction,
            corrections=corrections, concurrency=concurrency,
        )  # fmt: skip


def check_document(
    document: str | Path | DocumentText | None = None,
    method: str | None = None,
    **kwargs: Any,
) -> DocumentReport:
    """Synchronous `acheck_document`. Inside running async code, await that instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(acheck_document(document, method, **kwargs))
    raise RuntimeError(
        "veracity.check_document() was called inside a running event loop; use acheck_document()"
    )
