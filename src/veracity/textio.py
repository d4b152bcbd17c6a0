"""Reading text and JSON that come from outside, with clear errors instead of crashes.

Bytes are decoded as strict UTF-8 (a byte-order mark is allowed), so a file in another
encoding or a binary file is refused with the position of the first bad byte. JSON is
parsed with bounds: nesting deeper than `MAX_JSON_DEPTH`, integers too long to convert
and anything the parser rejects become an `InputError` naming the source. Strings that
hold lone surrogates (undecodable bytes smuggled in through command-line arguments)
are refused as well.

This module imports only `veracity.errors`, so every layer may use it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from veracity.errors import InputError

MAX_JSON_DEPTH = 64  # an input document is a few levels deep; more is an attack or a bug

# Hard limits: inputs beyond them are refused with a clear error when they are built.
# What a check then shows the model is cut further by `veracity.limits.InputLimits`.
MAX_INPUT_CHARS = 200_000  # claim text, article body, post text
MAX_FIELD_CHARS = 200_000  # title, speaker, context, author, each reply's text
# (real sets hold titles of 32,000 characters: what a check shows is cut far shorter)
MAX_REPLIES = 20_000  # replies of one post
MAX_EVIDENCE_DOCS = 1_000  # documents handed over with a claim

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def decode_text(data: bytes, what: str) -> str:
    """`data` as UTF-8 text.

    Raises:
        InputError: the bytes are not UTF-8 (names the first bad byte).
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise InputError(
            f"{what} is not UTF-8 text (byte 0x{bad} at position {exc.start}); save it as UTF-8"
        ) from None


def require_decodable(text: str, what: str) -> str:
    """`text` if it can be written as UTF-8 (no lone surrogates)."""
    m = _SURROGATE.search(text)
    if m is not None:
        raise InputError(
            f"{what} holds bytes that are not UTF-8 (at character {m.start()}); give UTF-8 text"
        )
    return text


def parse_json(text: str, what: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse `text` as JSON within the bounds above.

    Raises:
        InputError: not JSON, too deeply nested, or a number that cannot be read.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: not valid JSON: {exc}") from None
    except RecursionError:
        raise InputError(f"{what}: JSON nested too deeply (the limit is {max_depth})") from None
    except ValueError as exc:  # e.g. an integer of thousands of digits
        raise InputError(f"{what}: JSON value cannot be read: {exc}") from None
    if depth(value) > max_depth:
        raise InputError(f"{what}: JSON nested too deeply (the limit is {max_depth})")
    return value


def depth(value: Any) -> int:
    """Nesting depth of a JSON value (a scalar is 0), computed without recursion."""
    deepest = 0
    stack = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            children = list(node.values())
        elif isinstance(node, list):
            children = node
        else:
            deepest = max(deepest, level)
            continue
        deepest = max(deepest, level + 1)
        stack.extend((child, level + 1) for child in children)
    return deepest


def looks_binary(value: str) -> bool:
    """NUL bytes, or many control or undecodable characters: not text a person wrote."""
    if "\x00" in value:
        return True
    sample = value[:4096]
    odd = sum(1 for ch in sample if (ch < " " and ch not in "\t\n\r") or ch == "\ufffd")
    return odd > max(3, len(sample) // 20)


def require_text(value: str, what: str) -> str:
    """A required main text: not empty, within `MAX_INPUT_CHARS`, not binary, decodable.

    Raises:
        InputError: naming `what`.
    """
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} is empty; give some text to check")
    if len(value) > MAX_INPUT_CHARS:
        raise InputError(
            f"{what} has {len(value):,} characters; the limit is {MAX_INPUT_CHARS:,}. "
            "Split the text or check its main claims separately."
        )
    if looks_binary(value):
        raise InputError(f"{what} looks like binary data, not text; give a text file or string")
    return require_decodable(value, what)


def bounded_text(value: str | None, what: str, limit: int = MAX_FIELD_CHARS) -> str | None:
    """An optional free-text field within its hard limit (see `require_text`)."""
    if value is None:
        return None
    if len(value) > limit:
        raise InputError(f"{what} has {len(value):,} characters; the limit is {limit:,}")
    if "\x00" in value:
        raise InputError(f"{what} contains NUL bytes; give plain text")
    return require_decodable(value, what)


def truncate_chars(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters at a word boundary, saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return f"{cut} […{len(text) - len(cut):,} characters cut]"
