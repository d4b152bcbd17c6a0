"""Scholarly sources: arXiv, PubMed (E-utilities) and Semantic Scholar.

Each returns papers as `Document`s whose text is the abstract (the title when a paper
has none) and whose date is the publication date; cutoffs go into the service call
(arXiv ``submittedDate``, PubMed ``maxdate``, Semantic Scholar ``publicationDateOrYear``)
and are enforced again by filtering. Dates known only to the month or year count as the
end of that period (see `scholarly_xml`).
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

from pydantic import Field, SecretStr

from veracity.core.dates import UTC, parse_date
from veracity.core.types import Document
from veracity.retrieval.base import Query, SourceAuthError, SourceBadResponse, apply_rules
from veracity.retrieval.engines.common import (
    SourceOptions,
    expect_list,
    expect_mapping,
    field_str,
    last_day_before,
)
from veracity.retrieval.engines.scholarly_xml import (
    arxiv_entries,
    end_of_period,
    parse_xml,
    pubmed_articles,
)
from veracity.retrieval.transport.http import HttpClient, HttpStatusError, default_http_client

_WORD = re.compile(r"[\w-]+")
_STOP = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "will",
        "with",
        "not",
        "no",
    }
)


class _Scholarly:
    kind = "scholarly"

    def __init__(self, *, http: HttpClient | None, name: str):
        self.http = http or default_http_client()
        self.name = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    @staticmethod
    def _wanted(query: Query, cap: int) -> int:
        return min(cap, query.top_k * 2 if query.before else query.top_k)


# --------------------------------------------------------------------------- arXiv


class ArxivOptions(SourceOptions):
    sort_by: Literal["relevance", "submittedDate", "lastUpdatedDate"] = "relevance"


def arxiv_query(query: Query) -> str:
    """arXiv ``search_query``: text words OR-ed, keywords as phrases with the query's operator."""
    words = [w for w in _WORD.findall(query.text.lower()) if w not in _STOP][:12]
    parts = []
    if words:
        parts.append("(" + " OR ".join(f"all:{w}" for w in words) + ")")
    keywords = [k.strip().replace('"', "") for k in query.keywords if k.strip()]
    if keywords:
        joined = f" {query.operator} ".join(f'all:"{k}"' for k in keywords)
        parts.append(f"({joined})")
    search = " AND ".join(parts)
    if query.before:
        last = last_day_before(query)
        search = f"({search}) AND submittedDate:[199101010000 TO {last:%Y%m%d}2359]"
    return search


class ArxivSource(_Scholarly):
    """arXiv preprints through the export API (Atom)."""

    endpoint = "https://export.arxiv.org/api/query"

    def __init__(self, *, http: HttpClient | None = None, name: str = "arxiv", **options: Any):
        super().__init__(http=http, name=name)
        self.options = ArxivOptions(**options)

    async def search(self, query: Query) -> list[Document]:
        """Search arXiv (see the module docstring)."""
        params = {
            "search_query": arxiv_query(query),
            "start": "0",
            "max_results": str(self._wanted(query, 100)),
            "sortBy": self.options.sort_by,
            "sortOrder": "descending",
        }
        response = await self.http.request(self.name, "GET", self.endpoint, params=params)
        entries = arxiv_entries(parse_xml(response.content, self.name), self.name)
        docs = []
        for rank, e in enumerate(entries, start=1):
            published = parse_date(e["published"], lenient=True, tz=UTC)
            if published is None:
                raise SourceBadResponse(self.name, f"arXiv entry {e['id']} has no valid date")
            docs.append(
                Document(
                    id=f"arxiv:{e['id']}",
                    text=e["summary"] or e["title"],
                    title=e["title"],
                    url=f"https://arxiv.org/abs/{e['id']}",
                    source=self.name,
                    published_at=published,
                    score=1.0 / rank,
                    metadata={
                        k: e[k] for k in ("authors", "doi", "journal_ref", "categories", "version")
                    },
                )
            )
        return apply_rules(query, docs)


# --------------------------------------------------------------------------- PubMed


class PubMedOptions(SourceOptions):
    api_key: SecretStr | None = None  # default: $NCBI_API_KEY (optional; raises the rate limit)
    email: str | None = None  # NCBI asks heavy users to identify themselves
    sort: Literal["relevance", "pub_date"] = "relevance"


class PubMedSource(_Scholarly):
    """PubMed abstracts through E-utilities: esearch (JSON) then efetch (XML)."""

    base = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    env_var = "NCBI_API_KEY"

    def __init__(self, *, http: HttpClient | None = None, name: str = "pubmed", **options: Any):
        super().__init__(http=http, name=name)
        self.options = PubMedOptions(**options)
        if self.options.api_key is None and os.environ.get(self.env_var):
            self.options.api_key = SecretStr(os.environ[self.env_var])

    def _common(self) -> dict[str, str]:
        params = {"db": "pubmed", "tool": "veracity"}
        if self.options.email:
            params["email"] = self.options.email
        if self.options.api_key is not None:
            params["api_key"] = self.options.api_key.get_secret_value()
        return params

    async def _get(self, path: str, params: dict[str, str]):
        try:
            return await self.http.request(
                self.name, "GET", f"{self.base}/{path}", params={**self._common(), **params}
            )
        except HttpStatusError as exc:
            if "api key" in exc.body.lower():
                raise SourceAuthError(
                    self.name, f"NCBI rejected the API key ({exc.status})"
                ) from exc
            raise

    async def search(self, query: Query) -> list[Document]:
        """Search PubMed (see the module docstring)."""
        term = query.render(quote=True, or_word="OR")
        params = {
            "term": term,
            "retmode": "json",
            "retmax": str(self._wanted(query, 200)),
            "sort": self.options.sort,
        }
        if query.before:
            params |= {
                "datetype": "pdat",
                "mindate": "1800/01/01",
                "maxdate": f"{last_day_before(query):%Y/%m/%d}",
            }
        data = expect_mapping((await self._get("esearch.fcgi", params)).json(self.name), self.name)
        result = expect_mapping(data.get("esearchresult"), self.name, "esearchresult")
        if "ERROR" in result:
            raise SourceBadResponse(self.name, f"PubMed: {str(result['ERROR'])[:200]}")
        ids = [str(i) for i in expect_list(result, "idlist", self.name)]
        if not ids:
            return []
        fetched = await self._get("efetch.fcgi", {"id": ",".join(ids), "retmode": "xml"})
        articles = {
            a["pmid"]: a for a in pubmed_articles(parse_xml(fetched.content, self.name), self.name)
        }
        docs = []
        for rank, pmid in enumerate(ids, start=1):
            a = articles.get(pmid)
            if a is None:
                continue  # esearch can list ids that efetch no longer serves
            docs.append(
                Document(
                    id=f"pubmed:{pmid}",
                    text=a["abstract"] or a["title"],
                    title=a["title"],
                    url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/",
                    source=self.name,
                    published_at=a["published"],
                    score=1.0 / rank,
                    metadata={
                        "journal": a["journal"],
                        "doi": a["doi"],
                        "date_precision": a["date_precision"],
                        "has_abstract": bool(a["abstract"]),
                    },
                )
            )
        return apply_rules(query, docs)


# --------------------------------------------------------------------------- Semantic Scholar


class SemanticScholarOptions(SourceOptions):
    api_key: SecretStr | None = None  # default: $S2_API_KEY (optional)
    fields: str = "title,abstract,url,year,publicationDate,venue,externalIds,authors"
    limit_cap: int = Field(default=100, ge=1, le=100)


class SemanticScholarSource(_Scholarly):
    """Semantic Scholar Graph API paper search."""

    endpoint = "https://api.semanticscholar.org/graph/v1/paper/search"
    env_var = "S2_API_KEY"

    def __init__(
        self, *, http: HttpClient | None = None, name: str = "semantic_scholar", **options: Any
    ):
        super().__init__(http=http, name=name)
        self.options = SemanticScholarOptions(**options)
        if self.options.api_key is None and os.environ.get(self.env_var):
            self.options.api_key = SecretStr(os.environ[self.env_var])

    async def search(self, query: Query) -> list[Document]:
        """Search Semantic Scholar (see the module docstring)."""
        params = {
            "query": query.render(quote=False),
            "limit": str(self._wanted(query, self.options.limit_cap)),
            "fields": self.options.fields,
        }
        if query.before:
            params["publicationDateOrYear"] = f":{last_day_before(query).isoformat()}"
        headers = (
            {"x-api-key": self.options.api_key.get_secret_value()} if self.options.api_key else None
        )
        data = expect_mapping(
            await self.http.get_json(self.name, self.endpoint, params=params, headers=headers),
            self.name,
        )
        papers = expect_list(data, "data", self.name, default_empty="total" in data)
        return apply_rules(query, [self._doc(p, rank) for rank, p in enumerate(papers, start=1)])

    def _doc(self, paper: dict[str, Any], rank: int) -> Document:
        paper_id = field_str(paper, "paperId", self.name)
        title = field_str(paper, "title", self.name)
        date_text, year = paper.get("publicationDate"), paper.get("year")
        if date_text and parse_date(date_text, lenient=True, tz=UTC) is not None:
            published, precision = parse_date(date_text, lenient=True, tz=UTC), "day"
        elif isinstance(year, int):
            published, precision = end_of_period(year), "year"
        else:
            published, precision = None, None
        return Document(
            id=f"s2:{paper_id}",
            text=paper.get("abstract") or title,
            title=title,
            url=paper.get("url") or f"https://www.semanticscholar.org/paper/{paper_id}",
            source=self.name,
            published_at=published,
            score=1.0 / rank,
            metadata={
                "venue": paper.get("venue"),
                "external_ids": paper.get("externalIds") or {},
                "authors": [
                    a.get("name") for a in paper.get("authors") or [] if isinstance(a, dict)
                ],
                "date_precision": precision,
                "has_abstract": bool(paper.get("abstract")),
            },
        )
