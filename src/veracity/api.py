"""The Python API: `check` (sync) and `acheck` (async)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from veracity.core.config import RunConfig
from veracity.core.errors import InputError
from veracity.core.textio import MAX_JSON_DEPTH, depth
from veracity.core.types import Article, CheckInput, Claim, Post, Verdict
from veracity.llm.base import LLM
from veracity.runtime import build_run, resolve_config

InputKind = Literal["claim", "article", "post"]


_ONLY_FIELDS: dict[InputKind, set[str]] = {
    "article": {"body", "title", "url", "published_at"},
    "post": {"replies", "author", "created_at"},
    "claim": {"speaker", "context", "evidence", "date"},
}


def infer_kind(item: Mapping[str, Any]) -> InputKind | None:
    """The input kind a mapping's fields belong to alone (``body`` or ``title``: an
    article; ``replies`` or ``author``: a post; ``speaker``, ``evidence``...: a claim), or
    None when they fit more than one kind or none."""
    fits = [k for k, only in _ONLY_FIELDS.items() if only & set(item)]
    return fits[0] if len(fits) == 1 else None


def as_input(item: str | CheckInput | Mapping[str, Any], kind: InputKind = "claim") -> CheckInput:
    """Coerce text or a mapping into a Claim, Article or Post.

    Plain text becomes a Claim (or an Article body / Post text with `kind`); a mapping
    is validated as the type its ``kind`` key names, else the type its fields show
    (`infer_kind`), else the `kind` argument.
    """
    if isinstance(item, Claim | Article | Post):
        return item
    if isinstance(item, str):
        data: Mapping[str, Any] = {
            {"claim": "text", "article": "body", "post": "text"}.get(kind, "text"): item
        }
        k: Any = kind
    elif isinstance(item, Mapping):
        data, k = item, item.get("kind") or infer_kind(item) or kind
        if depth(item) > MAX_JSON_DEPTH:
            raise InputError(f"the input is nested too deeply (the limit is {MAX_JSON_DEPTH})")
    else:
        data, k = {}, None
    model = {"claim": Claim, "article": Article, "post": Post}.get(k) if k is not None else None
    if model is not None:
        try:
            return model.model_validate({**data, "kind": k})
        except ValidationError as exc:
            if isinstance(item, str):
                raise InputError(_problems(exc, where=False)) from None
            raise InputError(f"not a valid {k}: {_problems(exc, where=True)}") from None
    if k is not None:
        raise InputError(f"unknown input kind {k!r}; use claim, article or post")
    raise TypeError(f"cannot check a {type(item).__name__}; give text, a Claim, Article or Post")


def _problems(exc: ValidationError, where: bool) -> str:
    """The validation errors as short lines, with the field path for structured input."""
    out = []
    for e in exc.errors()[:5]:
        msg = e["msg"].removeprefix("Value error, ")
        loc = ".".join(str(p) for p in e["loc"])
        out.append(f"{loc}: {msg}" if where and loc else msg)
    return "; ".join(out)


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
    checked = as_input(item, kind)  # a bad input fails before any model is loaded
    cfg = resolve_config(path, variant=variant, flags=flags, base=base)
    run = build_run(cfg, llm=llm)
    return await run.check(checked)


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
