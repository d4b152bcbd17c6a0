"""Evidence sources: the Source protocol, the built-in sources, and what wraps them.

Names are imported lazily (on first use), so `import veracity.retrieval` stays cheap.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Query": "base",
    "Source": "base",
    "SourceError": "base",
    "SourceAuthError": "base",
    "SourceRateLimited": "base",
    "SourceUnreachable": "base",
    "SourceBadResponse": "base",
    "apply_rules": "base",
    "ManagedSource": "managed",
    "CombinedSource": "managed",
    "ensure_managed_source": "managed",
    "EvalGuards": "guards",
    "GuardedSource": "guards",
    "guard_query": "guards",
    "build_source": "registry_setup",
    "build_sources": "registry_setup",
    "LocalCorpus": "local",
    "build_local_corpus": "local",
    "WikipediaSource": "wikipedia",
    "BraveSearchSource": "web",
    "SerperSource": "web",
    "TavilySource": "web",
    "SearxngSource": "web_free",
    "DuckDuckGoSource": "web_free",
    "ArxivSource": "scholarly",
    "PubMedSource": "scholarly",
    "SemanticScholarSource": "scholarly",
    "RedditSource": "social",
    "GoogleFactCheckSource": "factcheck",
    "RecordedSource": "recorded",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'veracity.retrieval' has no attribute {name!r}")
    return getattr(importlib.import_module(f"veracity.retrieval.{module}"), name)
