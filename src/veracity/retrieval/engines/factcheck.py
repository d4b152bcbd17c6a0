"""Fact-check sources: Google Fact Check Tools (ClaimReview) and fact-check site search.

`GoogleFactCheckSource` searches published ClaimReview records. Each review becomes a
Document: its text states the reviewed claim, who made it and the publisher's rating;
``metadata`` carries the rating, publisher, claim and dates. The document date is the
review's publication date, so a cutoff keeps out fact-checks written after it.

`FactCheckSiteSearch` restricts any web engine to fact-checking sites (by default
politifact.com, snopes.com and factcheck.org).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, SecretStr

from veracity.core.bounds import Items
from veracity.core.dates import UTC, parse_date
from veracity.core.types import Document
from veracity.retrieval.base import Query, SourceAuthError, SourceError, apply_rules
from veracity.retrieval.engines.common import (
    SourceOptions,
    doc_id,
    expect_list,
    expect_mapping,
    resolve_secret,
)
from veracity.retrieval.engines.web import WebSearchSource
from veracity.retrieval.transport.http import HttpClient, HttpStatusError, default_http_client

FACT_CHECK_SITES: tuple[str, ...] = ("politifact.com", "snopes.com", "factcheck.org")


class GoogleFactCheckOptions(SourceOptions):
    max_age_days: Items | None = Field(default=None, ge=1)  # only reviews this recent
    page_size: int = Field(default=20, ge=1, le=100)


class GoogleFactCheckSource:
    """Google Fact Check Tools ``claims:search`` (``GOOGLE_FACTCHECK_API_KEY``).

    A single include domain goes to the API as ``reviewPublisherSiteFilter``; all
    domain rules and the cutoff are enforced by filtering.
    """

    kind = "factcheck"
    endpoint = "https://factchecktools.googleapis.com/v1alpha1/claims:search"
    env_var = "GOOGLE_FACTCHECK_API_KEY"

    def __init__(
        self,
        api_key: str | None = None,
        *,
        http: HttpClient | None = None,
        name: str = "google_factcheck",
        **options: Any,
    ):
        self.options = GoogleFactCheckOptions(**options)
        self.http = http or default_http_client()
        self.name = name
        self._key: SecretStr = resolve_secret(api_key, self.env_var, name)

    def __repr__(self) -> str:
        return f"GoogleFactCheckSource(name={self.name!r})"

    async def search(self, query: Query) -> list[Document]:
        """Search ClaimReview records (see the class docstring).

        Raises:
            SourceError: the typed failure; an invalid key (which Google answers with a
                400) is a `SourceAuthError`.
        """
        params: dict[str, Any] = {
            "query": query.render(quote=True, or_word="OR"),
            "languageCode": query.language,
            "pageSize": str(self.options.page_size),
            "key": self._key.get_secret_value(),
        }
        if len(query.include_domains) == 1:
            params["reviewPublisherSiteFilter"] = query.include_domains[0]
        if self.options.max_age_days:
            params["maxAgeDays"] = str(self.options.max_age_days)
        try:
            data = await self.http.get_json(self.name, self.endpoint, params=params)
        except HttpStatusError as exc:
            if "API_KEY_INVALID" in exc.body or "API key not valid" in exc.body:
                raise SourceAuthError(self.name, "Google rejected the API key") from exc
            raise
        data = expect_mapping(data, self.name)
        claims = expect_list(
            data, "claims", self.name, default_empty=not data or "nextPageToken" in data
        )
        docs: list[Document] = []
        for claim in claims:
            docs += self._reviews(expect_mapping(claim, self.name, "claim"), len(docs))
        return apply_rules(query, docs)

    def _reviews(self, claim: Any, offset: int) -> list[Document]:
        claim_text = str(claim.get("text") or "").strip()
        claimant = str(claim.get("claimant") or "").strip()
        out = []
        for review in expect_list(claim, "claimReview", self.name):
            review = expect_mapping(review, self.name, "claimReview")
            url = review.get("url")
            rating = str(review.get("textualRating") or "").strip()
            if not isinstance(url, str) or not url:
                raise SourceError(self.name, "a ClaimReview without url")
            publisher = review.get("publisher") or {}
            who = publisher.get("name") or publisher.get("site") or "the publisher"
            said = f" (claimed by {claimant})" if claimant else ""
            text = (
                f'Reviewed claim: "{claim_text}"{said}. Rating by {who}: {rating or "none given"}.'
            )
            rank = offset + len(out) + 1
            out.append(
                Document(
                    id=doc_id("factcheck", url),
                    text=text,
                    title=str(review.get("title") or claim_text or url),
                    url=url,
                    source=self.name,
                    published_at=parse_date(review.get("reviewDate"), lenient=True, tz=UTC),
                    score=1.0 / rank,
                    metadata={
                        "rating": rating,
                        "publisher": publisher.get("name"),
                        "publisher_site": publisher.get("site"),
                        "claim": claim_text,
                        "claimant": claimant or None,
                        "claim_date": claim.get("claimDate"),
                        "review_date": review.get("reviewDate"),
                        "language": review.get("languageCode"),
                    },
                )
            )
        return out


class FactCheckSiteSearch:
    """A web engine restricted to fact-checking sites.

    The engine gets the query with ``include_domains`` set to the fact-check sites (or,
    when the query already names domains, to the sites among them; when none is left the
    result is empty without a call). Documents keep the engine's fields and are marked
    with ``metadata["factcheck_site"]``.

    Args:
        engine: any web engine (Brave, Serper, Tavily, SearXNG, DuckDuckGo).
        sites: the fact-checking domains.
        name: instance name.
    """

    kind = "factcheck"

    def __init__(
        self,
        engine: WebSearchSource,
        sites: Sequence[str] = FACT_CHECK_SITES,
        name: str = "factcheck_sites",
    ):
        if not sites:
            raise ValueError("FactCheckSiteSearch needs at least one site")
        self.engine = engine
        self.sites = tuple(s.lower().removeprefix("www.") for s in sites)
        self.name = name

    def __repr__(self) -> str:
        return f"FactCheckSiteSearch({self.engine!r}, sites={list(self.sites)})"

    async def search(self, query: Query) -> list[Document]:
        """Search the fact-check sites through the engine."""
        sites = self.sites
        if query.include_domains:
            sites = tuple(
                s
                for s in sites
                if any(
                    s == d or s.endswith("." + d) or d.endswith("." + s)
                    for d in query.include_domains
                )
            )
            if not sites:
                return []
        restricted = query.model_copy(update={"include_domains": sites})
        docs = await self.engine.search(restricted)
        marked = [
            d.model_copy(
                update={"source": self.name, "metadata": {**d.metadata, "factcheck_site": d.domain}}
            )
            for d in docs
        ]
        return apply_rules(query, marked)
