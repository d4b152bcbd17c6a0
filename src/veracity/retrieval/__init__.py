"""Evidence sources: the Source protocol, the built-in sources, and what wraps them.

Layout: `base` (the protocol), `managed` and `guards` (what wraps every source),
`registry_setup` and `defaults` (building sources by name, zero-config choices);
`transport/` (the guarded HTTP client, its cache and page fetching), `engines/` (online
search engines: Wikipedia, web, scholarly, social, fact-check sites), `local/` (the
on-disk corpus: reading, building and searching an index) and `recorded/` (replaying
recorded search results).

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
    "LocalCorpus": "local.corpus",
    "build_local_corpus": "local.corpus",
    "WikipediaSource": "engines.wikipedia",
    "BraveSearchSource": "engines.web",
    "SerperSource": "engines.web",
    "TavilySource": "engines.web",
    "SearxngSource": "engines.web_free",
    "DuckDuckGoSource": "engines.web_free",
    "ArxivSource": "engines.scholarly",
    "PubMedSource": "engines.scholarly",
    "SemanticScholarSource": "engines.scholarly",
    "RedditSource": "engines.social",
    "GoogleFactCheckSource": "engines.factcheck",
    "RecordedSource": "recorded.source",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'veracity.retrieval' has no attribute {name!r}")
    return getattr(importlib.import_module(f"veracity.retrieval.{module}"), name)
