"""Helpers shared by the HTTP-backed sources: keys, ids, dates, HTML, response checks."""

from __future__ import annotations

import datetime as _dt
import hashlib
import html
import os
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, SecretStr

from veracity.core.bounds import PromptChars, Words
from veracity.retrieval.base import Query, SourceAuthError, SourceBadResponse

_TAG = re.compile(r"<[^>]+>")
_SPACE = re.compile(r"\s+")


class MissingCredentials(SourceAuthError):
    """A source that needs an API key (or URL) was built without one."""


class SourceOptions(BaseModel):
    """Base of each source's options (unknown options are an error)."""

    model_config = ConfigDict(extra="forbid")


def resolve_secret(
    explicit: str | None, env_var: str, source: str, what: str = "API key"
) -> SecretStr:
    """The key given explicitly, else from `env_var`.

    Raises:
        MissingCredentials: neither is set; the message names the variable.
    """
    value = explicit if explicit is not None else os.environ.get(env_var)
    if not value or not value.strip():
        raise MissingCredentials(source, f"no {what}: set the environment variable {env_var}")
    return SecretStr(value.strip())


def doc_id(prefix: str, key: str) -> str:
    """A stable document id: `prefix` and a short hash of `key` (usually the URL)."""
    return f"{prefix}:{hashlib.sha1(key.encode()).hexdigest()[:16]}"


def strip_html(text: str | None) -> str:
    """Plain text from an HTML fragment (tags removed, entities decoded, spaces folded)."""
    if not text:
        return ""
    return _SPACE.sub(" ", html.unescape(_TAG.sub("", text))).strip()


def site_clause(query: Query) -> str:
    """``site:`` / ``-site:`` operators for the query's domain rules (web engines)."""
    parts = []
    if query.include_domains:
        sites = [f"site:{d}" for d in query.include_domains]
        parts.append(sites[0] if len(sites) == 1 else "(" + " OR ".join(sites) + ")")
    parts += [f"-site:{d}" for d in query.exclude_domains]
    return " ".join(parts)


class QueryLimits(BaseModel):
    """What an engine accepts in one query string (None: no documented limit)."""

    model_config = ConfigDict(frozen=True)

    max_chars: PromptChars | None = None
    max_words: Words | None = None

    def fits(self, text: str) -> bool:
        return (self.max_chars is None or len(text) <= self.max_chars) and (
            self.max_words is None or len(text.split()) <= self.max_words
        )


def engine_query(query: Query, operators: bool = True, limits: QueryLimits | None = None) -> str:
    """The query string for a web engine: phrases quoted, OR spelled out, site rules added."""
    return fitted_engine_query(query, operators, limits)[0]


def fitted_engine_query(
    query: Query, operators: bool = True, limits: QueryLimits | None = None
) -> tuple[str, list[str]]:
    """The engine query within `limits`, and the excluded domains left out of it.

    The search text and any ``site:`` restriction always go in; ``-site:`` exclusions are
    added in order while the string still fits. Exclusions left out are still applied to
    the results (`apply_rules`), so they cost result slots, never correctness.
    """
    text = query.render(quote=True, or_word="OR")
    if not operators:
        return text, []
    if limits is None:
        return f"{text} {site_clause(query)}".strip(), []
    base = query.model_copy(update={"exclude_domains": ()})
    out = f"{text} {site_clause(base)}".strip()
    left_out = []
    for domain in query.exclude_domains:
        longer = f"{out} -site:{domain}"
        if limits.fits(longer):
            out = longer
        else:
            left_out.append(domain)
    return out, left_out


def last_day_before(query: Query) -> _dt.date | None:
    """The last day a result may be dated with the query's cutoff (inclusive ranges)."""
    return query.before - _dt.timedelta(days=1) if query.before else None


def expect_mapping(data: Any, source: str, what: str = "response") -> Mapping[str, Any]:
    """`data` when it is a JSON object, else a `SourceBadResponse`."""
    if not isinstance(data, Mapping):
        raise SourceBadResponse(
            source, f"expected a JSON object as {what}, got {type(data).__name__}"
        )
    return data


def expect_list(
    data: Mapping[str, Any], key: str, source: str, *, default_empty: bool = False
) -> list[Any]:
    """``data[key]`` when it is a list (missing → [] only when `default_empty`)."""
    if key not in data:
        if default_empty:
            return []
        raise SourceBadResponse(source, f"response has no {key!r} field (keys: {sorted(data)[:8]})")
    value = data[key]
    if value is None and default_empty:
        return []
    if not isinstance(value, list):
        raise SourceBadResponse(source, f"{key!r} is {type(value).__name__}, expected a list")
    return value


def field_str(item: Mapping[str, Any], key: str, source: str, *, required: bool = True) -> str:
    """A string field of a result item (a missing required field is a bad response)."""
    value = item.get(key) if isinstance(item, Mapping) else None
    if value is None:
        if required:
            raise SourceBadResponse(source, f"result item without {key!r}: {str(item)[:120]}")
        return ""
    if not isinstance(value, str | int | float):
        raise SourceBadResponse(source, f"result field {key!r} is {type(value).__name__}")
    return str(value)
