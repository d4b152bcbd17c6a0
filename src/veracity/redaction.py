"""Credentials out of everything we persist or print.

A URL may carry a user name and password (``http://user:pass@host/v1``). Connections
still need them, so `split_credentials` separates them from the URL once, where a
client is built; everything else sees the clean URL. `strip_credentials` is the safety
net applied where text leaves the process — trace events, verdict errors, prediction
records, the run directory's config, command-line messages — and removes the
``user:pass@`` part of any URL inside a string.

This module imports nothing from veracity, so every layer may use it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"

# "scheme://" then a user-info part up to "@" (no "/", "@" or white space in it)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/@\s\"'<>]+@")


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
    """`text` with the user-info part of every URL in it removed."""
    if "@" not in text or "://" not in text:
        return text
    return _USERINFO.sub(r"\1", text)


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
