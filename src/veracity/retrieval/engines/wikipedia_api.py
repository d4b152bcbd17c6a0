"""Low-level MediaWiki access for `WikipediaSource`: API calls, error mapping, HTML text.

The Action API answers most errors with HTTP 200 and an ``error`` object; `action_api`
turns those into the typed source errors. `lead_paragraphs` pulls readable paragraphs
out of parser HTML (infoboxes, reference marks and edit links dropped).
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict

from veracity.retrieval.base import (
    SourceAuthError,
    SourceBadResponse,
    SourceRateLimited,
    SourceUnreachable,
)
from veracity.retrieval.engines.common import expect_mapping
from veracity.retrieval.transport.http import HttpClient, HttpResponse

_LANG = re.compile(r"^[a-z]{2,3}(-[a-z0-9]{2,8})*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z0-9])")
_TRANSIENT_CODES = {"maxlag", "readonly", "internal_api_error_DBQueryError", "timeout"}
_AUTH_CODES = {"readapidenied", "mwoauth-invalid-authorization", "permissiondenied"}


class PageSummary(BaseModel):
    """A page's lead: title, short description, the first sentences, disambiguation flag."""

    model_config = ConfigDict(extra="forbid")

    title: str
    pageid: int | None = None
    description: str = ""
    extract: str = ""
    url: str
    language: str
    is_disambiguation: bool = False
    last_edited: str | None = None


class Candidate(BaseModel):
    """One sense of an ambiguous name: a page title with its short description."""

    model_config = ConfigDict(extra="forbid")

    title: str
    description: str = ""
    url: str
    pageid: int | None = None
    primary: bool = False  # the page the bare name leads to


class Section(BaseModel):
    """A section heading of a page (`index` is what `section_text` takes)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    number: str
    level: int
    title: str
    anchor: str


def check_language(language: str, source: str) -> str:
    """`language` when it is a plausible Wikipedia language code (it becomes a host name)."""
    code = language.strip().lower()
    if not _LANG.match(code):
        raise ValueError(f"{source}: {language!r} is not a Wikipedia language code")
    return code


def page_url(language: str, title: str) -> str:
    return f"https://{language}.wikipedia.org/wiki/{quote(title.replace(' ', '_'), safe='/:()')}"


async def action_api(
    http: HttpClient, source: str, language: str, params: dict[str, Any]
) -> dict[str, Any]:
    """Call the Action API of the `language` Wikipedia and map its error objects.

    Raises:
        SourceRateLimited: ``ratelimited``.
        SourceUnreachable: replication lag, read-only mode, timeouts.
        SourceAuthError: read permission errors.
        SourceBadResponse: any other error object, or a body that is not an object.
    """
    url = f"https://{language}.wikipedia.org/w/api.php"
    full = {"format": "json", "formatversion": "2", **params}
    response = await http.request(source, "GET", url, params=full, cache_if=_no_error)
    data = expect_mapping(response.json(source), source)
    error = data.get("error")
    if isinstance(error, dict):
        code = str(error.get("code", ""))
        info = str(error.get("info", ""))[:200]
        if code == "ratelimited":
            raise SourceRateLimited(source, f"Wikipedia: {info}")
        if code in _TRANSIENT_CODES:
            raise SourceUnreachable(source, f"Wikipedia {code}: {info}")
        if code in _AUTH_CODES:
            raise SourceAuthError(source, f"Wikipedia {code}: {info}")
        raise WikipediaAPIError(source, f"Wikipedia {code}: {info}", code)
    return data


def _no_error(response: HttpResponse) -> bool:
    # MediaWiki reports errors inside 200 answers; those must not be cached.
    try:
        data = json.loads(response.content)
    except ValueError:
        return False
    return isinstance(data, dict) and "error" not in data


class WikipediaAPIError(SourceBadResponse):
    """An Action API error object other than rate, lag or permission errors."""

    def __init__(self, source: str, message: str, code: str):
        super().__init__(source, message)
        self.code = code


async def rest_summary(http: HttpClient, source: str, language: str, title: str) -> dict[str, Any]:
    """The REST API page summary (``/page/summary/{title}``; redirects are followed)."""
    safe = quote(title.replace(" ", "_"), safe="")
    url = f"https://{language}.wikipedia.org/api/rest_v1/page/summary/{safe}"
    return dict(expect_mapping(await http.get_json(source, url), source))


def query_pages(data: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """``query.pages`` of an Action API answer (formatversion 2), without missing pages.

    A generator query that finds nothing answers without a ``query`` object; that is
    an empty result. An answer with neither is malformed.
    """
    if "query" not in data:
        if "batchcomplete" in data or "continue" in data:
            return []
        raise SourceBadResponse(source, f"no 'query' in the answer (keys {sorted(data)[:8]})")
    query = expect_mapping(data["query"], source, "query")
    pages = query.get("pages", [])
    if not isinstance(pages, list):
        raise SourceBadResponse(source, "query.pages is not a list (formatversion 2 expected)")
    return [
        p for p in pages if isinstance(p, dict) and not p.get("missing") and not p.get("invalid")
    ]


def is_disambiguation(page: dict[str, Any]) -> bool:
    return "disambiguation" in (page.get("pageprops") or {})


def first_sentences(text: str, n: int | None) -> str:
    """The first `n` sentences of `text` (all of it when `n` is None)."""
    text = " ".join(text.split())
    if n is None:
        return text
    return " ".join(_SENTENCE_END.split(text)[:n])


def lead_paragraphs(html_text: str) -> str:
    """Readable paragraphs from parser HTML (tables, references and styles dropped)."""
    import lxml.html  # shipped with trafilatura

    if not html_text.strip():
        return ""
    root = lxml.html.fromstring(html_text)
    for bad in root.xpath(
        "//table | //style | //script | //sup[contains(@class,'reference')] | "
        "//span[contains(@class,'mw-editsection')] | //*[contains(@class,'noprint')]"
    ):
        bad.drop_tree()
    paragraphs = [" ".join(p.text_content().split()) for p in root.xpath("//p")]
    return "\n".join(p for p in paragraphs if p)
