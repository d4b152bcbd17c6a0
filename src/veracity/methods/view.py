"""What a method adds to the web UI's report of its check: panels of plain data.

A method's class answers `BaseMethod.view_parts(events, item)` with `ViewPart`s built
from its own trace events (the typed classes of `veracity.core.events`) and the input as
given; the web UI renders each part with one generic template, escaping every text. So a
method's own view lives in its package (S2MAD's replies by stance:
``veracity.methods.s2mad.view``) and the server names no method.

A part is data, never markup: headings, and groups of items with an optional note each.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ViewItem:
    """One line of a group: its text and a quieter note after it (a score, a source)."""

    text: str
    note: str | None = None


@dataclass(frozen=True)
class ViewGroup:
    """A headed list of items; the page shows a part's groups side by side."""

    heading: str
    items: list[ViewItem] = field(default_factory=list)
    empty: str = "none"  # shown when the group has no items


@dataclass(frozen=True)
class ViewPart:
    """One panel of a method's own view: an id (the HTML anchor, unique within the
    page), a title and its groups."""

    id: str
    title: str
    groups: list[ViewGroup] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.id or not all(c.isalnum() or c in "-_" for c in self.id):
            raise ValueError(f"a view part's id is letters, digits, - and _: {self.id!r}")


__all__ = ["ViewGroup", "ViewItem", "ViewPart"]
