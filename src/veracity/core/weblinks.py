"""Which addresses may become links in HTML that veracity renders.

Addresses come from outside (an article's URL, a retrieved document's URL, a benchmark's
records), so a page must never turn one into a link that runs script (``javascript:``),
opens inline content (``data:``), reaches local files (``file:``) or points nowhere. One
rule serves every page rendered in Python (the web UI's fragments, `veracity report`'s
HTML): `web_link` returns the address only when it is an absolute ``http`` or ``https``
URL with a host; anything else is shown as plain text. The web UI's script applies the
same rule to every fragment it inserts (``safeHref`` in ``server/static/app.js``).
"""

from __future__ import annotations

import unicodedata
from urllib.parse import urlsplit

WEB_SCHEMES = frozenset({"http", "https"})
MAX_LINK_CHARS = 4096  # longer addresses are shown as text, not linked


def web_link(url: object) -> str | None:
    """`url` (without surrounding white space) when a page may link to it, else None.

    A link needs an absolute ``http``/``https`` URL with a host, no white space, control
    or format characters (which browsers drop or read differently from us) and no
    backslash (which browsers read as a slash), at most `MAX_LINK_CHARS` long.

    Example:
        >>> web_link(" https://example.org/a?b=1 ")
        'https://example.org/a?b=1'
        >>> web_link("javascript:alert(1)") is None
        True
    """
    if not isinstance(url, str):
        return None
    text = url.strip()
    if not text or len(text) > MAX_LINK_CHARS or "\\" in text:
        return None
    if any(c.isspace() or unicodedata.category(c) in ("Cc", "Cf") for c in text):
        return None
    try:
        parts = urlsplit(text)
        host, _ = parts.hostname, parts.port  # port raises on a malformed one
    except ValueError:
        return None
    absolute = text[len(parts.scheme) :].startswith("://")  # not `https:host`
    return text if parts.scheme.lower() in WEB_SCHEMES and host and absolute else None
