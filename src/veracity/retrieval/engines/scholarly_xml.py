"""Parsers for the XML that arXiv (Atom) and PubMed (efetch) return.

Dates known only to the month or year are set to the LAST day of that period, so a
cutoff never lets through a paper that may have appeared after it; the precision is kept
in ``metadata["date_precision"]``.
"""

from __future__ import annotations

import calendar
import datetime as _dt
import re
import xml.etree.ElementTree as ET
from typing import Any

from veracity.retrieval.base import SourceBadResponse

ATOM = "{http://www.w3.org/2005/Atom}"
ARXIV = "{http://arxiv.org/schemas/atom}"
OPENSEARCH = "{http://a9.com/-/spec/opensearch/1.1/}"
_MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_abbr) if m}
_ARXIV_ID = re.compile(r"arxiv\.org/abs/(.+?)(v\d+)?$")


def parse_xml(body: bytes, source: str) -> ET.Element:
    """The root element of `body`.

    Raises:
        SourceBadResponse: not well-formed XML.
    """
    try:
        return ET.fromstring(body)
    except ET.ParseError as exc:
        raise SourceBadResponse(source, f"the answer is not XML: {exc}") from exc


def end_of_period(year: int, month: int | None = None, day: int | None = None) -> _dt.datetime:
    """The last moment-of-day date a partial date can stand for (UTC)."""
    if month is None:
        month, day = 12, 31
    elif day is None:
        day = calendar.monthrange(year, month)[1]
    return _dt.datetime(year, month, day, tzinfo=_dt.timezone.utc)


def _month(value: str | None) -> int | None:
    if not value:
        return None
    value = value.strip().lower()
    if value.isdigit():
        return int(value) if 1 <= int(value) <= 12 else None
    return _MONTHS.get(value[:3])


def _text(el: ET.Element | None, path: str) -> str:
    found = el.find(path) if el is not None else None
    return " ".join("".join(found.itertext()).split()) if found is not None else ""


# --------------------------------------------------------------------------- arXiv


def arxiv_entries(root: ET.Element, source: str) -> list[dict[str, Any]]:
    """The entries of an arXiv Atom feed as plain dicts.

    Raises:
        SourceBadResponse: not an Atom feed, or arXiv's error entry.
    """
    if root.tag != f"{ATOM}feed":
        raise SourceBadResponse(source, f"expected an Atom feed, got <{root.tag}>")
    entries = []
    for entry in root.findall(f"{ATOM}entry"):
        entry_id = _text(entry, f"{ATOM}id")
        if "/api/errors" in entry_id:
            raise SourceBadResponse(source, f"arXiv error: {_text(entry, f'{ATOM}summary')}")
        match = _ARXIV_ID.search(entry_id)
        if not match:
            raise SourceBadResponse(source, f"unexpected arXiv entry id {entry_id!r}")
        entries.append(
            {
                "id": match.group(1),
                "version": (match.group(2) or "").lstrip("v") or None,
                "title": _text(entry, f"{ATOM}title"),
                "summary": _text(entry, f"{ATOM}summary"),
                "published": _text(entry, f"{ATOM}published"),
                "updated": _text(entry, f"{ATOM}updated"),
                "authors": [_text(a, f"{ATOM}name") for a in entry.findall(f"{ATOM}author")],
                "doi": _text(entry, f"{ARXIV}doi") or None,
                "journal_ref": _text(entry, f"{ARXIV}journal_ref") or None,
                "categories": [c.get("term") for c in entry.findall(f"{ATOM}category")],
            }
        )
    return entries


# --------------------------------------------------------------------------- PubMed


def _pub_date(el: ET.Element | None) -> tuple[_dt.datetime | None, str | None]:
    if el is None:
        return None, None
    year = _text(el, "Year")
    if year.isdigit():
        month = _month(_text(el, "Month"))
        day = _text(el, "Day")
        precision = "day" if month and day.isdigit() else "month" if month else "year"
        return end_of_period(
            int(year), month, int(day) if month and day.isdigit() else None
        ), precision
    medline = _text(el, "MedlineDate")  # e.g. "2019 Mar-Apr" or "2018-2019"
    found = re.match(r"(\d{4})(?:\s+([A-Za-z]{3}))?", medline)
    if not found:
        return None, None
    years = re.findall(r"\d{4}", medline)
    last_year = int(years[-1])
    if found.group(2) and len(years) == 1:
        months = [m for m in (_month(t) for t in re.findall(r"[A-Za-z]{3}", medline)) if m]
        return end_of_period(last_year, max(months) if months else None), "month"
    return end_of_period(last_year), "year"


def pubmed_articles(root: ET.Element, source: str) -> list[dict[str, Any]]:
    """The articles of an efetch PubmedArticleSet as plain dicts.

    Raises:
        SourceBadResponse: not a PubmedArticleSet, or an article without a PMID.
    """
    if root.tag != "PubmedArticleSet":
        raise SourceBadResponse(source, f"expected a PubmedArticleSet, got <{root.tag}>")
    articles = []
    for item in root.findall("PubmedArticle"):
        citation = item.find("MedlineCitation")
        pmid = _text(citation, "PMID")
        if not pmid:
            raise SourceBadResponse(source, "PubmedArticle without a PMID")
        article = citation.find("Article") if citation is not None else None
        parts = []
        for abstract in article.findall("Abstract/AbstractText") if article is not None else []:
            text = " ".join("".join(abstract.itertext()).split())
            label = abstract.get("Label")
            parts.append(f"{label}: {text}" if label and text else text)
        dates = [
            d
            for d in (
                _pub_date(
                    article.find("Journal/JournalIssue/PubDate") if article is not None else None
                ),
                _pub_date(article.find("ArticleDate") if article is not None else None),
            )
            if d[0] is not None
        ]
        published, precision = min(dates, key=lambda d: d[0]) if dates else (None, None)
        doi = next(
            (
                "".join(a.itertext()).strip()
                for a in item.findall("PubmedData/ArticleIdList/ArticleId")
                if a.get("IdType") == "doi"
            ),
            None,
        )
        articles.append(
            {
                "pmid": pmid,
                "title": _text(article, "ArticleTitle"),
                "abstract": "\n".join(p for p in parts if p),
                "journal": _text(article, "Journal/Title"),
                "published": published,
                "date_precision": precision,
                "doi": doi,
            }
        )
    return articles
