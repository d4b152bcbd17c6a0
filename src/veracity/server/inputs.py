"""What the web UI shows of a checked input: the claim, an article's title and opening, a
post and how many replies it has.

Built from the request a job stored (``JobRow.request``), so every job, old ones
included, shows what it has; fields a request lacks are left out. Texts are untrusted:
the templates escape them, and only http(s) addresses become links
(`veracity.core.weblinks.web_link`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from veracity.core.weblinks import web_link

OPENING_CHARS = 300  # an article's opening, as shown on its check's page
FULL_CHARS = 1200  # a claim or a post is shown whole up to here
LINE_CHARS = 160  # one line of the history list

KIND_NAMES = {"claim": "Claim", "article": "Article", "post": "Post", "document": "Document"}


@dataclass
class InputView:
    """A checked input, ready to show.

    Attributes:
        kind: ``claim``, ``article`` or ``post``.
        text: the claim, the article's opening or the post, cut at a word (`cut` says so).
        title: an article's title.
        url: an article's address (http or https only).
        date: when it was made or published (``YYYY-MM-DD``).
        who: a claim's speaker or a post's author.
        replies: a post's number of replies.
        status: the check's status, for the heading.
    """

    kind: str
    text: str
    cut: bool = False
    title: str | None = None
    url: str | None = None
    date: str | None = None
    who: str | None = None
    replies: int | None = None
    status: str | None = None  # the job's status (None: not known; read as finished)

    @property
    def heading(self) -> str:
        """``Document being checked`` while the check is queued or running, ``Document
        checked`` once done, ``Document (check failed)`` when it stopped early."""
        kind = KIND_NAMES.get(self.kind, self.kind.capitalize())
        if self.status in ("queued", "running"):
            return f"{kind} being checked"
        if self.status in ("failed", "cancelled", "interrupted"):
            return f"{kind} (check {self.status})"
        return f"{kind} checked"

    @property
    def about(self) -> str:
        """Who made it, when, and how many replies: ``by @x · 2024-04-01 · 3 replies``."""
        parts = [
            f"{'by' if self.kind == 'post' else 'said by'} {self.who}" if self.who else "",
            self.date or "",
            "" if self.replies is None else replies_text(self.replies),
        ]
        return " · ".join(p for p in parts if p)

    @property
    def line(self) -> str:
        """One line for the history: the claim, ``title — opening`` or the post."""
        parts = [p for p in (self.title, self.text) if p] or [self.url or ""]
        return cut_text(" — ".join(parts), LINE_CHARS)[0]


def replies_text(n: int) -> str:
    return f"{n} {'reply' if n == 1 else 'replies'}"


def cut_text(text: str, limit: int) -> tuple[str, bool]:
    """`text` with its runs of white space made single, cut at a word before `limit`
    characters with an ellipsis; (text, whether it was cut)."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat, False
    head = flat[:limit]
    space = head.rfind(" ")
    if space > limit * 0.6:  # end on a whole word unless that loses too much
        head = head[:space]
    return head.rstrip(" ,;:.—-") + "…", True


def input_view(
    request: dict[str, Any] | None, preview: str = "", status: str | None = None
) -> InputView:
    """The input of a stored request; `preview` (the job's stored start of the input)
    stands in when the request holds no input; `status` is the check's (for the heading)."""
    found = _input_view(request, preview)
    found.status = status
    return found


def _input_view(request: dict[str, Any] | None, preview: str) -> InputView:
    item = (request or {}).get("input")
    if not isinstance(item, dict):
        return InputView(kind="claim", text=cut_text(preview, FULL_CHARS)[0])
    kind = str(item.get("kind") or "claim")
    if kind == "document":  # its text, or the address it is fetched from
        text, cut = cut_text(str(item.get("text") or ""), OPENING_CHARS)
        title = str(item.get("title") or "") or None
        return InputView(kind=kind, text=text, cut=cut, title=title, url=web_link(item.get("url")))
    if kind == "article":
        text, cut = cut_text(str(item.get("body") or ""), OPENING_CHARS)
        return InputView(
            kind=kind, text=text, cut=cut, title=str(item.get("title") or "") or None,
            url=web_link(item.get("url")), date=_date(item.get("published_at")),
        )  # fmt: skip
    text, cut = cut_text(str(item.get("text") or preview), FULL_CHARS)
    if kind == "post":
        replies = item.get("replies")
        return InputView(
            kind=kind, text=text, cut=cut, who=item.get("author"),
            date=_date(item.get("created_at")),
            replies=len(replies) if isinstance(replies, list) else 0,
        )  # fmt: skip
    who, date = item.get("speaker"), _date(item.get("date"))
    return InputView(kind=kind, text=text, cut=cut, who=who, date=date)


def _date(value: Any) -> str | None:
    return value[:10] if isinstance(value, str) and value else None
