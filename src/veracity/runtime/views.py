"""A check's method-specific panels for the front ends (the web UI): the view parts a
method contributes through its `BaseMethod.view_parts` hook, asked of the method class a
stored verdict names. Front ends reach methods only through the runtime, so the part types
are re-exported here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from veracity.core import registry
from veracity.core.events import TraceEvent
from veracity.methods.view import ViewGroup, ViewItem, ViewPart


def method_view_parts(
    method: str | None, events: Sequence[TraceEvent], item: Mapping[str, Any]
) -> list[ViewPart]:
    """The panels the check's method adds (`BaseMethod.view_parts`); none for a method
    this process does not have (a stored check of a plugin since removed)."""
    if not method or method not in registry.methods:
        return []
    try:
        cls = registry.methods.get(method)
    except Exception:  # a plugin that no longer imports: the generic panels still show
        return []
    hook = getattr(cls, "view_parts", None)
    return list(hook(events, item)) if callable(hook) else []


__all__ = ["ViewGroup", "ViewItem", "ViewPart", "method_view_parts"]
