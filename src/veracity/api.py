"""The Python API: `check` (sync) and `acheck` (async)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from veracity.core.config import RunConfig
from veracity.core.types import CheckInput, Verdict
from veracity.runtime import resolve_config
from veracity.runtime.inputs import InputKind, infer_kind
from veracity.runtime.inputs import read_input as as_input
from veracity.runtime.service import LLM, Veracity

__all__ = ["InputKind", "acheck", "as_input", "check", "infer_kind"]


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
    cfg = resolve_config(path, variant=variant, flags=flags, base=base)
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
