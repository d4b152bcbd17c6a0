"""The pieces of a progress line: parts ranked by importance, fitted to a width.

A line is a list of `Part`s joined by ``" · "``; `fit` drops the least important ones
(the later of equals first) until the line fits, so a line stays whole at 80 columns
instead of ending in "…".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text

Clock = Callable[[], float]
SEP = " · "


def clock_text(seconds: float) -> str:
    """``0:38``, ``12:05``, ``1:02:03``."""
    total = max(0, round(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def counted(n: int, word: str, words: str | None = None) -> str:
    """``1 call``, ``14 calls``, ``1,204 searches``."""
    return f"{n:,} {word if n == 1 else words or word + 's'}"


def searches_text(searches: int, failed: int = 0) -> str:
    """``3 searches``, or ``3 searches, 2 failed`` (failed ones are not searches)."""
    text = counted(searches, "search", "searches")
    return f"{text}, {failed:,} failed" if failed else text


@dataclass(frozen=True)
class Part:
    """One piece of a progress line; `keep` ranks it (a higher one stays longer)."""

    text: str
    keep: int
    style: str = ""
    bar: bool = False  # a progress bar may follow this part (the count)


def line_width(parts: list[Part]) -> int:
    return sum(cell_len(p.text) for p in parts) + cell_len(SEP) * max(len(parts) - 1, 0)


def fit(parts: Iterable[Part], width: int) -> list[Part]:
    """`parts` without the least important ones (the later of equals first) until they
    fit in `width` cells joined by `SEP`; the most important one always stays."""
    shown = [p for p in parts if p.text]
    while len(shown) > 1 and line_width(shown) > width:
        low = min(p.keep for p in shown)
        shown.pop(max(i for i, p in enumerate(shown) if p.keep == low))
    return shown


def as_text(parts: list[Part], width: int) -> Text:
    """The fitted parts as one line of rich Text (never markup: event names are data)."""
    line = Text(no_wrap=True, overflow="ellipsis")
    for i, part in enumerate(fit(parts, width)):
        if i:
            line.append(SEP, style="dim")
        line.append(part.text, style=part.style)
    line.truncate(width, overflow="ellipsis")
    return line


def pace(each: float) -> str:
    """``12.5 s each``, ``3.2/s``, ``1,039/s``."""
    if each >= 1:
        return f"{each:.1f} s each"
    rate = 1 / each if each > 0 else float("inf")
    return f"{rate:.1f}/s" if rate < 10 else f"{rate:,.0f}/s"


def with_bar(parts: list[Part], size: int, share: float) -> list[Part]:
    """`parts` with a bar of `size` cells joined to the count."""
    filled = max(0, min(size, round(share * size)))
    bar = "━" * filled + "─" * (size - filled)
    return [Part(f"{p.text} {bar}", p.keep, p.style) if p.bar else p for p in parts]
