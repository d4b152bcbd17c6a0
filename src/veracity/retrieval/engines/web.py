"""Web search engines with API keys: Brave Search, Serper (Google) and Tavily.

Each engine turns a `Query` into its own request (quoted phrases and OR for keyword
composition, ``site:`` / ``-site:`` or domain parameters for domain rules, the service's
date filter for the cutoff), normalises the results to `Document`s (title, snippet, URL,
publication date when the service gives one) and then filters them with `apply_rules`
(the service's own date and domain filters are not trusted alone). With
``fetch_pages=True`` the result pages are fetched (guarded) and their main text replaces
the snippet. The keyless engines (SearXNG, DuckDuckGo) live in `web_free`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from pydantic import Field, SecretStr

from veracity.core import context
from veracity.core.bounds import Concurrency, PromptChars
from veracity.core.dates import UTC, parse_date
from veracity.core.events import Note
from veracity.core.types import Document
from veracity.retrieval.base import (
    Query,
    SourceAuthError,
    SourceBadResponse,
    SourceRateLimited,
    apply_rules,
)
from veracity.retrieval.engines.common import (
    QueryLimits,
    SourceOptions,
    doc_id,
    expect_list,
    expect_mapping,
    field_str,
    fitted_engine_query,
    last_day_before,
    resolve_secret,
    strip_html,
)
from veracity.retrieval.managed import normalize_url
from veracity.retrieval.transport.http import HttpClient, HttpStatusError, default_http_client
from veracity.retrieval.transport.pages import with_full_text


class WebOptions(SourceOptions):
    """Options every web engine accepts."""

    fetch_pages: bool = False  # replace snippets by the pages' main text
    max_page_chars: PromptChars = Field(default=20_000, ge=500)
    fetch_concurrency: Concurrency = Field(default=4, ge=1)


class WebSearchSource:
    """Shared behaviour of web engines; subclasses implement `_documents`.

    Args:
        http: the HTTP client (default: the shared one).
        name: instance name (default: the engine's name).
        **options: engine options (validated; unknown names are an error).
    """

    kind = "web"
    default_name: ClassVar[str] = "web"
    Options: ClassVar[type[WebOptions]] = WebOptions
    max_per_call: ClassVar[int] = 20
    # the engine's documented query-string limits (None: none documented)
    query_limits: ClassVar[QueryLimits | None] = None

    def __init__(self, *, http: HttpClient | None = None, name: str | None = None, **options: Any):
        self.options = self.Options(**options)
        self.http = http or default_http_client()
        self.name = name or self.default_name

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    def _wanted(self, query: Query) -> int:
        # Ask for extra results when our own filtering may drop some.
        filtering = query.before or query.include_domains or query.exclude_domains
        return min(self.max_per_call, query.top_k * 2 if filtering else query.top_k)

    async def _documents(self, query: Query) -> list[Document]:
        raise NotImplementedError

    def _query_string(self, query: Query, operators: bool = True) -> str:
        """`engine_query` within this engine's limits; exclusions that do not fit are
        left to the client-side filter, and the trace says which."""
        text, left_out = fitted_engine_query(query, operators, self.query_limits)
        if left_out:
            context.current().emit(
                Note(
                    name=self.name,
                    note=f"{len(left_out)} of {len(query.exclude_domains)} excluded domains did "
                    f"not fit {self.name}'s query limit ({self.query_limits}); they are filtered "
                    "from the results instead",
                    detail={"client_side_exclusions": left_out, "query_chars": len(text)},
                )
            )
        return text

    async def search(self, query: Query) -> list[Document]:
        """Search the engine; see the module docstring.

        Raises:
            SourceError: the typed failure (never an empty list for a fault).
        """
        docs = apply_rules(query, _unique(await self._documents(query)))
        if self.options.fetch_pages and docs:
            docs = await with_full_text(
                self.http,
                self.name,
                docs,
                max_chars=self.options.max_page_chars,
                concurrency=self.options.fetch_concurrency,
            )
            docs = apply_rules(query, docs)  # pages may reveal a date past the cutoff
        return docs

    def _doc(
        self,
        *,
        url: str,
        title: str,
        text: str,
        rank: int,
        published: Any = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Document:
        meta = {"engine": self.default_name, "rank": rank, **(metadata or {})}
        date = parse_date(published, lenient=True, tz=UTC)
        if date is not None:
            meta["date_text"] = str(published)
        return Document(
            id=doc_id(self.default_name, normalize_url(url)),
            text=text or title,
            title=title,
            url=url,
            source=self.default_name,  # the engine, whatever role the source is bound to
            published_at=date,
            score=1.0 / rank,
            metadata=meta,
        )


def _unique(docs: list[Document]) -> list[Document]:
    """First occurrence of each result (engines and result pages can repeat a URL)."""
    seen: set[str] = set()
    out = []
    for doc in docs:
        if doc.id not in seen:
            seen.add(doc.id)
            out.append(doc)
    return out


# --------------------------------------------------------------------------- Brave


class BraveOptions(WebOptions):
    country: str | None = None  # e.g. "us"; None lets Brave decide
    safesearch: Literal["off", "moderate", "strict"] = "moderate"
    extra_snippets: bool = True


class KeyedWebSearchSource(WebSearchSource):
    """A web engine that needs an API key: from the argument or the class's `env_var`."""

    env_var: str = ""

    def __init__(
        self,
        api_key: str | None = None,
        *,
        http: HttpClient | None = None,
        name: str | None = None,
        **options: Any,
    ):
        super().__init__(http=http, name=name, **options)
        self._key: SecretStr = resolve_secret(api_key, self.env_var, self.name)


class BraveSearchSource(KeyedWebSearchSource):
    """Brave Search web results (``BRAVE_API_KEY``).

    Cutoff in the call: ``freshness=1970-01-01to<day before cutoff>``. Dates come from
    each result's ``page_age`` (ISO) or, failing that, ``age``.
    """

    default_name = "brave"
    Options = BraveOptions
    query_limits = QueryLimits(max_chars=400, max_words=50)  # Brave's API documentation
    endpoint = "https://api.search.brave.com/res/v1/web/search"
    env_var = "BRAVE_API_KEY"

    async def _documents(self, query: Query) -> list[Document]:
        o: BraveOptions = self.options  # type: ignore[assignment]
        params: dict[str, Any] = {
            "q": self._query_string(query),
            "count": self._wanted(query),
            "search_lang": query.language,
            "safesearch": o.safesearch,
            "extra_snippets": str(o.extra_snippets).lower(),
        }
        if o.country:
            params["country"] = o.country
        if query.before:
            params["freshness"] = f"1970-01-01to{last_day_before(query).isoformat()}"
        headers = {
            "X-Subscription-Token": self._key.get_secret_value(),
            "Accept": "application/json",
        }
        try:
            data = await self.http.get_json(
                self.name, self.endpoint, params=params, headers=headers
            )
        except HttpStatusError as exc:
            raise _brave_error(self.name, exc) from exc
        data = expect_mapping(data, self.name)
        if "web" not in data:  # Brave omits the section when nothing matched
            if data.get("type") == "search":
                return []
            raise SourceBadResponse(self.name, f"no 'web' section (keys {sorted(data)[:8]})")
        results = expect_list(expect_mapping(data["web"], self.name, "web"), "results", self.name)
        docs = []
        for rank, item in enumerate(results, start=1):
            url = field_str(item, "url", self.name)
            snippets = [strip_html(item.get("description"))]
            snippets += [
                strip_html(s) for s in item.get("extra_snippets") or [] if isinstance(s, str)
            ]
            docs.append(
                self._doc(
                    url=url,
                    title=strip_html(field_str(item, "title", self.name)),
                    text=" … ".join(s for s in snippets if s),
                    rank=rank,
                    published=item.get("page_age") or item.get("age"),
                    metadata={"site": (item.get("profile") or {}).get("name")},
                )
            )
        return docs


def _brave_error(source: str, exc: HttpStatusError) -> Exception:
    body = exc.body
    if exc.status == 422 and ("SUBSCRIPTION_TOKEN" in body or '"authentication"' in body):
        return SourceAuthError(source, f"Brave rejected the API key ({exc.status})")
    return exc


# --------------------------------------------------------------------------- Serper


class SerperOptions(WebOptions):
    endpoint: Literal["search", "news"] = "search"
    gl: str | None = None  # country, e.g. "us"
    hl: str | None = None  # interface language; default: the query's language


class SerperSource(KeyedWebSearchSource):
    """Google results through Serper (``SERPER_API_KEY``).

    Cutoff in the call: Google's custom date range ``tbs=cdr:1,cd_min:…,cd_max:…``.
    Dates come from each result's ``date`` ("Mar 3, 2023" or "3 days ago").
    """

    default_name = "serper"
    Options = SerperOptions
    base_url = "https://google.serper.dev"
    env_var = "SERPER_API_KEY"
    max_per_call = 100
    query_limits = QueryLimits(max_chars=2048, max_words=32)  # Google ignores words past 32

    async def _documents(self, query: Query) -> list[Document]:
        o: SerperOptions = self.options  # type: ignore[assignment]
        body: dict[str, Any] = {
            "q": self._query_string(query),
            "num": self._wanted(query),
            "hl": o.hl or query.language,
        }
        if o.gl:
            body["gl"] = o.gl
        if query.before:
            last = last_day_before(query)
            body["tbs"] = f"cdr:1,cd_min:1/1/1990,cd_max:{last.month}/{last.day}/{last.year}"
        headers = {"X-API-KEY": self._key.get_secret_value()}
        url = f"{self.base_url}/{o.endpoint}"
        try:
            data = await self.http.post_json(self.name, url, json_body=body, headers=headers)
        except HttpStatusError as exc:
            if "credits" in exc.body.lower():
                raise SourceRateLimited(self.name, "Serper account is out of credits") from exc
            if "api key" in exc.body.lower() or "unauthorized" in exc.body.lower():
                raise SourceAuthError(
                    self.name, f"Serper rejected the API key ({exc.status})"
                ) from exc
            raise
        data = expect_mapping(data, self.name)
        section = "news" if o.endpoint == "news" else "organic"
        results = expect_list(data, section, self.name, default_empty="searchParameters" in data)
        docs = []
        for rank, item in enumerate(results, start=1):
            docs.append(
                self._doc(
                    url=field_str(item, "link", self.name),
                    title=field_str(item, "title", self.name),
                    text=strip_html(item.get("snippet")),
                    rank=rank,
                    published=item.get("date"),
                    metadata={"site": item.get("source")} if item.get("source") else None,
                )
            )
        return docs


# --------------------------------------------------------------------------- Tavily


class TavilyOptions(WebOptions):
    search_depth: Literal["basic", "advanced"] = "basic"
    topic: Literal["general", "news"] = "general"  # news results carry published dates


class TavilySource(KeyedWebSearchSource):
    """Tavily search (``TAVILY_API_KEY``).

    Domain rules go in ``include_domains`` / ``exclude_domains``; the cutoff in
    ``end_date``. Dates come from ``published_date`` (given for the news topic).
    """

    default_name = "tavily"
    Options = TavilyOptions
    endpoint = "https://api.tavily.com/search"
    env_var = "TAVILY_API_KEY"

    async def _documents(self, query: Query) -> list[Document]:
        o: TavilyOptions = self.options  # type: ignore[assignment]
        body: dict[str, Any] = {
            "query": self._query_string(query, operators=False),
            "max_results": self._wanted(query),
            "search_depth": o.search_depth,
            "topic": o.topic,
        }
        if query.include_domains:
            body["include_domains"] = list(query.include_domains)
        if query.exclude_domains:
            body["exclude_domains"] = list(query.exclude_domains)
        if query.before:
            body["end_date"] = last_day_before(query).isoformat()
        headers = {"Authorization": f"Bearer {self._key.get_secret_value()}"}
        try:
            data = await self.http.post_json(
                self.name, self.endpoint, json_body=body, headers=headers
            )
        except HttpStatusError as exc:
            if exc.status in (432, 433):  # plan or pay-as-you-go limit reached
                raise SourceRateLimited(self.name, f"Tavily usage limit ({exc.status})") from exc
            raise
        results = expect_list(expect_mapping(data, self.name), "results", self.name)
        return [
            self._doc(
                url=field_str(item, "url", self.name),
                title=field_str(item, "title", self.name, required=False),
                text=strip_html(item.get("content")),
                rank=rank,
                published=item.get("published_date"),
                metadata={"tavily_score": item.get("score")},
            )
            for rank, item in enumerate(results, start=1)
        ]
