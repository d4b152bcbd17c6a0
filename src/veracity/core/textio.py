"""Reading text and JSON that come from outside, with clear errors instead of crashes.

Bytes are decoded as strict UTF-8 (a byte-order mark is allowed), so a file in another
encoding or a binary file is refused with the position of the first bad byte. JSON is
parsed with bounds: nesting deeper than `MAX_JSON_DEPTH`, integers too long to convert
and anything the parser rejects become an `InputError` naming the source. Strings that
hold lone surrogates (undecodable bytes smuggled in through command-line arguments)
are refused as well.

Nothing is read without a bound: a stream or file is read up to its limit plus one byte
(`read_limited`, `read_file_limited`; the limits are the ``MAX_*_BYTES`` below), so an
endless input (``/dev/zero`` on standard input) is refused at once instead of filling
memory. Paths are checked before any work (`input_file`: a directory, a device, a named
pipe are named as such; `output_file`: a results file that is an input, a directory or
cannot be written is refused before the first model call).

This module imports only `veracity.core.errors`, so every layer may use it.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import tempfile
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import IO, Any

from veracity.core.errors import InputError

MAX_JSON_DEPTH = 64  # an input document is a few levels deep; more is an attack or a bug

# Hard limits: inputs beyond them are refused with a clear error when they are built.
# What a check then shows the model is cut further by `veracity.core.limits.InputLimits`.
MAX_INPUT_CHARS = 200_000  # claim text, article body, post text
MAX_FIELD_CHARS = 200_000  # title, speaker, context, author, each reply's text
# (real sets hold titles of 32,000 characters: what a check shows is cut far shorter)
MAX_REPLIES = 20_000  # replies of one post
MAX_EVIDENCE_DOCS = 1_000  # documents handed over with a claim

# Byte bounds of what is read: each reader stops at its limit + 1 byte.
MAX_TEXT_BYTES = 4 * MAX_INPUT_CHARS  # a plain-text input read whole (UTF-8: <= 4 bytes/char)
MAX_RECORD_BYTES = 32 * 2**20  # one JSON document, JSON Lines line or CSV/TSV row
MAX_JSON_FILE_BYTES = 256 * 2**20  # a file holding one JSON array (datasets, batch .json)
MAX_CONFIG_BYTES = 4 * 2**20  # a run or experiment YAML file
MAX_DOCUMENT_FILE_BYTES = 64 * 2**20  # one text, Markdown or HTML file of a local corpus

_SURROGATE = re.compile(r"[\ud800-\udfff]")

# Characters that draw nothing but are not white space to `str.strip`: Hangul and
# half-width fillers, the blank Braille pattern, the combining grapheme joiner, variation
# selectors and Mongolian and Khmer marks that only shape a neighbour. Format characters
# (zero-width spaces and joiners, word joiner, byte-order mark, soft hyphen, direction
# marks, tag characters) and control characters are found by their Unicode category.
_INVISIBLE = frozenset("\u115f\u1160\u3164\uffa0\u2800\u034f\u17b4\u17b5\u180b\u180c\u180d\u180f")
_INVISIBLE_RANGES = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))  # variation selectors
_INVISIBLE_CATEGORIES = frozenset({"Cf", "Cc", "Zs", "Zl", "Zp"})


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
        if "digits" in str(exc):
            why = f"a number longer than {sys.get_int_max_str_digits():,} digits"
            raise InputError(f"{what}: JSON value cannot be read: {why}") from None
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


def _invisible(ch: str) -> bool:
    if ch.isspace() or ch in _INVISIBLE:
        return True
    code = ord(ch)
    if any(low <= code <= high for low, high in _INVISIBLE_RANGES):
        return True
    return unicodedata.category(ch) in _INVISIBLE_CATEGORIES


def is_blank(value: str) -> bool:
    """Whether `value` shows nothing: empty, or only white space and invisible characters
    (zero-width spaces and joiners, word joiners, byte-order marks, soft hyphens, other
    format and control characters, fillers). Stops at the first visible character."""
    return all(_invisible(ch) for ch in value)


def require_text(value: str, what: str) -> str:
    """A required main text: not blank (`is_blank`), within `MAX_INPUT_CHARS`, not binary,
    decodable. Every front end (CLI, REST, MCP, batch, Python API) reaches it through the
    input types, so text made only of invisible characters is empty everywhere.

    Raises:
        InputError: naming `what`.
    """
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} is empty; give some text to check")
    if is_blank(value):
        raise InputError(
            f"{what} is empty: it holds only invisible characters (such as zero-width "
            "spaces, word joiners or byte-order marks); give some text to check"
        )
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


def plural(n: int, word: str) -> str:
    """``"1 search"``, ``"2 searches"``, ``"0 LLM calls"``: `n` and `word` in the number
    `n` asks for (words ending in s, x, z, ch or sh take "es")."""
    if n == 1:
        return f"{n} {word}"
    suffix = "es" if re.search(r"(s|x|z|ch|sh)$", word) else "s"
    return f"{n:,} {word}{suffix}"


def truncate_chars(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters at a word boundary, saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return f"{cut} […{len(text) - len(cut):,} characters cut]"


def read_limited(stream: IO[bytes], limit: int, what: str) -> bytes:
    """All of `stream`, reading at most `limit` + 1 bytes.

    Raises:
        InputError: the stream holds more than `limit` bytes (names `what` and the limit).
    """
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"{what} holds more than {limit:,} bytes, the limit; {_SMALLER}")
    return data


_SMALLER = "give a smaller input (long texts: split them, or check their main claims)"


def read_file_limited(path: Path, limit: int, what: str = "input file") -> bytes:
    """The bytes of the regular file `path` (`input_file`), at most `limit` of them.

    Raises:
        InputError: `input_file`'s reasons, or a file larger than `limit` bytes.
    """
    size = input_file(path, what).stat().st_size
    if size > limit:
        raise InputError(f"{what} {path} has {size:,} bytes; the limit is {limit:,}; {_SMALLER}")
    try:
        with path.open("rb") as fh:
            return read_limited(fh, limit, f"{what} {path}")
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None


def input_file(path: Path, what: str = "input file") -> Path:
    """`path`, if it names a regular file this process may read.

    Raises:
        InputError: the path is missing, a directory, a device (``/dev/zero``), a named
            pipe, a socket, or cannot be read; each named as such.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(f"{what} {path} not found") from None
    except OSError as exc:  # a part of the path is a file, a loop of links, no permission
        raise InputError(f"{what} {path} cannot be read: {exc.strerror or exc}") from None
    kind = _special_kind(mode)
    if kind is not None:
        raise InputError(f"{what} {path} is {kind}, not a regular file; {_KIND_FIX[kind]}")
    if not os.access(path, os.R_OK):
        raise InputError(f"{what} {path} cannot be read: permission denied")
    return path


_KIND_FIX = {
    "a directory": "give a file in it",
    "a device": "give a file (an endless device such as /dev/zero cannot be an input)",
    "a named pipe": "give - and redirect the pipe to standard input instead",
    "a socket": "give a file",
    "a special file": "give a file",
}


def _special_kind(mode: int) -> str | None:
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    return "a socket" if stat.S_ISSOCK(mode) else "a special file"


def output_file(path: Path, inputs: Iterable[Path] = (), what: str = "output file") -> Path:
    """`path`, checked before any work as a file results can be written to (a new file
    written beside it, then moved over it): its folder is made if missing.

    Raises:
        InputError: `path` is one of `inputs` (through links or ``..`` too), a directory
            or other non-regular file, or its folder cannot be made or written.
    """
    for source in inputs:
        if _same_file(path, source):
            raise InputError(
                f"{what} {path} is the input {source}: writing it would destroy the input; "
                "give another --out"
            )
    if path.exists() or path.is_symlink():
        kind = _special_kind(path.stat().st_mode) if path.exists() else None
        if kind is not None:
            raise InputError(f"{what} {path} is {kind}; give the path of a file to write")
    folder = path.parent
    above = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if above is not None and not above.is_dir():
        raise InputError(f"{what} {path} cannot be written: {above} is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=f".{path.name}.", suffix=".probe"):
            pass
    except OSError as exc:
        raise InputError(
            f"{what} {path} cannot be written in {folder}: {exc.strerror or exc}"
        ) from None
    return path


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they lead
        return a.resolve() == b.resolve()
