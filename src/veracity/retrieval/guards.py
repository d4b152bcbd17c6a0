"""Leakage guards for evaluation: the contract between the runner and retrieving methods.

While `veracity eval` checks one benchmark example, it sets `EvalGuards` for that
example in a context variable:

- ``before``: the example's date (a claim's date, an article's publication time, a
  post's creation time). Evidence published on or after it must not be used, because
  it may contain the fact-check itself. `Query.before` already means "strictly before",
  so searching with ``before=<publication date>`` keeps evidence up to the day before.
- ``exclude_domains``: the fact-check sites the dataset was built from
  (`DatasetInfo.exclude_domains`), whose pages would give the answer away.

A method that searches applies the guards to every query it builds::

    from veracity.retrieval.guards import guard_query

    docs = await source.search(guard_query(Query(text=claim.text)))

`guard_query` returns the query unchanged outside an evaluation, so methods call it
unconditionally. The runner also wraps every source it builds for a run in
`GuardedSource`, which applies the same guards, so a method that forgets is still safe;
calling `guard_query` is idempotent, and doing both costs nothing.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from veracity.core.types import Document
from veracity.retrieval.base import Query, Source


@dataclass(frozen=True)
class EvalGuards:
    """Per-example retrieval restrictions during an evaluation.

    Attributes:
        before: only evidence published strictly before this date; None: no cutoff.
        exclude_domains: never evidence from these domains (or their subdomains).
        drop_undated: with `before`, also drop evidence whose date is unknown.
    """

    before: _dt.date | None = None
    exclude_domains: tuple[str, ...] = ()
    drop_undated: bool = False


# Kept ambient (issue 22): the example's leakage guards must bind every search of a check,
# including searches a method builds itself, so no method can forget to pass them.
_guards: ContextVar[EvalGuards | None] = ContextVar("veracity_eval_guards", default=None)


def current_guards() -> EvalGuards | None:
    """The guards of the example being evaluated, or None outside an evaluation."""
    return _guards.get()


@contextlib.contextmanager
def eval_guards(guards: EvalGuards | None) -> Iterator[None]:
    """Apply `guards` to every `guard_query` call made inside the block."""
    token = _guards.set(guards)
    try:
        yield
    finally:
        _guards.reset(token)


def guards_with_cutoff(before: _dt.date | None) -> EvalGuards | None:
    """The current guards with `before` as the cutoff when it is earlier (or the only one).

    For agents whose tools search on their own (MERMAID's executor, MCP tool servers):
    entering `eval_guards` with the result applies the checked input's own date too.
    """
    g = _guards.get()
    if before is None:
        return g
    if g is None:
        return EvalGuards(before=before)
    if g.before is not None and g.before <= before:
        return g
    return EvalGuards(before=before, exclude_domains=g.exclude_domains, drop_undated=g.drop_undated)


def guard_query(query: Query) -> Query:
    """`query` tightened by the current guards: the earlier cutoff, the union of exclusions."""
    g = _guards.get()
    if g is None:
        return query
    update: dict = {}
    if g.before is not None and (query.before is None or g.before < query.before):
        update["before"] = g.before
    if g.before is not None and g.drop_undated and not query.drop_undated:
        update["drop_undated"] = True
    # model_copy skips validation, so normalise the way Query's validator does
    wanted = (d.lower().strip().removeprefix("www.") for d in g.exclude_domains)
    missing = tuple(dict.fromkeys(d for d in wanted if d and d not in query.exclude_domains))
    if missing:
        update["exclude_domains"] = (*query.exclude_domains, *missing)
    return query.model_copy(update=update) if update else query


class GuardedSource:
    """A `Source` that applies the current `EvalGuards` to every query it is given."""

    def __init__(self, inner: Source):
        self.inner = inner
        self.name = inner.name
        self.kind = inner.kind

    async def search(self, query: Query) -> list[Document]:
        return await self.inner.search(guard_query(query))

    def __getattr__(self, name: str):  # close(), stats() etc. of the wrapped source
        if name == "inner":  # not yet set (e.g. while copying): no recursion
            raise AttributeError(name)
        return getattr(self.inner, name)
