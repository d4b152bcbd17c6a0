"""Quote verification: does a span an agent cites actually occur in its source?

Agents quote evidence; models sometimes quote text that is not there. `find_quote`
looks for a quote in a source text in three passes, most exact first:

1. verbatim after normalising case, whitespace, quote marks, dashes and ellipses;
2. the same ignoring punctuation (models often drop or add commas);
3. fuzzy: the source window whose words best match the quote's words (a difflib ratio
   over word sequences), accepted at or above a threshold, and never when the quote
   has a figure the window lacks or differs from it in negation words.

A quote with an ellipsis (``...``, ``…``, ``[...]``) is checked part by part, in order.
The result gives the match score and the located span in the *original* text, so a
verdict can show what the source really says. `verify_evidence` sets
``Evidence.quote_verified`` on a list of evidence.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from difflib import SequenceMatcher
from itertools import accumulate

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.types import Evidence

DEFAULT_THRESHOLD = 0.8  # word-level similarity needed for a non-verbatim quote
_MIN_FUZZY_WORDS = 3  # shorter quotes must occur verbatim
_CANDIDATES = 8  # source windows compared in detail per quote part
_MISMATCH_CAP = 0.5  # score ceiling when figures or negations differ from the span


class QuoteError(ValueError):
    """A quote or threshold that cannot be checked (empty quote, threshold outside 0..1)."""


class QuoteMatch(BaseModel):
    """Where (and how well) a quote was found.

    Attributes:
        found: the score reached the threshold.
        score: similarity in [0, 1]; 1.0 for a verbatim or punctuation-insensitive match.
        exact: verbatim after normalising case, whitespace, quote marks and dashes.
        start: offset of the located span in the original source text (None: nothing).
        end: offset one past its end.
        span: ``source[start:end]``, the best-matching passage.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    found: bool
    score: float = Field(ge=0.0, le=1.0)
    exact: bool = False
    start: int | None = None
    end: int | None = None
    span: str | None = None


_CHAR_MAP = {
    **dict.fromkeys("‘’‚‛′`´", "'"),
    **dict.fromkeys("“”„‟″«»", '"'),
    **dict.fromkeys("‐‑‒–—―−", "-"),
    "…": "...",
}
_INVISIBLE = frozenset("\u00ad\u200b\u200c\u200d\ufeff")
_ELLIPSIS = re.compile(r"\s*(?:\[\s*(?:\.\s*){3}\]|\(\s*(?:\.\s*){3}\)|\.{3,}|…)\s*")


def normalise(text: str, *, loose: bool = False) -> tuple[str, list[int]]:
    """Normalised text and, for each of its characters, the index in `text` it came from.

    Case is folded, quote marks and dashes unified, runs of whitespace collapsed to one
    space. With `loose`, every character that is not a letter or digit counts as space.
    """
    out: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch in _INVISIBLE:
            continue
        mapped = _CHAR_MAP.get(ch) or unicodedata.normalize("NFKC", ch).casefold()
        for c in mapped:
            if c.isspace() or (loose and not c.isalnum()):
                if out and out[-1] != " ":
                    out.append(" ")
                    where.append(i)
                continue
            out.append(c)
            where.append(i)
    while out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def _exact(needle: str, hay: str, start: int) -> int:
    """First occurrence of `needle` in `hay` at or after `start` on word boundaries."""
    pos = hay.find(needle, start)
    while pos >= 0:
        before_ok = pos == 0 or not (hay[pos - 1].isalnum() and needle[0].isalnum())
        end = pos + len(needle)
        after_ok = end == len(hay) or not (hay[end].isalnum() and needle[-1].isalnum())
        if before_ok and after_ok:
            return pos
        pos = hay.find(needle, pos + 1)
    return -1


def _exact_all(parts: list[str], source: str, loose: bool) -> tuple[int, int] | None:
    """Original-text span covering every part found verbatim, in order, or None."""
    hay, where = normalise(source, loose=loose)
    first, cursor = -1, 0
    for part in parts:
        needle = normalise(part, loose=loose)[0]
        pos = _exact(needle, hay, cursor) if needle else -1
        if pos < 0:
            return None
        first = pos if first < 0 else first
        cursor = pos + len(needle)
    return where[first], where[cursor - 1] + 1


def _best_window(quote: list[str], words: list[str], start: int) -> tuple[float, int, int]:
    """Best (word-level ratio, first word, end word) of a window of `words` from `start`."""
    n, wanted = len(quote), set(quote)
    hits = [0, *accumulate(1 if w in wanted else 0 for w in words[start:])]
    total = len(words) - start
    sums = [hits[min(i + n, total)] - hits[i] for i in range(max(1, total - n + 1))]
    order = sorted(range(len(sums)), key=lambda i: -sums[i])[:_CANDIDATES]
    best, slack = (0.0, -1, -1), max(3, n // 2)
    for i in order:
        if sums[i] == 0:
            break
        lo, hi = start + max(0, i - slack), start + min(total, i + n + slack)
        matcher = SequenceMatcher(None, quote, words[lo:hi], autojunk=False)
        blocks = [b for b in matcher.get_matching_blocks() if b.size]
        s, e = lo + blocks[0].b, lo + blocks[-1].b + blocks[-1].size
        ratio = SequenceMatcher(None, quote, words[s:e], autojunk=False).ratio()
        if ratio > best[0]:
            best = (ratio, s, e)
    return best


_NEGATIONS = frozenset({"not", "no", "never", "none", "neither", "nor", "without", "cannot", "t"})


def _numbers(words: Iterable[str]) -> set[str]:
    return {w for w in words if any(c.isdigit() for c in w)}


def _same_claims(quote: list[str], span: list[str]) -> bool:
    """Fuzzy matches must not change a figure or drop/add a negation ("n't" gives "t")."""
    negations = [w for w in quote if w in _NEGATIONS], [w for w in span if w in _NEGATIONS]
    return _numbers(quote) <= _numbers(span) and negations[0] == negations[1]


def _fuzzy_all(parts: list[str], source: str) -> tuple[float, int, int]:
    """Word-level fuzzy match of every part in order: (min score, orig start, orig end)."""
    hay, where = normalise(source, loose=True)
    spans = [(m.start(), m.end()) for m in re.finditer(r"\S+", hay)]
    words = [hay[a:b] for a, b in spans]
    scores, first, cursor = [], -1, 0
    for part in parts:
        quote = normalise(part, loose=True)[0].split()
        if len(quote) < _MIN_FUZZY_WORDS or cursor >= len(words):
            return 0.0, -1, -1
        ratio, s, e = _best_window(quote, words, cursor)
        if s < 0:
            return 0.0, -1, -1
        if not _same_claims(quote, words[s:e]):
            ratio = min(ratio, _MISMATCH_CAP)
        scores.append(ratio)
        first = s if first < 0 else first
        cursor = e
    return min(scores), where[spans[first][0]], where[spans[cursor - 1][1] - 1] + 1


def find_quote(quote: str, source: str, *, threshold: float = DEFAULT_THRESHOLD) -> QuoteMatch:
    """Look for `quote` in `source`.

    Args:
        quote: the span an agent cited.
        source: the full text it claims to come from.
        threshold: minimum word-level similarity (0..1) for a non-verbatim match.

    Returns:
        A `QuoteMatch`. When the quote is not found, ``span`` still shows the most
        similar passage (if any) so a reviewer can see what the source says.

    Raises:
        QuoteError: empty quote or a threshold outside [0, 1].
    """
    if not 0.0 <= threshold <= 1.0:
        raise QuoteError(f"threshold must be within [0, 1], got {threshold}")
    parts = [p for p in _ELLIPSIS.split(quote) if normalise(p, loose=True)[0]]
    if not parts:
        raise QuoteError("the quote is empty; nothing to verify")
    for loose in (False, True):
        found = _exact_all(parts, source, loose)
        if found is not None:
            s, e = found
            return QuoteMatch(
                found=True, score=1.0, exact=not loose, start=s, end=e, span=source[s:e]
            )
    score, s, e = _fuzzy_all(parts, source)
    if s < 0:
        return QuoteMatch(found=False, score=0.0)
    return QuoteMatch(
        found=score >= threshold, score=round(score, 4), start=s, end=e, span=source[s:e]
    )


def verify_evidence(
    evidence: Iterable[Evidence],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    texts: Mapping[str, str] | None = None,
    replace_quote: bool = False,
) -> list[Evidence]:
    """Check each evidence quote against its document and set ``quote_verified``.

    Evidence without a quote is returned unchanged (``quote_verified`` stays None).

    Args:
        evidence: evidence items to check; they are copied, not modified.
        threshold: minimum similarity, see `find_quote`.
        texts: full source texts by document id, when ``document.text`` is only a snippet.
        replace_quote: replace a found, non-verbatim quote by the located source span.

    Returns:
        New Evidence objects, in the same order.
    """
    checked: list[Evidence] = []
    for item in evidence:
        if item.quote is None or not item.quote.strip():
            checked.append(item)
            continue
        doc = item.document
        source = (texts or {}).get(doc.id) or doc.text
        haystack = f"{doc.title}\n{source}" if doc.title else source
        match = find_quote(item.quote, haystack, threshold=threshold)
        update: dict[str, object] = {"quote_verified": match.found}
        if replace_quote and match.found and not match.exact and match.span:
            update["quote"] = match.span
        checked.append(item.model_copy(update=update))
    return checked
