"""`ManagedSource` and `CombinedSource`: what every source gets for free.

`ManagedSource` is to sources what `ManagedLLM` is to LLMs: it retries transient failures
(rate limits, unreachable services) with backoff, applies the query's cutoff and domain
rules once more as a last guard, stamps `retrieved_at`, counts searches and failures, and
records each search in the running check's context (query, result ids and URLs, whether
the answer came from the HTTP cache, latency), and each search that failed after its
retries as a failed search (`CheckContext.record_search_failure`). `retrieved_at` is the
time the service's answer was fetched, which for a cached answer is its original fetch.
Raw sources do not record searches themselves; wrap them once (the registry's
`build_sources` does).

`CombinedSource` runs several sources at once and merges their results (see its
docstring for the failure rules).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from veracity.core import context
from veracity.core.events import Fault
from veracity.core.infra import LoopSemaphore, RetryPolicy, retrying
from veracity.core.types import Document
from veracity.retrieval.base import (
    Query,
    Source,
    SourceBadResponse,
    SourceError,
    SourceRateLimited,
    SourceUnreachable,
    apply_rules,
)
from veracity.retrieval.guards import guard_query
from veracity.retrieval.transport.http import track_requests

TRANSIENT = (SourceRateLimited, SourceUnreachable)
_TRACKING_PARAMS = ("utm_", "fbclid", "gclid", "mc_cid", "mc_eid", "ref_src", "igshid")


class ManagedSource:
    """A `Source` with retries, a final rules guard and accounting.

    Args:
        inner: the source to wrap.
        retry: policy for transient `SourceError`s (the HTTP client already retries each
            request; this covers whole searches, e.g. a source that made several calls).
        max_concurrency: most searches in flight at once through this object (None: no
            limit).
        record: record each search in the check context (turn off only for sources that
            record their own searches, such as the `InMemorySource` test double).
        spec: how the source was configured (``options``, ``http_cache``,
            ``cache_mode``), set by `veracity.runtime`, so that it can be built again in
            another process (MERMAID's MCP tool server); None for sources made in code.
    """

    def __init__(
        self,
        inner: Source,
        *,
        retry: RetryPolicy | None = None,
        max_concurrency: int | None = None,
        record: bool = True,
        spec: dict[str, Any] | None = None,
    ):
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.inner = inner
        self.retry = retry or RetryPolicy(max_attempts=2)
        self.max_concurrency = max_concurrency
        self.record = record
        self.spec = spec
        self.searches = 0
        self.failures = 0
        self._limit = LoopSemaphore(max_concurrency)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def kind(self) -> str:
        return self.inner.kind

    def __repr__(self) -> str:
        return f"ManagedSource({self.inner!r})"

    def __getattr__(self, attr: str) -> Any:
        # Source-specific helpers (WikipediaSource.summary, ...) stay reachable.
        if attr == "inner":
            raise AttributeError(attr)
        return getattr(self.inner, attr)

    async def search(self, query: Query) -> list[Document]:
        """Search the wrapped source; see the class docstring for what is added.

        Raises:
            SourceError: the typed error of the last attempt (after recording it).
        """
        ctx = context.current()
        started = time.perf_counter()
        query = guard_query(query)  # the one place evaluation guards are applied

        async def attempt() -> list[Document]:
            return await self._limit.run(lambda: self.inner.search(query))

        def retry(exc: BaseException, n: int, delay: float) -> None:
            ctx.emit(Fault(name=self.name, error=str(exc), attempt=n, retry_in_s=round(delay, 3)))

        def give_up(exc: BaseException, n: int) -> None:
            self.failures += 1
            error = f"{type(exc).__name__}: {exc}"
            data = {"query": query.model_dump(mode="json"), "attempts": n}
            if self.record:  # a failed search counts in the check's usage
                ctx.record_search_failure(name=self.name, error=error, **data)
            else:
                ctx.emit(Fault(name=self.name, error=error, **data))

        with track_requests() as tally:  # every attempt's HTTP answers
            docs = await retrying(
                attempt,
                self.retry,
                retry_on=(SourceError,),
                give_up_if=lambda exc: not isinstance(exc, TRANSIENT),
                retry_after=lambda exc: getattr(exc, "retry_after", None),
                on_retry=retry,
                on_give_up=give_up,
            )
        try:
            docs = self._finish(query, docs, tally.earliest)
        except SourceError as exc:  # an answer that is not a list of documents
            give_up(exc, 1)
            raise
        self.searches += 1
        if self.record:
            ctx.record_search(
                name=self.name,
                cached=tally.cached > 0 and tally.live == 0,
                source_kind=self.kind,
                query=query.model_dump(mode="json"),
                results=[{"id": d.id, "url": d.url} for d in docs],
                latency_s=round(time.perf_counter() - started, 4),
                http_live=tally.live,
                http_cached=tally.cached,
            )
        return docs

    def _finish(self, query: Query, docs: object, fetched: float | None) -> list[Document]:
        if not isinstance(docs, list) or not all(isinstance(d, Document) for d in docs):
            raise SourceBadResponse(
                self.name, f"search returned {type(docs).__name__}, not Documents"
            )
        # A replayed answer keeps the time it was first fetched.
        now = (
            datetime.fromtimestamp(fetched, timezone.utc) if fetched else datetime.now(timezone.utc)
        )
        stamped = [
            d if d.retrieved_at else d.model_copy(update={"retrieved_at": now}) for d in docs
        ]
        return apply_rules(query, stamped)


def normalize_url(url: str) -> str:
    """A URL reduced for duplicate detection.

    Scheme, ``www.``, fragment, trailing slash and tracking parameters are dropped; the
    host is lower-cased and the remaining query parameters are sorted.
    """
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower().removeprefix("www.")
        if parts.port and parts.port not in (80, 443):
            host = f"{host}:{parts.port}"
    except ValueError:  # a malformed URL is its own key
        return url.strip().lower()
    query = sorted(
        (k, v)
        for k, v in parse_qsl(parts.query, keep_blank_values=True)
        if not k.lower().startswith(_TRACKING_PARAMS)
    )
    path = parts.path.rstrip("/") or ""
    return urlunsplit(("", host, path, urlencode(query), ""))


def dedup_key(doc: Document) -> str:
    """The identity used to merge results: normalised URL, else id, else a text hash."""
    if doc.url:
        return "url:" + normalize_url(doc.url)
    if doc.id:
        return f"id:{doc.source}:{doc.id}"
    return "text:" + hashlib.sha1(" ".join(doc.text.split()).lower().encode()).hexdigest()


class CombinedSource:
    """Several sources searched in parallel, merged with de-duplication.

    Results are interleaved by rank (first result of each source, then the second, ...)
    in the order the sources were given. A document found by several sources appears
    once, as first seen, with ``metadata["found_by"]`` listing every ``{source, rank}``
    that returned it. The merged list passes the query's rules and is cut to top_k.

    Failures: when some sources fail and at least one succeeds, each failure is recorded
    as an ``error`` event in the check's trace (and in `last_failures`) and the other
    results are returned. When every source fails, the search raises: the error class
    shared by all failures, or `SourceUnreachable` when they differ, with every source's
    message (also on its ``errors`` attribute).

    Give it managed sources (each then records its own search); do not wrap a
    `CombinedSource` itself in `ManagedSource`, or searches are counted twice.
    """

    kind = "combined"

    def __init__(self, sources: Sequence[Source], name: str = "combined"):
        if not sources:
            raise ValueError("CombinedSource needs at least one source")
        names = [s.name for s in sources]
        if len(set(names)) != len(names):
            raise ValueError(f"source names must be unique, got {names}")
        self.sources = list(sources)
        self.name = name
        self.last_failures: dict[str, SourceError] = {}

    def __repr__(self) -> str:
        return f"CombinedSource({', '.join(s.name for s in self.sources)})"

    async def search(self, query: Query) -> list[Document]:
        """Search every source at once; see the class docstring for merging and failures."""
        outcomes = await asyncio.gather(
            *(s.search(query) for s in self.sources), return_exceptions=True
        )
        failures: dict[str, SourceError] = {}
        lists: list[tuple[str, list[Document]]] = []
        for source, outcome in zip(self.sources, outcomes, strict=True):
            if isinstance(outcome, SourceError):
                failures[source.name] = outcome
            elif isinstance(outcome, BaseException):
                raise outcome  # a bug, not a source failure: never hide it
            else:
                lists.append((source.name, outcome))
        self.last_failures = failures
        if not lists:
            raise _all_failed(self.name, failures)
        ctx = context.current()
        for name, exc in failures.items():
            ctx.emit(
                Fault(
                    name=self.name,
                    error=f"{type(exc).__name__}: {exc}",
                    detail={"failed_source": name},
                )
            )
        return apply_rules(query, merge_ranked(lists))


def merge_ranked(lists: Sequence[tuple[str, list[Document]]]) -> list[Document]:
    """Interleave ranked lists by rank, de-duplicating and recording provenance."""
    merged: dict[str, Document] = {}
    depth = max((len(docs) for _, docs in lists), default=0)
    for rank in range(depth):
        for name, docs in lists:
            if rank >= len(docs):
                continue
            doc = docs[rank]
            key = dedup_key(doc)
            found = {"source": name, "rank": rank + 1}
            if key in merged:
                merged[key].metadata["found_by"].append(found)
                continue
            metadata = {**doc.metadata, "found_by": [found]}
            merged[key] = doc.model_copy(update={"metadata": metadata})
    return list(merged.values())


def _all_failed(name: str, failures: dict[str, SourceError]) -> SourceError:
    message = "every source failed: " + "; ".join(
        f"{src}: {type(e).__name__}: {e}" for src, e in failures.items()
    )
    classes = {type(e) for e in failures.values()}
    cls = classes.pop() if len(classes) == 1 else SourceUnreachable
    try:
        error = cls(name, message)
    except TypeError:  # a subclass with a different constructor
        error = SourceUnreachable(name, message)
    error.errors = failures  # type: ignore[attr-defined]
    return error


__all__ = ["CombinedSource", "ManagedSource", "dedup_key", "merge_ranked", "normalize_url"]


def ensure_managed_source(source: Source) -> Source:
    """`source` wrapped once in `ManagedSource` (sources that already manage accounting —
    a `ManagedSource`, or a `CombinedSource` of managed parts — are returned as they are).
    Objects without a `search` method (e.g. an encyclopedia) are returned unchanged."""
    if isinstance(source, ManagedSource | CombinedSource) or not hasattr(source, "search"):
        return source
    return ManagedSource(source)
