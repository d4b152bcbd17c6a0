"""Credentials out of everything we persist or print.

A URL may carry credentials in two places: a user name and password
(``http://user:pass@host/v1``) and query parameters (``https://host/v1?key=…``,
``?api_key=…``, ``?token=…``; `SECRET_PARAMS`). Connections still need them, so
`split_credentials` separates the user-info part once, where a client is built, and
`join_path` adds an endpoint's path to a base URL while its query stays at the end
(``https://host/v1/chat/completions?key=…``). `strip_credentials` is the safety net
applied where text leaves the process — trace events, verdict errors, prediction records,
the run directory's config, LLM cache rows, command-line messages, logs — and removes
the ``user:pass@`` part of any URL inside a string and the value of every secret query
parameter (``?key=[redacted]``).

This module imports nothing from veracity, so every layer may use it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"

# Query parameters (compared without case) whose values are credentials.
SECRET_PARAMS = frozenset(
    {
        "key",
        "api_key",
        "apikey",
        "api-key",
        "x-api-key",
        "api_token",
        "apitoken",
        "access_token",
        "auth",
        "auth_token",
        "token",
        "client_secret",
        "secret",
        "password",
        "sig",
        "subscription-key",
    }
)

# "scheme://" then a user-info part up to "@" (no "/", "@" or white space in it)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s\"'<>]+@")
# "?name=" or "&name=" of a secret parameter, then its value (up to "&", "#", a quote,
# white space or the end)
_SECRET_QUERY = re.compile(
    r"(?i)([?&](?:" + "|".join(re.escape(p) for p in sorted(SECRET_PARAMS)) + r")=)"
    r"[^&#\s\"'<>]*"
)


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """`url` without its ``user:password@`` part, and the (user, password) it carried."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return strip_credentials(url), None
    if "@" not in parts.netloc:
        return url, None
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, password = userinfo.partition(":")
    clean = urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return clean, (unquote(user), unquote(password))


def strip_credentials(text: str) -> str:
    """`text` with the user-info part of every URL in it removed and the value of every
    secret query parameter (`SECRET_PARAMS`) replaced by ``[redacted]``."""
    if "@" in text and "://" in text:
        text = _USERINFO.sub(r"\1", text)
    if "=" in text:
        text = _SECRET_QUERY.sub(rf"\1{REDACTED}", text)
    return text


def query_secrets(url: str) -> list[str]:
    """The values of the secret query parameters of `url` (to scrub them from messages
    a server may echo them in)."""
    try:
        pairs = parse_qsl(urlsplit(url).query, keep_blank_values=False)
    except ValueError:
        return []
    return [v for k, v in pairs if k.lower() in SECRET_PARAMS and v]


def join_path(base: str, path: str) -> str:
    """`base` with `path` added to its path, its query string kept at the end:
    ``join_path("https://h/v1/?key=K", "chat/completions")`` is
    ``https://h/v1/chat/completions?key=K`` (plain concatenation would put the path inside
    the query)."""
    try:
        parts = urlsplit(base)
    except ValueError:
        return f"{base.rstrip('/')}/{path.lstrip('/')}"
    joined = f"{parts.path.rstrip('/')}/{path.lstrip('/')}"
    return urlunsplit((parts.scheme, parts.netloc, joined, parts.query, ""))


class RedactingFilter(logging.Filter):
    """A logging filter that strips credentials (`strip_credentials`) from a record's
    message and arguments (HTTP clients log every URL they request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(
                strip_credentials(a) if isinstance(a, str) else _redacted_url(a)
                for a in record.args
            )
        if isinstance(record.msg, str):
            record.msg = strip_credentials(record.msg)
        return True


def _redacted_url(value: Any) -> Any:
    """A URL object (httpx's) as redacted text; anything else unchanged."""
    text = str(value) if type(value).__name__ == "URL" else None
    return value if text is None else strip_credentials(text)


def install_log_redaction(*loggers: str) -> None:
    """Add one `RedactingFilter` to each named logger (once)."""
    for name in loggers:
        log = logging.getLogger(name)
        if not any(isinstance(f, RedactingFilter) for f in log.filters):
            log.addFilter(RedactingFilter())


def scrub_value(data: Any) -> Any:
    """A copy of `data` (nested dicts, lists, strings) with URL credentials removed."""
    if isinstance(data, str):
        return strip_credentials(data)
    if isinstance(data, dict):
        return {k: scrub_value(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [scrub_value(v) for v in data]
    return data


def scrub_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """`text` with URL credentials and every occurrence of each secret value removed."""
    text = strip_credentials(text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text
