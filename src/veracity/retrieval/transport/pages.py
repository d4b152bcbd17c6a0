"""Full text for search results: guarded page fetch plus main-text extraction.

Pages are fetched through the shared HTTP client with the public-address guard on, and
their main text is pulled out with trafilatura (boilerplate, menus and comments dropped).
A page that cannot be fetched or read keeps its snippet; the failure is recorded as an
``error`` event in the check's trace and in the document's ``metadata["fetch_error"]``,
so the snippet is never silently passed off as the full text.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from collections.abc import Sequence

from veracity.core import context
from veracity.core.dates import UTC, parse_date
from veracity.core.events import Fault
from veracity.core.types import Document
from veracity.retrieval.base import SourceBadResponse, SourceError
from veracity.retrieval.transport.http import HttpClient

_TEXTUAL = ("text/html", "application/xhtml+xml", "text/plain", "")


def _extract(body: bytes, url: str) -> tuple[str | None, str | None]:
    import trafilatura  # imported here: loading it takes a moment

    doc = trafilatura.bare_extraction(
        body,
        url=url,
        with_metadata=True,
        include_comments=False,
        date_extraction_params={"original_date": True, "extensive_search": False},
    )
    if doc is None:
        return None, None
    return getattr(doc, "text", None), getattr(doc, "date", None)


async def fetch_main_text(
    http: HttpClient, source: str, url: str
) -> tuple[str, _dt.datetime | None]:
    """The main text of the page at `url` and its publication date when the page gives one.

    Raises:
        UnsafeURL: the URL (or a redirect) is not public.
        SourceBadResponse: not an HTML or text page, or no main text found.
        SourceError: any other fetch failure.
    """
    page = await http.fetch_page(source, url)
    content_type = page.content_type.split(";", 1)[0].strip().lower()
    if content_type not in _TEXTUAL:
        raise SourceBadResponse(source, f"{page.url} is {content_type}, not a web page")
    if content_type == "text/plain":
        return page.text, None
    text, date = await asyncio.to_thread(_extract, page.content, url)
    if not text or not text.strip():
        raise SourceBadResponse(source, f"no main text found in {page.url}")
    return text.strip(), parse_date(date, lenient=True, tz=UTC)


async def with_full_text(
    http: HttpClient,
    source: str,
    docs: Sequence[Document],
    *,
    max_chars: int,
    concurrency: int = 4,
) -> list[Document]:
    """`docs` with their text replaced by the fetched main text where that works."""
    semaphore = asyncio.Semaphore(concurrency)

    async def one(doc: Document) -> Document:
        if not doc.url:
            return doc
        async with semaphore:
            try:
                text, date = await fetch_main_text(http, source, doc.url)
            except SourceError as exc:
                context.current().emit(
                    Fault(
                        name=source, url=doc.url, error=f"page fetch: {type(exc).__name__}: {exc}"
                    )
                )
                return doc.model_copy(
                    update={"metadata": {**doc.metadata, "fetch_error": f"{type(exc).__name__}"}}
                )
        metadata = {**doc.metadata, "snippet": doc.text, "full_text": True}
        update: dict = {"text": text[:max_chars], "metadata": metadata}
        if doc.published_at is None and date is not None:
            update["published_at"] = date
            metadata["date_from"] = "page"
        return doc.model_copy(update=update)

    return list(await asyncio.gather(*(one(d) for d in docs)))
