"""`WikipediaSource`: search, summaries, disambiguation candidates and sections.

Search uses the Action API (CirrusSearch: quoted phrases and AND/OR work) and returns
each hit's first sentences with its short description. Wikipedia pages have no
publication date; search results are undated (their last edit is in
``metadata["last_edited"]``) unless the query has a cutoff and ``as_of_cutoff`` is on:
then each hit is served as its last revision before the cutoff, dated with that
revision's time, and pages that did not exist yet are dropped. (The search index itself
is today's, so which pages are found can still reflect later edits.)

Helpers for ZoFia-style entity work and for agents browsing pages (MERMAID's tools):
`summary(title, sentences)`, `candidates(entity)` (the senses of an ambiguous name, each
with its short description), `is_disambiguation(title)`, `page_text(title)` (the whole
article as plain text), `sections(title)`, `section_text(title, index)` and
`related(title)` (pages CirrusSearch finds similar).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from typing import Any

from pydantic import Field

from veracity.core.bounds import Concurrency
from veracity.core.dates import UTC, parse_date
from veracity.core.types import Document
from veracity.retrieval.base import Query, SourceBadResponse, apply_rules
from veracity.retrieval.engines.common import SourceOptions
from veracity.retrieval.engines.wikipedia_api import (
    Candidate,
    PageSummary,
    Section,
    WikipediaAPIError,
    action_api,
    check_language,
    first_sentences,
    is_disambiguation,
    lead_paragraphs,
    page_url,
    query_pages,
    rest_summary,
)
from veracity.retrieval.transport.http import HttpClient, HttpStatusError, default_http_client

_PAGE_PROPS = {
    "prop": "extracts|description|pageprops|info",
    "exintro": "1",
    "explaintext": "1",
    "exlimit": "max",
    "ppprop": "disambiguation",
    "inprop": "url",
    "redirects": "1",
}


class WikipediaOptions(SourceOptions):
    language: str | None = None  # default: the query's language
    sentences: int = Field(default=3, ge=1, le=10)  # sentences of each hit's lead
    skip_disambiguation: bool = True  # drop "X may refer to" pages from search results
    as_of_cutoff: bool = True  # with a cutoff, serve the last revision before it
    concurrency: Concurrency = Field(default=4, ge=1)


class WikipediaSource:
    """Wikipedia in any language through the MediaWiki Action and REST APIs.

    Args:
        http: the HTTP client (default: the shared one).
        name: instance name.
        **options: see `WikipediaOptions`.
    """

    kind = "wikipedia"

    def __init__(self, *, http: HttpClient | None = None, name: str = "wikipedia", **options: Any):
        self.options = WikipediaOptions(**options)
        if self.options.language:
            check_language(self.options.language, name)
        self.http = http or default_http_client()
        self.name = name

    def __repr__(self) -> str:
        return f"WikipediaSource(name={self.name!r})"

    def _lang(self, language: str | None = None) -> str:
        return check_language(language or self.options.language or "en", self.name)

    # ------------------------------------------------------------------ search

    async def search(self, query: Query) -> list[Document]:
        """Pages matching the query, each as its first sentences (see the module docstring).

        Raises:
            SourceError: the typed failure (never an empty list for a fault).
        """
        lang = self._lang(self.options.language or query.language)
        wanted = min(50, query.top_k * 2 if self.options.skip_disambiguation else query.top_k)
        params = {
            **_PAGE_PROPS,
            "generator": "search",
            "gsrsearch": query.render(quote=True, or_word="OR"),
            "gsrlimit": str(wanted),
            "gsrnamespace": "0",
            "exsentences": str(self.options.sentences),
        }
        pages = query_pages(await action_api(self.http, self.name, lang, params), self.name)
        pages.sort(key=lambda p: p.get("index", 0))
        if self.options.skip_disambiguation:
            pages = [p for p in pages if not is_disambiguation(p)]
        if query.before is not None and self.options.as_of_cutoff:
            docs = await self._as_of(pages, lang, query.before)
        else:
            docs = [self._doc(p, lang, rank) for rank, p in enumerate(pages, start=1)]
        return apply_rules(query, docs)

    def _doc(self, page: dict[str, Any], lang: str, rank: int) -> Document:
        title = str(page.get("title", ""))
        description = str(page.get("description") or "")
        text = first_sentences(str(page.get("extract") or ""), self.options.sentences)
        if "pageid" not in page or not title:
            raise SourceBadResponse(self.name, f"page without id or title: {str(page)[:120]}")
        return Document(
            id=f"wikipedia:{lang}:{page['pageid']}",
            text=text or description or title,
            title=title,
            url=page.get("canonicalurl") or page.get("fullurl") or page_url(lang, title),
            source=self.name,
            score=1.0 / rank,
            metadata={
                "pageid": page["pageid"],
                "description": description,
                "language": lang,
                "is_disambiguation": is_disambiguation(page),
                "last_edited": page.get("touched"),
                "revision": page.get("lastrevid"),
                "rank": rank,
            },
        )

    async def _as_of(
        self, pages: list[dict[str, Any]], lang: str, before: _dt.date
    ) -> list[Document]:
        semaphore = asyncio.Semaphore(self.options.concurrency)

        async def one(rank: int, page: dict[str, Any]) -> Document | None:
            async with semaphore:
                return await self._revision_doc(page, lang, before, rank)

        found = await asyncio.gather(*(one(r, p) for r, p in enumerate(pages, start=1)))
        return [d for d in found if d is not None]

    async def _revision_doc(
        self, page: dict[str, Any], lang: str, before: _dt.date, rank: int
    ) -> Document | None:
        """The page as it stood before `before`, or None when it did not exist yet."""
        start = f"{before.isoformat()}T00:00:00Z"
        data = await action_api(
            self.http,
            self.name,
            lang,
            {
                "action": "query",
                "prop": "revisions",
                "pageids": str(page["pageid"]),
                "rvlimit": "1",
                "rvdir": "older",
                "rvstart": start,
                "rvprop": "ids|timestamp",
            },
        )
        found = query_pages(data, self.name)
        revisions = found[0].get("revisions") if found else None
        if not revisions:
            return None
        revid, stamp = (
            revisions[0].get("revid"),
            parse_date(revisions[0].get("timestamp"), lenient=True, tz=UTC),
        )
        if revid is None or stamp is None:
            raise SourceBadResponse(self.name, f"revision without id or time: {revisions[0]}")
        parsed = await action_api(
            self.http,
            self.name,
            lang,
            {"action": "parse", "oldid": str(revid), "prop": "text", "section": "0"},
        )
        html_text = (parsed.get("parse") or {}).get("text")
        if not isinstance(html_text, str):
            raise SourceBadResponse(self.name, f"parse of revision {revid} has no text")
        doc = self._doc(page, lang, rank)
        text = first_sentences(lead_paragraphs(html_text), self.options.sentences)
        return doc.model_copy(
            update={
                "id": f"wikipedia:{lang}:{page['pageid']}@{revid}",
                "text": text or doc.text,
                "published_at": stamp,
                "url": f"https://{lang}.wikipedia.org/w/index.php?oldid={revid}",
                "metadata": {**doc.metadata, "revision": revid, "as_of": before.isoformat()},
            }
        )

    # ------------------------------------------------------------------ helpers

    async def summary(
        self, title: str, sentences: int | None = 3, language: str | None = None
    ) -> PageSummary | None:
        """The lead of page `title` (redirects followed), or None when there is no such page.

        Args:
            title: page title.
            sentences: first N sentences (1–10, through TextExtracts); None for the
                whole lead paragraph (through the REST summary).
            language: Wikipedia language (default: the source's).
        """
        lang = self._lang(language)
        if sentences is None:
            return await self._rest_summary(title, lang)
        params = {**_PAGE_PROPS, "titles": title, "exsentences": str(max(1, min(sentences, 10)))}
        page = await self._first_page(params, lang)
        if page is None:
            return None
        return _summary(page, lang, first_sentences(page.get("extract") or "", sentences))

    async def _rest_summary(self, title: str, lang: str) -> PageSummary | None:
        try:
            data = await rest_summary(self.http, self.name, lang, title)
        except HttpStatusError as exc:
            if exc.status == 404:
                return None
            raise
        if "title" not in data or "extract" not in data:
            raise SourceBadResponse(self.name, f"summary without title/extract: {sorted(data)}")
        urls = (data.get("content_urls") or {}).get("desktop") or {}
        return PageSummary(
            title=data["title"],
            pageid=data.get("pageid"),
            description=data.get("description") or "",
            extract=data.get("extract") or "",
            url=urls.get("page") or page_url(lang, data["title"]),
            language=lang,
            is_disambiguation=data.get("type") == "disambiguation",
            last_edited=data.get("timestamp"),
        )

    async def is_disambiguation(self, title: str, language: str | None = None) -> bool:
        """Whether `title` (after redirects) is a disambiguation page (False if missing)."""
        found = await self.summary(title, sentences=1, language=language)
        return bool(found and found.is_disambiguation)

    async def candidates(
        self, entity: str, limit: int = 10, language: str | None = None
    ) -> list[Candidate]:
        """The senses a name can have, each with its short description.

        The page the name leads to comes first (``primary=True``) unless it is itself a
        disambiguation page; then come the pages listed on the disambiguation page
        (the name itself, or "<name> (disambiguation)"). When no page has the name, the
        best search hits are the candidates.
        """
        lang = self._lang(language)
        head = await self.summary(entity, sentences=1, language=lang)
        found: list[Candidate] = []
        if head is None:
            return await self._search_candidates(entity, limit, lang)
        if head.is_disambiguation:
            found += await self._linked(head.title, lang)
        else:
            found.append(
                _candidate(
                    head.title, head.description or head.extract, head.url, head.pageid, True
                )
            )
            found += await self._linked(f"{head.title} (disambiguation)", lang)
        unique = {c.title: c for c in reversed(found)}
        ordered = [c for c in found if unique.get(c.title) is c]
        return ordered[:limit]

    async def _linked(self, title: str, lang: str) -> list[Candidate]:
        params = {
            **_PAGE_PROPS,
            "generator": "links",
            "titles": title,
            "gplnamespace": "0",
            "gpllimit": "max",
            "exsentences": "1",
            "exlimit": "20",
        }
        pages = query_pages(await action_api(self.http, self.name, lang, params), self.name)
        return [
            _candidate(
                p["title"],
                p.get("description") or first_sentences(p.get("extract") or "", 1),
                p.get("canonicalurl") or page_url(lang, p["title"]),
                p.get("pageid"),
            )
            for p in pages
            if not is_disambiguation(p)
        ]

    async def _search_candidates(self, entity: str, limit: int, lang: str) -> list[Candidate]:
        docs = await self.search(Query(text=entity, top_k=limit, language=lang))
        return [
            _candidate(
                d.title,
                d.metadata.get("description") or d.text,
                d.url or "",
                d.metadata.get("pageid"),
            )
            for d in docs
        ]

    async def page_text(self, title: str, language: str | None = None) -> PageSummary | None:
        """The whole article `title` as plain text (redirects followed), or None if missing.

        The text is in `PageSummary.extract`; section headings appear as ``== Heading ==``
        lines.
        """
        lang = self._lang(language)
        params = {**_PAGE_PROPS, "titles": title}
        del params["exintro"]
        page = await self._first_page(params, lang)
        if page is None:
            return None
        return _summary(page, lang, str(page.get("extract") or "").strip())

    async def _first_page(self, params: dict[str, str], lang: str) -> dict[str, Any] | None:
        pages = query_pages(await action_api(self.http, self.name, lang, params), self.name)
        return pages[0] if pages else None

    async def related(
        self, title: str, limit: int = 5, language: str | None = None
    ) -> list[Document]:
        """Pages similar to `title` (CirrusSearch ``morelike:``), each as its first sentences."""
        lang = self._lang(language)
        params = {
            **_PAGE_PROPS,
            "generator": "search",
            "gsrsearch": f"morelike:{title}",
            "gsrlimit": str(max(1, min(limit, 20))),
            "gsrnamespace": "0",
            "exsentences": str(self.options.sentences),
        }
        pages = query_pages(await action_api(self.http, self.name, lang, params), self.name)
        pages.sort(key=lambda p: p.get("index", 0))
        pages = [p for p in pages if not is_disambiguation(p)]
        return [self._doc(p, lang, rank) for rank, p in enumerate(pages, start=1)]

    async def sections(self, title: str, language: str | None = None) -> list[Section] | None:
        """The section headings of page `title`, or None when there is no such page."""
        lang = self._lang(language)
        params = {"action": "parse", "page": title, "prop": "sections", "redirects": "1"}
        try:
            data = await action_api(self.http, self.name, lang, params)
        except WikipediaAPIError as exc:
            if exc.code == "missingtitle":
                return None
            raise
        raw = (data.get("parse") or {}).get("sections")
        if not isinstance(raw, list):
            raise SourceBadResponse(self.name, "parse answer without a sections list")
        try:
            return [
                Section(
                    index=int(s["index"]),
                    number=str(s["number"]),
                    level=int(s["level"]),
                    title=lead_paragraphs(f"<p>{s['line']}</p>") or str(s["line"]),
                    anchor=str(s.get("anchor", "")),
                )
                for s in raw
                if str(s.get("index", "")).isdigit()  # skip transcluded sections ("T-1")
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceBadResponse(self.name, f"unexpected section entry: {exc}") from exc

    async def section_text(self, title: str, index: int, language: str | None = None) -> str:
        """The plain text of section `index` of page `title` (0 is the lead)."""
        lang = self._lang(language)
        params = {
            "action": "parse",
            "page": title,
            "prop": "text",
            "section": str(index),
            "redirects": "1",
            "disableeditsection": "1",
        }
        data = await action_api(self.http, self.name, lang, params)
        html_text = (data.get("parse") or {}).get("text")
        if not isinstance(html_text, str):
            raise SourceBadResponse(self.name, f"parse of {title!r} section {index} has no text")
        return lead_paragraphs(html_text)


def _summary(page: dict[str, Any], lang: str, extract: str) -> PageSummary:
    return PageSummary(
        title=page["title"],
        pageid=page.get("pageid"),
        description=page.get("description") or "",
        extract=extract,
        url=page.get("canonicalurl") or page_url(lang, page["title"]),
        language=lang,
        is_disambiguation=is_disambiguation(page),
        last_edited=page.get("touched"),
    )


def _candidate(
    title: str, description: str, url: str, pageid: int | None, primary: bool = False
) -> Candidate:
    return Candidate(title=title, description=description, url=url, pageid=pageid, primary=primary)
