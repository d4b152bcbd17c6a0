"""veracity: check claims, news articles and social-media posts with retrieval-grounded,
multi-agent LLM reasoning.

The public names below are imported on first use (PEP 562), so ``import veracity`` and
commands that need little of it (``veracity --help``) start quickly.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "acheck": "veracity.api",
    "acheck_document": "veracity.api",
    "check_document": "veracity.api",
    "as_input": "veracity.api",
    "check": "veracity.api",
    "LabelSpace": "veracity.core.labels",
    "get_label_space": "veracity.core.labels",
    "map_label": "veracity.core.labels",
    "load_method": "veracity.methods.base",
    **dict.fromkeys(
        (
            "Article", "Claim", "Document", "Evidence", "Post", "Reply", "Stance", "Trace",
            "TraceEvent", "Usage", "Verdict",
        ),
        "veracity.core.types",
    ),
}  # fmt: skip

__all__ = [
    "Article",
    "Claim",
    "Document",
    "Evidence",
    "LabelSpace",
    "Post",
    "Reply",
    "Stance",
    "Trace",
    "TraceEvent",
    "Usage",
    "Verdict",
    "__version__",
    "acheck",
    "acheck_document",
    "as_input",
    "check",
    "check_document",
    "get_label_space",
    "load_method",
    "map_label",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'veracity' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:
    from veracity.api import acheck, acheck_document, as_input, check, check_document
    from veracity.core.labels import LabelSpace, get_label_space, map_label
    from veracity.core.types import (
        Article,
        Claim,
        Document,
        Evidence,
        Post,
        Reply,
        Stance,
        Trace,
        TraceEvent,
        Usage,
        Verdict,
    )
    from veracity.methods.base import load_method
