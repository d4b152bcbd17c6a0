"""The Python API: `check` (sync) and `acheck` (async)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Literal

from veracity.llm.base import LLM
from veracity.methods.base import load_method
from veracity.types import Article, CheckInput, Claim, Post, Verdict

InputKind = Literal["claim", "article", "post"]


def as_input(item: str | CheckInput | Mapping[str, Any], kind: InputKind = "claim") -> CheckInput:
    """Coerce text or a mapping into a Claim, Article or Post.

    Plain text becomes a Claim (or an Article body / Post text with `kind`); a mapping
    is validated as the type its ``kind`` key (or the `kind` argument) names.
    """
    if isinstance(item, Claim | Article | Post):
        return item
    if isinstance(item, str):
        if kind == "claim":
            return Claim(text=item)
        if kind == "article":
            return Article(body=item)
        return Post(text=item)
    if isinstance(item, Mapping):
        k = item.get("kind", kind)
        model = {"claim": Claim, "article": Article, "post": Post}.get(k)
        if model is None:
            raise ValueError(f"unknown input kind {k!r}; use claim, article or post")
        return model.model_validate({**item, "kind": k})
    raise TypeError(f"cannot check a {type(item).__name__}; give text, a Claim, Article or Post")


async def acheck(
    item: str | CheckInput | Mapping[str, Any],
    method: str = "direct",
    *,
    llm: LLM | None = None,
    labels: str | None = None,
    config: Mapping[str, Any] | None = None,
    kind: InputKind = "claim",
    **method_kwargs: Any,
) -> Verdict:
    """Check one input with a registered method.

    Args:
        item: text, a mapping, or a Claim / Article / Post.
        method: registered method name (see `veracity methods`).
        llm: the model; default: built from ``VERACITY_*`` settings (the embedded model).
        labels: label space name, overriding the method's default.
        config: method config overrides.
        kind: how to read plain text.
    """
    cfg = dict(config or {})
    if labels is not None:
        cfg["labels"] = labels
    m = load_method(method, llm=llm, config=cfg, **method_kwargs)
    return await m.check(as_input(item, kind))


def check(
    item: str | CheckInput | Mapping[str, Any],
    method: str = "direct",
    **kwargs: Any,
) -> Verdict:
    """Synchronous `acheck`. Inside running async code, await `acheck` instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(acheck(item, method, **kwargs))
    raise RuntimeError("veracity.check() was called inside a running event loop; use acheck()")
