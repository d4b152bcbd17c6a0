"""Sentence splitting and chunking of long texts into passages.

`split_sentences` is a fast rule-based splitter (no model) that knows common
abbreviations, personal initials, decimals and closing quotes; it reads each character a
bounded number of times (linear time) and, given a ``limit``, stops once it has that many
sentences. ``method="spacy"`` uses
spaCy's rule-based ``sentencizer`` instead (a blank English pipeline, no model download).
`chunk_text` packs whole sentences into passages of at most ``max_words`` words (and
optionally ``max_chars`` characters), with an optional overlap, and every `Chunk` keeps
its character offsets into the original text so callers can point back at the source.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from itertools import islice
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

SplitMethod = Literal["rules", "spacy"]


class TextError(ValueError):
    """Arguments to a text helper that cannot be used (e.g. a non-positive size)."""


class Chunk(BaseModel):
    """A passage cut from a longer text.

    Attributes:
        index: position of the chunk in the text (0-based).
        text: the passage, exactly ``source[start:end]``.
        start: character offset of the first character in the source text.
        end: character offset one past the last character.
        n_words: number of whitespace-separated words in `text`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int
    text: str
    start: int
    end: int
    n_words: int


def _wordset(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Abbreviations after which a period almost never ends a sentence.
_NON_FINAL = _wordset(
    "mr mrs ms dr prof sr jr st mt ft vs cf e.g i.e viz approx fig figs eq eqs ref refs "
    "vol vols pp ed eds dept gen gov sen rep col lt sgt capt cmdr adm rev hon pres supt "
    "jan feb mar apr jun jul aug sep sept oct nov dec est ca al no nos op art sec ch"
)
# Words that usually open a sentence; after an initial or an acronym ("U.S.") a period
# followed by one of these is taken as a sentence end.
_STARTERS = _wordset(
    "the a an this these that those it its in on at as for from to we our they their he "
    "she his her there here however but and or yet so thus then when while after before "
    "although though if since because during despite moreover furthermore also finally "
    "first second third in one some many most all no not what which who how why i you my"
)
# A terminator run (periods, ellipses, "!" and "?") with its closing quotes and brackets,
# followed by whitespace; or a paragraph break. The run is matched only from its first
# mark and possessively, so a long run of marks costs its length once (a backtracking
# pattern here made "!" * n quadratic and a run of periods far worse).
_BOUNDARY = re.compile(r"(?<![.!?…])[.!?…]++[\"'”’»)\]]*+(?=\s)|\n[ \t]*\n\s*")
# The token ending where the search stops: tried only at token starts, never backtracked.
_LAST_TOKEN = re.compile(r"(?<!\S)(\S++)$")
_SPACES = re.compile(r"\s*")
_NEXT_WORD = re.compile(r"\s*[\"'“‘«(\[]*([A-Za-z]+)?")
_ACRONYM = re.compile(r"^(?:[A-Za-z]\.){2,}$")
_INITIAL = re.compile(r"^[A-Z]\.$")


def _ends_sentence(text: str, mark_start: int, mark_end: int, floor: int) -> bool:
    """Decide whether the terminator at ``text[mark_start:mark_end]`` closes a sentence.

    Reads only around the mark: the token before it (which starts at or after `floor`,
    the end of the previous boundary match) and the first word after it, so the whole
    split stays linear in the text's length.
    """
    after = _SPACES.match(text, mark_end).end()
    if after == len(text):
        return True
    nxt = text[after]
    if nxt.islower():
        return False  # "e.g. the", "approx. five", '"Stop!" he said'
    mark = text[mark_start:mark_end]
    if not mark.startswith(".") or mark.startswith("..."):
        return True
    token_match = _LAST_TOKEN.search(text, floor, mark_start + 1)
    token = token_match.group(1) if token_match else ""
    bare = token.lstrip("\"'“‘«([").rstrip(".").lower()
    if bare in _NON_FINAL:
        return bare == "no" and not nxt.isdigit()  # "No. 5" vs "... said no. Then"
    if _INITIAL.match(token) or _ACRONYM.match(token.lstrip("\"'“‘«([")):
        word = _NEXT_WORD.match(text, after)
        follower = (word.group(1) or "") if word else ""
        return follower.lower() in _STARTERS or not follower[:1].isupper()
    return True


def _rule_spans(text: str) -> Iterator[tuple[int, int]]:
    """The sentences of `text` as trimmed, non-empty spans, found lazily from the start.

    Every character is looked at a bounded number of times, and a caller that stops
    early (``limit``) leaves the rest of the text unread.
    """
    start = 0
    floor = 0  # where the previous boundary match ended
    for m in _BOUNDARY.finditer(text):
        found = m.group(0)
        is_paragraph = found[0] == "\n"
        if is_paragraph or _ends_sentence(text, m.start(), m.end(), floor):
            span = _stripped(text, start, m.start() if is_paragraph else m.end())
            if span is not None:
                yield span
            start = m.end()
        floor = m.end()
    span = _stripped(text, start, len(text))
    if span is not None:
        yield span


def _stripped(text: str, s: int, e: int) -> tuple[int, int] | None:
    """``(s, e)`` with surrounding whitespace trimmed; None when nothing is left."""
    s = _SPACES.match(text, s, e).end()
    while e > s and text[e - 1].isspace():
        e -= 1
    return (s, e) if e > s else None


def _strip_spans(text: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return [span for s, e in spans if (span := _stripped(text, s, e)) is not None]


_spacy_nlp: Any = None
_spacy_lock = threading.Lock()


def _spacy_spans(text: str) -> list[tuple[int, int]]:
    global _spacy_nlp
    with _spacy_lock:
        if _spacy_nlp is None:
            import spacy

            nlp = spacy.blank("en")
            nlp.add_pipe("sentencizer")
            nlp.max_length = max(nlp.max_length, 2_000_000)
            _spacy_nlp = nlp
        doc = _spacy_nlp(text)
    return _strip_spans(text, [(s.start_char, s.end_char) for s in doc.sents])


def sentence_spans(
    text: str, *, method: SplitMethod = "rules", limit: int | None = None
) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of `text`, whitespace trimmed.

    The rule splitter is linear in the text's length and, with `limit`, stops reading
    once it has found that many sentences (ask for one more than you keep to learn
    whether the text goes on).

    Args:
        text: any text; an empty or blank text has no sentences.
        method: ``"rules"`` (default, fast, no model) or ``"spacy"`` (spaCy's sentencizer).
        limit: at most this many sentences, the first ones (None: all).

    Raises:
        TextError: `text` is not a string, `method` is unknown or `limit` is below 0.
    """
    if not isinstance(text, str):
        raise TextError(f"expected a string, got {type(text).__name__}")
    if limit is not None and limit < 0:
        raise TextError(f"limit must be 0 or more, got {limit}")
    if method not in ("rules", "spacy"):
        raise TextError(f"unknown sentence splitting method {method!r}; use 'rules' or 'spacy'")
    if not text or text.isspace() or limit == 0:
        return []
    if method == "rules":
        return list(islice(_rule_spans(text), limit))
    return _spacy_spans(text)[:limit]


def split_sentences(
    text: str, *, method: SplitMethod = "rules", limit: int | None = None
) -> list[str]:
    """The sentences of `text`, in order, whitespace trimmed (at most `limit` of them).

    Paragraph breaks (blank lines) always end a sentence. See `sentence_spans`.
    """
    return [text[s:e] for s, e in sentence_spans(text, method=method, limit=limit)]


_WORD_SPAN = re.compile(r"\S+")


def _word_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in _WORD_SPAN.finditer(text, start, end)]


def _units(
    text: str, max_words: int, max_chars: int | None, method: SplitMethod
) -> list[tuple[int, int, int]]:
    """Sentences as ``(start, end, n_words)``, with over-long sentences cut at word breaks."""
    units: list[tuple[int, int, int]] = []
    for s, e in sentence_spans(text, method=method):
        words = _word_spans(text, s, e)
        if len(words) <= max_words and (max_chars is None or e - s <= max_chars):
            units.append((s, e, len(words)))
            continue
        piece: list[tuple[int, int]] = []
        for w in words:
            too_long = max_chars is not None and piece and w[1] - piece[0][0] > max_chars
            if len(piece) == max_words or too_long:
                units.append((piece[0][0], piece[-1][1], len(piece)))
                piece = []
            piece.append(w)
        if piece:
            units.append((piece[0][0], piece[-1][1], len(piece)))
    return units


def chunk_text(
    text: str,
    max_words: int = 200,
    overlap: int = 0,
    *,
    max_chars: int | None = None,
    method: SplitMethod = "rules",
) -> list[Chunk]:
    """Cut `text` into passages of whole sentences.

    Sentences are packed greedily while the passage stays within `max_words` words (and
    `max_chars` characters, when given). A single sentence longer than the limits is cut
    at word boundaries. With `overlap` > 0, the last whole sentences of a passage, up to
    `overlap` words in total, are repeated at the start of the next one.

    Args:
        text: the text to cut; a blank text gives no chunks.
        max_words: most words per chunk (>= 1).
        overlap: most words repeated between neighbouring chunks (0 <= overlap < max_words).
        max_chars: optional cap on characters per chunk (a single word may exceed it).
        method: sentence splitter, see `sentence_spans`.

    Returns:
        Chunks in order; ``chunk.text == text[chunk.start:chunk.end]``.

    Raises:
        TextError: the limits are not usable.
    """
    if max_words < 1:
        raise TextError(f"max_words must be at least 1, got {max_words}")
    if not 0 <= overlap < max_words:
        raise TextError(f"overlap must be in [0, max_words), got {overlap} with {max_words=}")
    if max_chars is not None and max_chars < 1:
        raise TextError(f"max_chars must be positive, got {max_chars}")
    units = _units(text, max_words, max_chars, method)
    groups: list[list[tuple[int, int, int]]] = []
    current: list[tuple[int, int, int]] = []
    fresh = 0  # units in `current` that are not carried over from the previous chunk
    for unit in units:
        words = sum(u[2] for u in current) + unit[2]
        chars = unit[1] - current[0][0] if current else 0
        if current and (words > max_words or (max_chars is not None and chars > max_chars)):
            if fresh:
                groups.append(current)
            current = _carry(current, overlap, unit, max_words, max_chars)
            fresh = 0
        current.append(unit)
        fresh += 1
    if current and fresh:
        groups.append(current)
    return [
        Chunk(
            index=i,
            text=text[g[0][0] : g[-1][1]],
            start=g[0][0],
            end=g[-1][1],
            n_words=sum(u[2] for u in g),
        )
        for i, g in enumerate(groups)
    ]


def _carry(
    previous: list[tuple[int, int, int]],
    overlap: int,
    nxt: tuple[int, int, int],
    max_words: int,
    max_chars: int | None,
) -> list[tuple[int, int, int]]:
    """Trailing units of `previous` to repeat, keeping room for the next unit."""
    carried: list[tuple[int, int, int]] = []
    budget = min(overlap, max_words - nxt[2])
    for unit in reversed(previous):
        if unit[2] > budget:
            break
        if max_chars is not None and nxt[1] - unit[0] > max_chars:
            break
        carried.insert(0, unit)
        budget -= unit[2]
    return carried


_CONTENT_WORD = re.compile(r"[a-z0-9]{4,}")
# Frequent words of four letters or more that carry no topic.
_FILLER = _wordset(
    "that this with from have been were says said will would about their there they them "
    "what when which while also into than then some more most such only very just over"
)


def content_words(text: str) -> frozenset[str]:
    """Lower-cased words of four or more letters or digits, common fillers left out:
    a cheap fingerprint of what a text is about."""
    return frozenset(_CONTENT_WORD.findall(text.lower())) - _FILLER


def content_overlap(text: str, reference: str) -> float:
    """Share of `reference`'s content words that also occur in `text` (1.0 when the
    reference has none)."""
    ref = content_words(reference)
    return len(ref & content_words(text)) / len(ref) if ref else 1.0
