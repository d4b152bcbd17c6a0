"""Prompt templates (Jinja2 files) and the rendering of check inputs into prompt text.

A template file lives in a package's ``prompts/`` folder and is rendered with
`StrictUndefined`, so a missing variable is an error. A file may hold several chat
messages: a line ``<|system|>``, ``<|user|>`` or ``<|assistant|>`` starts a message of
that role; text before the first marker is a user message.
"""

from __future__ import annotations

import functools
import re
from importlib import resources
from typing import Any

import jinja2

from veracity.llm.base import Message
from veracity.types import Article, CheckInput, Claim, Post

_MARKER = re.compile(r"^<\|(system|user|assistant)\|>\s*$", re.M)


class PromptError(LookupError):
    """A template that does not exist or does not render."""


@functools.cache
def _env(package: str) -> jinja2.Environment:
    root = resources.files(package) / "prompts"
    if not root.is_dir():
        raise PromptError(f"{package} has no prompts/ folder")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # prompts are plain text, never HTML
    )
    env.filters["truncate_chars"] = truncate_chars
    return env


def render(package: str, name: str, **variables: Any) -> str:
    """Render template `name` (e.g. ``"judge.j2"``) from `package`'s prompts folder."""
    try:
        return _env(package).get_template(name).render(**variables).strip()
    except jinja2.TemplateNotFound:
        raise PromptError(f"prompt template {name!r} not found in {package}/prompts") from None
    except jinja2.UndefinedError as exc:
        raise PromptError(f"{package}/prompts/{name}: {exc}") from exc


def render_messages(package: str, name: str, **variables: Any) -> list[Message]:
    """Render a template into chat messages (see module docstring for the markers)."""
    text = render(package, name, **variables)
    pieces = _MARKER.split(text)
    messages: list[Message] = []
    if pieces[0].strip():
        messages.append(Message(role="user", content=pieces[0].strip()))
    for role, content in zip(pieces[1::2], pieces[2::2], strict=False):
        if content.strip():
            messages.append(Message(role=role, content=content.strip()))
    if not messages:
        raise PromptError(f"{package}/prompts/{name} rendered to no messages")
    return messages


def truncate_chars(text: str, limit: int) -> str:
    """Cut `text` to at most `limit` characters at a word boundary, marking the cut."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return f"{cut} […]"


def render_input(item: CheckInput, *, max_chars: int = 6000, max_replies: int = 10) -> str:
    """A plain-text description of a check input for prompts."""
    if isinstance(item, Claim):
        lines = [f"Claim: {item.text}"]
        if item.speaker:
            lines.append(f"Speaker: {item.speaker}")
        if item.date:
            lines.append(f"Date: {item.date.isoformat()}")
        if item.context:
            lines.append(f"Context: {item.context}")
        return "\n".join(lines)
    if isinstance(item, Article):
        lines = []
        if item.title:
            lines.append(f"Title: {item.title}")
        if item.published_at:
            lines.append(f"Published: {item.published_at.date().isoformat()}")
        lines.append(f"Text: {truncate_chars(item.body, max_chars)}")
        return "\n".join(lines)
    if isinstance(item, Post):
        lines = [f"Post: {item.text}"]
        if item.author:
            lines.append(f"Author: {item.author}")
        replies = item.replies_by_time(max_replies)
        if replies:
            lines.append("Replies:")
            lines += [f"- {r.text}" for r in replies]
        return "\n".join(lines)
    raise TypeError(f"not a check input: {type(item).__name__}")


def input_kind_name(item: CheckInput) -> str:
    return {"claim": "claim", "article": "news article", "post": "social-media post"}[item.kind]
