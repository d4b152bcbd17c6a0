"""The Source protocol: every evidence source answers `search(Query) -> list[Document]`.

A `Query` carries free text and/or keywords with AND/OR composition (ZoFia builds
conjunctive entity queries), a result cap, a publication-date cutoff and domain rules.
Every source must honour the cutoff and domain rules — in the service call where the
service supports it, and always by filtering with `apply_rules` — and must raise a typed
`SourceError` instead of returning an empty list when something went wrong.
"""

from __future__ import annotations

import datetime as _dt
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from veracity.core.errors import (  # noqa: F401  (re-exported)
    SourceAuthError,
    SourceBadResponse,
    SourceError,
    SourceRateLimited,
    SourceUnreachable,
)
from veracity.core.types import Document


class Query(BaseModel):
    """A search request.

    Attributes:
        text: free-text query.
        keywords: terms (entities, phrases) combined with `operator`.
        operator: AND (all keywords) or OR (any keyword).
        top_k: most results to return.
        before: only documents published strictly before this date (leakage guard).
        drop_undated: with `before`, also drop documents with no publication date.
        include_domains: only results from these domains (and their subdomains).
        exclude_domains: never results from these domains (and their subdomains).
        language: ISO 639-1 code.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""
    keywords: tuple[str, ...] = ()
    operator: Literal["AND", "OR"] = "AND"
    top_k: int = Field(default=10, ge=1, le=1000)
    before: _dt.date | None = None
    drop_undated: bool = False
    include_domains: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()
    language: str = "en"

    @field_validator("keywords", "include_domains", "exclude_domains", mode="before")
    @classmethod
    def _tuple(cls, v: object) -> object:
        if isinstance(v, str):
            return (v,)
        return tuple(v) if isinstance(v, list | set) else v

    @field_validator("include_domains", "exclude_domains")
    @classmethod
    def _domains(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(d.lower().strip().removeprefix("www.") for d in v if d.strip())

    @field_validator("before", mode="before")
    @classmethod
    def _date(cls, v: object) -> object:
        return v.date() if isinstance(v, _dt.datetime) else v

    @model_validator(mode="after")
    def _non_empty(self) -> Query:
        if not self.text.strip() and not any(k.strip() for k in self.keywords):
            raise ValueError("a query needs text or at least one keyword")
        return self

    def render(self, quote: bool = True, or_word: str = "OR") -> str:
        """The query as one search string.

        Keywords are quoted as phrases (when `quote`) and joined by spaces for AND or by
        `or_word` for OR; free text, if any, comes first.
        """
        kws = [k.strip() for k in self.keywords if k.strip()]
        parts = [f'"{k}"' if quote and " " in k else k for k in kws]
        joined = f" {or_word} ".join(parts) if self.operator == "OR" else " ".join(parts)
        return " ".join(p for p in (self.text.strip(), joined) if p)


@runtime_checkable
class Source(Protocol):
    """An evidence source.

    Attributes:
        name: instance name used in traces and configs (e.g. "wikipedia", "local:scifact").
        kind: family ("local", "wikipedia", "web", "scholarly", "social", "factcheck",
            "recorded", "memory").
    """

    name: str
    kind: str

    async def search(self, query: Query) -> list[Document]: ...


def domain_matches(domain: str | None, rules: tuple[str, ...]) -> bool:
    """Whether `domain` is one of `rules` or a subdomain of one."""
    if not domain:
        return False
    return any(domain == r or domain.endswith("." + r) for r in rules)


def _published_date(doc: Document) -> _dt.date | None:
    return doc.published_at.date() if doc.published_at else None


def apply_rules(query: Query, docs: list[Document]) -> list[Document]:
    """Filter `docs` by the query's cutoff and domain rules, then cap at top_k."""
    kept = []
    for doc in docs:
        domain = doc.domain
        if query.exclude_domains and domain_matches(domain, query.exclude_domains):
            continue
        if query.include_domains and not domain_matches(domain, query.include_domains):
            continue
        if query.before is not None:
            published = _published_date(doc)
            if published is None and query.drop_undated:
                continue
            if published is not None and published >= query.before:
                continue
        kept.append(doc)
    return kept[: query.top_k]
