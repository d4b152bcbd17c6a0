"""Web search engines without API keys: SearXNG (self-hosted) and DuckDuckGo (ddgs).

See `web` for the shared behaviour (query rendering, rules filtering, page fetch).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field

from veracity.core.bounds import MAX_SECONDS
from veracity.core.types import Document
from veracity.retrieval.base import (
    Query,
    SourceAuthError,
    SourceBadResponse,
    SourceRateLimited,
    SourceUnreachable,
)
from veracity.retrieval.engines.common import (
    MissingCredentials,
    expect_list,
    expect_mapping,
    field_str,
    last_day_before,
    strip_html,
)
from veracity.retrieval.engines.web import WebOptions, WebSearchSource
from veracity.retrieval.transport.http import HttpClient

# --------------------------------------------------------------------------- SearXNG


class SearxngOptions(WebOptions):
    base_url: str | None = None  # default: $SEARXNG_URL
    categories: str = "general"
    engines: str | None = None  # comma-separated engine names; None: the instance's default
    safesearch: Literal[0, 1, 2] = 1
    max_pages: int = Field(default=2, ge=1, le=10)  # result pages fetched to fill top_k


class SearxngSource(WebSearchSource):
    """A SearXNG instance's JSON API (``SEARXNG_URL``; the instance must enable json).

    SearXNG's ``time_range`` only counts back from today, so the cutoff is applied by
    filtering on ``publishedDate``. Domain rules go into the query as ``site:``
    operators (passed on to the engines) and are always filtered afterwards.
    """

    default_name = "searxng"
    Options = SearxngOptions
    env_var = "SEARXNG_URL"

    def __init__(self, *, http: HttpClient | None = None, name: str | None = None, **options: Any):
        super().__init__(http=http, name=name, **options)
        o: SearxngOptions = self.options  # type: ignore[assignment]
        base = o.base_url or os.environ.get(self.env_var)
        if not base:
            raise MissingCredentials(
                self.name,
                f"no SearXNG URL: set base_url or the environment variable {self.env_var}",
            )
        self.base_url = base.rstrip("/")

    async def _page(self, query: Query, pageno: int) -> tuple[list[Any], list[Any]]:
        o: SearxngOptions = self.options  # type: ignore[assignment]
        params: dict[str, Any] = {
            "q": self._query_string(query),
            "format": "json",
            "language": query.language,
            "categories": o.categories,
            "safesearch": o.safesearch,
            "pageno": pageno,
        }
        if o.engines:
            params["engines"] = o.engines
        try:
            data = await self.http.get_json(self.name, f"{self.base_url}/search", params=params)
        except SourceAuthError as exc:
            raise SourceAuthError(
                self.name,
                f"{exc} (a 403 from SearXNG usually means the json format is not enabled in "
                "its settings.yml under search.formats)",
            ) from exc
        data = expect_mapping(data, self.name)
        results = expect_list(data, "results", self.name)
        return results, data.get("unresponsive_engines") or []

    async def _documents(self, query: Query) -> list[Document]:
        o: SearxngOptions = self.options  # type: ignore[assignment]
        items: list[Any] = []
        for pageno in range(1, o.max_pages + 1):
            results, unresponsive = await self._page(query, pageno)
            if not results and not items and unresponsive:
                failed = ", ".join(
                    f"{u[0]} ({u[1]})" if isinstance(u, list) and len(u) > 1 else str(u)
                    for u in unresponsive
                )
                raise SourceUnreachable(self.name, f"every engine failed: {failed}")
            items += results
            if not results or len(items) >= self._wanted(query):
                break
        return [
            self._doc(
                url=field_str(item, "url", self.name),
                title=strip_html(item.get("title")),
                text=strip_html(item.get("content")),
                rank=rank,
                published=item.get("publishedDate"),
                metadata={"engines": item.get("engines") or [item.get("engine")]},
            )
            for rank, item in enumerate(items, start=1)
        ]


# --------------------------------------------------------------------------- DuckDuckGo


class DDGSClient(Protocol):
    """The part of `ddgs.DDGS` the source uses (injectable for tests)."""

    def text(self, query: str, **kwargs: Any) -> list[dict[str, Any]]: ...

    def news(self, query: str, **kwargs: Any) -> list[dict[str, Any]]: ...


class DuckDuckGoOptions(WebOptions):
    mode: Literal["text", "news"] = "text"  # news results carry dates, text results do not
    region: str = "us-en"
    safesearch: Literal["on", "moderate", "off"] = "moderate"
    backend: str = "auto"  # ddgs backend(s); "duckduckgo" also honours the cutoff in the call
    timeout_s: int = Field(default=10, ge=1, le=MAX_SECONDS)


class DuckDuckGoSource(WebSearchSource):
    """DuckDuckGo and the other keyless engines of the `ddgs` package.

    `ddgs` is synchronous, so each search runs in a worker thread. Text results carry no
    date: with a cutoff they pass unless the query sets ``drop_undated`` (use the news
    mode, or ``fetch_pages=True`` to date results from their pages).

    Args:
        client_factory: builds the ddgs client (default: ``ddgs.DDGS``); tests inject a
            fake so no network is used.
    """

    default_name = "duckduckgo"
    Options = DuckDuckGoOptions
    max_per_call: ClassVar[int] = 50

    def __init__(
        self,
        *,
        client_factory: Callable[[], DDGSClient] | None = None,
        http: HttpClient | None = None,
        name: str | None = None,
        **options: Any,
    ):
        super().__init__(http=http, name=name, **options)
        o: DuckDuckGoOptions = self.options  # type: ignore[assignment]
        if client_factory is None:
            from ddgs import DDGS

            def client_factory() -> DDGSClient:
                return DDGS(timeout=o.timeout_s)

        self._factory = client_factory

    def _call(self, text: str, kwargs: dict[str, Any]) -> list[dict[str, Any]]:
        client = self._factory()
        o: DuckDuckGoOptions = self.options  # type: ignore[assignment]
        return client.news(text, **kwargs) if o.mode == "news" else client.text(text, **kwargs)

    async def _documents(self, query: Query) -> list[Document]:
        from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

        o: DuckDuckGoOptions = self.options  # type: ignore[assignment]
        kwargs: dict[str, Any] = {
            "region": o.region,
            "safesearch": o.safesearch,
            "max_results": self._wanted(query),
            "backend": o.backend,
        }
        if query.before and o.backend == "duckduckgo":
            kwargs["timelimit"] = f"1990-01-01..{last_day_before(query).isoformat()}"
        try:
            raw = await asyncio.to_thread(self._call, self._query_string(query), kwargs)
        except RatelimitException as exc:
            raise SourceRateLimited(self.name, f"ddgs rate limited: {exc}") from exc
        except TimeoutException as exc:
            raise SourceUnreachable(self.name, f"ddgs timed out: {exc}") from exc
        except DDGSException as exc:
            if str(exc).strip() == "No results found.":
                return []  # ddgs reports an honest empty answer this way
            raise SourceUnreachable(self.name, f"ddgs failed: {exc}") from exc
        if not isinstance(raw, list):
            raise SourceBadResponse(self.name, f"ddgs returned {type(raw).__name__}, not a list")
        url_key = "url" if o.mode == "news" else "href"
        return [
            self._doc(
                url=field_str(item, url_key, self.name),
                title=strip_html(item.get("title")),
                text=strip_html(item.get("body")),
                rank=rank,
                published=item.get("date"),
                metadata={"site": item.get("source")} if item.get("source") else None,
            )
            for rank, item in enumerate(raw, start=1)
        ]
