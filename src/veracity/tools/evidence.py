"""The evidence layer as tools: search any source, browse Wikipedia, fetch a page.

`evidence_tools(sources)` turns a run's sources into the tools an agent can call (and
that `veracity.mcp` serves over MCP):

- ``search_<source>`` for every source (web engines, scholarly indexes, local corpora,
  recorded searches, ...);
- for a Wikipedia source ``<name>``: ``<name>_summary``, ``<name>_page`` (the whole
  article), ``<name>_sections``, ``<name>_section`` (one section's text) and
  ``<name>_related`` (similar pages);
- ``fetch_page``: the main text of a web page, through the SSRF-guarded HTTP client
  (only where live web access is expected: a web source is configured, or asked for).

Every browse call is recorded in the check's trace and usage as a search of its source
(a failed one as a failed search), exactly as `ManagedSource` records searches.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core import context
from veracity.core.types import Document
from veracity.prompting import truncate_chars
from veracity.retrieval.base import Source, SourceAuthError, SourceError
from veracity.retrieval.transport.http import HttpClient, default_http_client, track_requests
from veracity.retrieval.transport.pages import fetch_main_text
from veracity.tools.base import Observation, SourceTool, Tool, failure, render_documents

# What each kind of source is good for, as a model sees it in a tool list.
SOURCE_HINTS = {
    "wikipedia": "encyclopedia articles: people, places, organisations, events, concepts",
    "web": "general web search: news, official pages, recent events",
    "local": "a local document collection",
    "scholarly": "scientific papers and abstracts",
    "social": "social-media discussions",
    "factcheck": "published fact-checks",
    "memory": "documents in memory",
    "recorded": "recorded web search results",
}


def tool_name(*parts: str) -> str:
    """A tool name from parts: letters, digits and underscores only."""
    return re.sub(r"\W+", "_", "_".join(parts)).strip("_")


def search_description(source: Source) -> str:
    kind = getattr(source, "kind", "")
    hint = SOURCE_HINTS.get(kind, f"{kind or 'a'} source")
    return f"Search {source.name} ({hint}). Input: a short keyword query."


class TitleInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=200, description="the article's exact title")


class SectionInput(TitleInput):
    index: int = Field(ge=0, le=500, description="section number from the sections list")


class UrlInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=8, max_length=2000, description="an http(s) URL")


class BrowseTool:
    """A tool whose work is a coroutine over validated arguments (see `evidence_tools`)."""

    def __init__(
        self,
        name: str,
        description: str,
        input_model: type[BaseModel],
        work: Callable[[Any], Awaitable[Observation]],
        *,
        source: str,
    ):
        self.name = name
        self.description = description
        self.input_model = input_model
        self._work = work
        self.source = source

    async def call(self, arguments: BaseModel) -> Observation:
        started = time.perf_counter()
        query = {"tool": self.name, **arguments.model_dump(mode="json")}
        with track_requests() as tally:
            try:
                observation = await self._work(arguments)
            except SourceAuthError:
                raise
            except SourceError as exc:
                observation = failure(exc, self.name)
                context.current().record_search_failure(
                    name=self.source, error=observation.error or str(exc), query=query
                )
                return observation
        context.current().record_search(
            name=self.source,
            cached=tally.cached > 0 and tally.live == 0,
            query=query,
            results=[{"id": d.id, "url": d.url} for d in observation.documents],
            latency_s=round(time.perf_counter() - started, 4),
        )
        return observation


def _page_doc(page: Any, text: str, source: str) -> Document:
    return Document(
        id=f"wikipedia:{page.language}:{page.pageid or page.title}",
        title=page.title,
        text=text,
        url=page.url,
        source=source,
        metadata={"description": page.description, "last_edited": page.last_edited},
    )


def wikipedia_tools(source: Any, *, max_chars: int, page_chars: int) -> list[Tool]:
    """Browse tools over a Wikipedia source (see the module docstring)."""
    name = source.name

    def missing(title: str) -> Observation:
        return Observation(text=f"(no Wikipedia article titled {title!r})")

    async def summary(args: TitleInput) -> Observation:
        page = await source.summary(args.title, sentences=5)
        if page is None:
            return missing(args.title)
        doc = _page_doc(page, page.extract or page.description, name)
        return Observation(text=render_documents([doc], max_chars), documents=[doc])

    async def article(args: TitleInput) -> Observation:
        page = await source.page_text(args.title)
        if page is None:
            return missing(args.title)
        doc = _page_doc(page, truncate_chars(page.extract, page_chars), name)
        return Observation(text=f"[{doc.id}] {doc.title}:\n{doc.text}", documents=[doc])

    async def sections(args: TitleInput) -> Observation:
        found = await source.sections(args.title)
        if found is None:
            return missing(args.title)
        lines = [f"{s.index}. {'  ' * (s.level - 2)}{s.title}" for s in found]
        return Observation(text="\n".join(lines) or "(the article has no sections)")

    async def section(args: SectionInput) -> Observation:
        text = truncate_chars(await source.section_text(args.title, args.index), page_chars)
        url = f"https://en.wikipedia.org/wiki/{args.title.replace(' ', '_')}"
        doc = Document(
            id=f"wikipedia:section:{args.title}:{args.index}",
            title=f"{args.title} (section {args.index})",
            text=text or "(empty section)",
            url=url,
            source=name,
        )
        return Observation(text=f"[{doc.id}] {doc.title}:\n{doc.text}", documents=[doc])

    async def related(args: TitleInput) -> Observation:
        docs = await source.related(args.title, limit=5)
        return Observation(text=render_documents(docs, max_chars), documents=docs)

    specs = [
        ("summary", "The opening sentences of a Wikipedia article.", TitleInput, summary),
        ("page", "The full text of a Wikipedia article (long).", TitleInput, article),
        ("sections", "The numbered section headings of a Wikipedia article.", TitleInput, sections),
        ("section", "The text of one numbered section of an article.", SectionInput, section),
        ("related", "Wikipedia articles on related topics.", TitleInput, related),
    ]
    return [
        BrowseTool(tool_name(name, verb), text, model, work, source=name)
        for verb, text, model, work in specs
    ]


def fetch_page_tool(http: HttpClient | None = None, *, page_chars: int = 3000) -> Tool:
    """``fetch_page``: a web page's main text through the SSRF-guarded client."""

    async def fetch(args: UrlInput) -> Observation:
        client = http or default_http_client()
        text, published = await fetch_main_text(client, "fetch_page", args.url)
        doc = Document(
            id=f"page:{args.url}",
            text=truncate_chars(text, page_chars),
            url=args.url,
            source="fetch_page",
            published_at=published,
        )
        return Observation(text=f"[{doc.id}]\n{doc.text}", documents=[doc])

    return BrowseTool(
        "fetch_page",
        "The main text of a web page (give a URL from a search result).",
        UrlInput,
        fetch,
        source="fetch_page",
    )


def evidence_tools(
    sources: Mapping[str, Source],
    *,
    top_k: int = 3,
    max_chars: int = 500,
    page_chars: int = 3000,
    fetch_pages: bool | None = None,
    http: HttpClient | None = None,
) -> list[Tool]:
    """The tools over `sources` (see the module docstring).

    Args:
        top_k: results per search.
        max_chars: each search result's text is cut to this length.
        page_chars: article, section and page texts are cut to this length.
        fetch_pages: offer ``fetch_page``; None: only when a web source is configured.
        http: the HTTP client for ``fetch_page`` (default: the shared one).
    """
    tools: list[Tool] = []
    for name, source in sources.items():
        tools.append(
            SourceTool(
                source,
                tool_name("search", name),
                search_description(source),
                top_k=top_k,
                max_chars=max_chars,
            )
        )
        if getattr(source, "kind", "") == "wikipedia" and hasattr(source, "page_text"):
            tools += wikipedia_tools(source, max_chars=max_chars, page_chars=page_chars)
    if fetch_pages is None:
        fetch_pages = any(getattr(s, "kind", "") == "web" for s in sources.values())
    if fetch_pages:
        tools.append(fetch_page_tool(http, page_chars=page_chars))
    names = [t.name for t in tools]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"two tools would be named {duplicated}; rename a source")
    return tools
