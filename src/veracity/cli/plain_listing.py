"""`veracity methods` and `veracity doctor` as wrapped plain lines, for any terminal from
80 columns up.

Nothing a user copies is cut: a method name is printed whole, a description or a detail
wraps between words, a command (a `backticked` span, or a fix that is a command) is never
broken across lines, and a fix that is a command gets a line of its own, so that it can be
copied whole (one longer than the terminal is one line the terminal soft-wraps). Tables
were dropped here because rich fits a cell by cutting a word that is too long with "…".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from rich.text import Text

WIDTH = 80  # the narrowest terminal the listings are laid out for
MAX_WIDTH = 100  # wider terminals still get lines easy to read
NAME_COLUMN = 18  # where a method's description starts
_TOKEN = re.compile(r"(?:`[^`]*`|[^\s`])+")  # words; a backticked command is one word
_COMMANDS = ("pip ", "veracity ", "export ", "python ", "uv ")

# `veracity methods` groups the built-in methods; a plugin's method is listed under "Other".
GROUPS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "The papers' methods (veracity's reproductions)",
        frozenset({"radar", "radar_single", "toe", "s2mad", "zofia", "mermaid", "mermaid_single"}),
    ),
    (
        "Compared systems (published baselines the papers compare against)",
        frozenset(
            [
                "fire",
                "d2d",
                "hiss",
                "factagent",
                "steel",
                "defgen",
                "afacta",
                "teller",
                "adsent",
                "safe",
                "folk",
                "programfc",
                "self_ask",
                "factool",
                "factcheck_gpt",
            ]
        ),
    ),
    ("Simple baselines", frozenset({"direct", "cot", "rag", "react"})),
)
OTHER = "Other methods (plugins)"


def width_of(console: Any) -> int:
    """The width to lay lines out for: the terminal's, within [WIDTH, MAX_WIDTH]."""
    return max(WIDTH, min(int(getattr(console, "width", WIDTH) or WIDTH), MAX_WIDTH))


def wrap(text: str, width: int, indent: str = "", first: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns, broken only between words (a backticked
    span counts as one word): `first` starts the first line (default `indent`), `indent`
    the others. A word too long for an indented line (a long path) gets a line of its own
    from the first column; one longer than `width` is left whole there."""
    lines: list[str] = []
    line = first if first is not None else indent
    empty = True
    for word in _TOKEN.findall(text):
        if not empty and len(line) + 1 + len(word) > width:
            lines.append(line)
            line, empty = indent, True
        if empty and len(line) + len(word) > width:
            if line.strip():  # the first line's own start ("fix:", a method's name)
                lines.append(line.rstrip())
            lines.append(word)  # whole, unindented; the next word starts a new line
            line = indent
            continue
        line += word if empty else " " + word
        empty = False
    if not empty or not lines:
        lines.append(line)
    return lines


def group_of(name: str) -> str:
    for title, names in GROUPS:
        if name in names:
            return title
    return OTHER


def _facts(entry: Any) -> str:
    """Input kinds, default labels and what it searches (offline: see the legend)."""
    inputs = ", ".join(entry.input_kinds) or "?"
    short = {"web search": "web"}
    search = ", ".join(short.get(s, s) for s in entry.searches)
    return f"{inputs} · {entry.default_labels} · {'searches ' + search if search else 'no search'}"


def method_lines(entries: Iterable[Any], width: int = WIDTH) -> list[Text]:
    """The `veracity methods` listing: a legend, then the methods by group, each with its
    description and, in cyan, its input kinds, default labels and what it searches."""
    entries = list(entries)
    legend = (
        f"{len(entries)} methods; choose one with `--method NAME`. Under each: the inputs it "
        "checks (`--kind` claim, article or post), its default labels, what it searches. A "
        "whole document (`--kind document` with text or a .txt, .md, .html or .pdf `--file`; "
        "or `--url`) is split into claims, each checked with the method: `rag` unless you "
        "give one (a single claim's default is `direct`). Methods that search use live web "
        "search and Wikipedia when the network answers. Offline (or with VERACITY_OFFLINE=1) they "
        "search the default local index instead of the web and leave Wikipedia out; without "
        "that index they stop and print the command that builds it: "
        "`veracity index build ./my-docs` or `veracity index build --dataset scifact`. "
        "Where to start, and LLM calls, tokens and seconds per check: docs/methods.md."
    )
    lines = [Text(line) for line in wrap(legend, width)]
    pad = " " * NAME_COLUMN
    titles = [t for t, _ in GROUPS] + [OTHER]
    for title in titles:
        members = [e for e in entries if group_of(e.name) == title]
        if not members:
            continue
        lines += [Text(""), Text(title, "bold")]
        for e in members:
            name = f"  {e.name}"
            if len(name) + 1 > NAME_COLUMN:  # a long plugin name: whole, on its own line
                lines.append(Text(name))
                first = pad
            else:
                first = name.ljust(NAME_COLUMN)
            if e.error:
                lines += wrap(f"failed to load: {e.error}", width, pad, first)
                continue
            lines += wrap(e.description or "(no description)", width, pad, first)
            lines += wrap(_facts(e), width, pad + "  ", pad)
    return lines


def is_command(part: str) -> bool:
    return part.startswith(_COMMANDS)


def finding_lines(findings: Iterable[Any], width: int = WIDTH) -> Iterator[Text]:
    """`veracity doctor`'s findings: the status, then the check and its detail wrapped;
    under a finding with a fix, "fix:" and each part of it (parts are separated by "; "),
    a part that is a command on a line of its own, never broken."""
    styles = {"ok": "green", "warn": "yellow", "fail": "bold red", "skipped": "dim"}
    indent = " " * 8
    for f in findings:
        head = wrap(f"{f.check}: {f.detail}" if f.detail else f.check, width, indent, indent)
        first = Text(f"{f.status:<8}", styles.get(f.status, ""))
        first.append(head[0][len(indent) :])
        yield first
        yield from (Text(line) for line in head[1:])
        if not f.fix:
            continue
        parts = [p.strip() for p in f.fix.split("; ") if p.strip()]
        prose = [p for p in parts if not is_command(p)]
        label = indent + "fix: "
        if prose:
            for line in wrap("; ".join(prose), width, indent + "  ", label):
                yield Text(line)
        else:
            yield Text(label.rstrip())
        for command in (p for p in parts if is_command(p)):
            # on a line of its own, indented when it fits, else from the first column
            shown = indent + "  " + command
            yield Text(shown if len(shown) <= width else command)
