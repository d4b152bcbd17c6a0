"""Prompt templates (Jinja2 files) and the rendering of check inputs into prompt text.

A template file lives in a package's ``prompts/`` folder and is rendered with
`StrictUndefined`, so a missing variable is an error. A file may hold several chat
messages: a line ``<|system|>``, ``<|user|>`` or ``<|assistant|>`` starts a message of
that role; text before the first marker is a user message.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

from veracity import context
from veracity.errors import PromptError
from veracity.llm.base import Message
from veracity.types import Article, CheckInput, Claim, Post

_MARKER = re.compile(r"^<\|(system|user|assistant)\|>\s*$", re.M)


@dataclass(frozen=True)
class PromptBundle:
    """Template overrides for one method package, from a run config's ``prompts:``.

    `overrides` maps a template name to the text that replaces it. A bundle is checked
    against the package before use (`bind`): every override must replace an existing
    template and may use only the variables the method passes to that template, so a
    typo fails when the run is built, not in the middle of a batch.
    """

    overrides: tuple[tuple[str, str], ...] = ()
    package: str | None = None

    @classmethod
    def from_config(cls, cfg: Any) -> PromptBundle:
        """From a `veracity.config.PromptsConfig` (a folder and/or single templates)."""
        found: dict[str, str] = {}
        if cfg.dir:
            folder = Path(cfg.dir).expanduser()
            if not folder.is_dir():
                raise PromptError(f"prompts.dir {folder} is not a folder")
            for path in sorted(folder.glob("*.j2")):
                found[path.name] = path.read_text(encoding="utf-8")
        for name, file in cfg.templates.items():
            path = Path(file).expanduser()
            if not path.is_file():
                raise PromptError(f"prompts.templates.{name}: file {path} not found")
            found[name] = path.read_text(encoding="utf-8")
        return cls(tuple(sorted(found.items())))

    def bind(self, package: str) -> PromptBundle:
        """This bundle for `package`, after checking each override against it."""
        if not self.overrides:
            return PromptBundle(package=package)
        env = _env(package)
        for name, text in self.overrides:
            try:
                original = env.loader.get_source(env, name)[0]  # type: ignore[union-attr]
            except jinja2.TemplateNotFound:
                known = ", ".join(template_names(package)) or "none"
                raise PromptError(
                    f"prompt override {name!r}: {package} has no such template ({known})"
                ) from None
            try:
                extra = _variables(env, text) - _variables(env, original)
            except jinja2.TemplateSyntaxError as exc:
                raise PromptError(f"prompt override {name!r}: {exc}") from exc
            if extra:
                raise PromptError(
                    f"prompt override {name!r} uses {sorted(extra)}, which {package} does not "
                    f"pass to that template (it passes {sorted(_variables(env, original))})"
                )
        return PromptBundle(self.overrides, package)

    def hashes(self) -> dict[str, str]:
        """Template name -> sha256 (16 hex digits) of the text each render will use."""
        if self.package is None:
            return {}
        own = dict(self.overrides)
        env = _env(self.package)
        out = {}
        for name in template_names(self.package):
            text = own.get(name)
            if text is None:
                text = env.loader.get_source(env, name)[0]  # type: ignore[union-attr]
            out[name] = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
        return out


_active: ContextVar[PromptBundle | None] = ContextVar("veracity_prompts", default=None)


@contextlib.contextmanager
def using_prompts(bundle: PromptBundle | None) -> Iterator[None]:
    """Render templates of ``bundle.package`` from the bundle's overrides inside the block."""
    token = _active.set(bundle)
    try:
        yield
    finally:
        _active.reset(token)


def template_names(package: str) -> list[str]:
    """The template files of `package`'s prompts folder."""
    return sorted(_env(package).list_templates(extensions=["j2"]))


def _variables(env: jinja2.Environment, text: str) -> set[str]:
    return set(jinja2.meta.find_undeclared_variables(env.parse(text)))


@functools.cache
def _env(package: str, overrides: tuple[tuple[str, str], ...] = ()) -> jinja2.Environment:
    root = resources.files(package) / "prompts"
    if not root.is_dir():
        raise PromptError(f"{package} has no prompts/ folder")
    loader: jinja2.BaseLoader = jinja2.FileSystemLoader(str(root))
    if overrides:
        loader = jinja2.ChoiceLoader([jinja2.DictLoader(dict(overrides)), loader])
    env = jinja2.Environment(
        loader=loader,
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
    bundle = _active.get()
    overrides = bundle.overrides if bundle is not None and bundle.package == package else ()
    try:
        return _env(package, overrides).get_template(name).render(**variables).strip()
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


def note_cut(what: str, kept: int, total: int, unit: str, setting: str | None) -> None:
    """Record in the running check's trace that part of the input was left out (a
    ``note`` event named ``input_cut``), so the user learns what and how to raise it."""
    ctx = context.active()
    if ctx is not None:
        ctx.event(
            "note", "input_cut", what=what, kept=kept, total=total, unit=unit, setting=setting
        )


def render_input(
    item: CheckInput,
    *,
    max_chars: int = 6000,
    max_replies: int = 10,
    setting: str | None = "max_input_chars",
) -> str:
    """A plain-text description of a check input for prompts. What does not fit
    (an article's text beyond `max_chars`, replies beyond `max_replies`) is left out and
    noted in the trace (`note_cut`), naming the method `setting` that raises it."""
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
        if len(item.body) > max_chars:
            note_cut("the article's text", max_chars, len(item.body), "characters", setting)
        lines.append(f"Text: {truncate_chars(item.body, max_chars)}")
        return "\n".join(lines)
    if isinstance(item, Post):
        lines = [f"Post: {item.text}"]
        if item.author:
            lines.append(f"Author: {item.author}")
        replies = item.replies_by_time(max_replies)
        if len(item.replies) > len(replies):
            note_cut("the post", len(replies), len(item.replies), "replies", None)
        if replies:
            lines.append("Replies:")
            lines += [f"- {r.text}" for r in replies]
        return "\n".join(lines)
    raise TypeError(f"not a check input: {type(item).__name__}")


def input_kind_name(item: CheckInput) -> str:
    return {"claim": "claim", "article": "news article", "post": "social-media post"}[item.kind]
