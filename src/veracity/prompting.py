"""Prompt templates (Jinja2 files) and the rendering of check inputs into prompt text.

A template file lives in a package's ``prompts/`` folder and is rendered with
`StrictUndefined`, so a missing variable is an error. A file may hold several chat
messages: a line ``<|system|>``, ``<|user|>`` or ``<|assistant|>`` starts a message of
that role; text before the first marker is a user message.

Untrusted text is data (see `veracity.core.untrusted`), by construction:

- role markers are read from the template file before anything is substituted (they
  become NUL-bracketed marks that no substituted value can contain), so text inside a
  claim, passage or reply can never start a message of its own;
- every substituted string that is not `Safe` (our own rendered text) is neutralised:
  role markers, chat special tokens and fence tags in it are broken up;
- templates fence untrusted values with the ``data`` filter (``{{ claim | data("claim")
  }}``), and a rendered prompt that holds fenced data gets a system note saying that
  the fenced parts are data, not instructions (`data_notice`).

Templates render in Jinja's immutable sandbox (`jinja2.sandbox`), the package's own as
well as a run's overrides: a template reads the values it is given and nothing else, so an
override from a shared run file or a recorded spec cannot reach Python internals
(``cycler.__init__.__globals__``), call unsafe methods or change a value. `PromptBundle.bind`
refuses an override that names a private attribute (one starting with ``_``) before
anything renders, and a render that the sandbox stops is a `PromptError`.

A template lists the variables it shows without a fence in a comment,
``{# trusted: kind, labels #}``: values our own code builds (label lists, role names,
numbers, rendered sub-prompts). `unfenced_variables` finds every other variable shown
without a fence; a test runs it over every template of the package.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import re
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
import jinja2.meta
import jinja2.sandbox

from veracity.core import context
from veracity.core.errors import InputError, PromptError
from veracity.core.events import Note
from veracity.core.textio import MAX_CONFIG_BYTES, read_file_limited, truncate_chars
from veracity.core.types import Article, CheckInput, Claim, Post
from veracity.core.untrusted import (
    MARK,
    Safe,
    data_notice,
    fence,
    neutralize,
    register_fence_tags,
)
from veracity.llm.base import Message

_MARKER = re.compile(r"^<\|(system|user|assistant)\|>[ \t]*$", re.M)
_MARK_SPLIT = re.compile(f"{MARK}role:(system|user|assistant){MARK}\n?")
_FENCES = "_veracity_fences"  # the render variable that collects a prompt's fence tags


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
    # the claim-extraction stage's overrides (``prompts.claims``), bound apart (`claims`)
    claim_overrides: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_config(cls, cfg: Any) -> PromptBundle:
        """From a `veracity.core.config.PromptsConfig` (a folder and/or single templates,
        and the claim-extraction stage's templates)."""
        found: dict[str, str] = {}
        if cfg.dir:
            folder = Path(cfg.dir).expanduser()
            if not folder.is_dir():
                raise PromptError(f"prompts.dir {folder} is not a folder")
            for path in sorted(folder.glob("*.j2")):
                found[path.name] = _read_template(path, "prompts.dir")
        found.update(_read_templates(cfg.templates, "prompts.templates"))
        claims = _read_templates(getattr(cfg, "claims", {}), "prompts.claims")
        return cls(tuple(sorted(found.items())), claim_overrides=tuple(sorted(claims.items())))

    def claims(self, package: str) -> PromptBundle | None:
        """The claim-extraction stage's overrides bound to its `package` (checked as
        `bind` checks), or None when there are none."""
        if not self.claim_overrides:
            return None
        return PromptBundle(self.claim_overrides).bind(package)

    def bind(self, package: str) -> PromptBundle:
        """This bundle for `package`, after checking each override against it (the
        claim-extraction overrides stay apart: `claims`)."""
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
            private = private_names(text)
            if private:
                raise PromptError(
                    f"prompt override {name!r} reaches into {', '.join(private)}: a template "
                    "may only read the values it is given (nothing starting with '_')"
                )
            unfenced = unfenced_variables(text)
            if unfenced:
                raise PromptError(
                    f"prompt override {name!r} shows {unfenced} without a fence: wrap "
                    'untrusted values with `| data("tag")` (or declare values your own '
                    "config builds with `{# trusted: name #}`)"
                )
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


def _read_templates(files: dict[str, str], where: str) -> dict[str, str]:
    """Template name -> text, read from the files a config names."""
    found = {}
    for name, file in files.items():
        path = Path(file).expanduser()
        if not path.is_file():
            raise PromptError(f"{where}.{name}: file {path} not found")
        found[name] = _read_template(path, f"{where}.{name}")
    return found


def _read_template(path: Path, where: str) -> str:
    """A template file's text, read with the config files' size cap."""
    try:
        return read_file_limited(path, MAX_CONFIG_BYTES, "template").decode("utf-8")
    except (InputError, UnicodeDecodeError, OSError) as exc:
        raise PromptError(f"{where}: {exc}") from None


# Kept ambient (issue 22): a run's prompt overrides reach templates rendered in shared
# deliberation code (judges, agents, ReAct) that takes no bundle of its own.
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


class _RoleMarkers(jinja2.ext.Extension):
    """Turns ``<|role|>`` lines of a template file into marks before rendering (and
    makes the fence tags of a template from outside the package known: `note_fences`)."""

    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        note_fences(source, filename)
        return _MARKER.sub(lambda m: f"{MARK}role:{m.group(1)}{MARK}", source)


@jinja2.pass_context
def _finalize(ctx: jinja2.runtime.Context, value: Any) -> Any:
    """Applied to every ``{{ … }}`` output: our own text passes, other strings are
    neutralised; the fences a value carries are noted for the data notice (in the list
    `_render_marked` passes as the render variable `_FENCES`; included templates share it)."""
    if isinstance(value, Safe):
        used = ctx.get(_FENCES)
        if isinstance(used, list):
            used.extend(value.tags)
        return value
    if isinstance(value, str):
        return neutralize(value)
    return value


def _data_filter(value: Any, tag: str = "data", label: Any = None) -> Safe:
    try:
        return fence(value, tag, label)
    except ValueError as exc:
        raise PromptError(str(exc)) from exc


@functools.cache
def _env(package: str, overrides: tuple[tuple[str, str], ...] = ()) -> jinja2.Environment:
    root = resources.files(package) / "prompts"
    if not root.is_dir():
        raise PromptError(f"{package} has no prompts/ folder")
    loader: jinja2.BaseLoader = jinja2.FileSystemLoader(str(root))
    if overrides:
        loader = jinja2.ChoiceLoader([jinja2.DictLoader(dict(overrides)), loader])
    # the sandbox: attribute access, calls and formatting are checked as a template runs
    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        loader=loader,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # prompts are plain text, never HTML
        finalize=_finalize,
        extensions=[_RoleMarkers],
    )
    env.filters["truncate_chars"] = truncate_chars
    env.filters["data"] = _data_filter
    return env


def _render_marked(package: str, name: str, variables: dict[str, Any]) -> tuple[str, list[str]]:
    """The rendered text (role marks still in) and the fence tags it holds."""
    bundle = _active.get()
    overrides = bundle.overrides if bundle is not None and bundle.package == package else ()
    used: list[str] = []
    env = _env(package, overrides)
    try:
        text = env.get_template(name).render(**variables, **{_FENCES: used}).strip()
    except jinja2.TemplateNotFound:
        raise PromptError(f"prompt template {name!r} not found in {package}/prompts") from None
    except jinja2.UndefinedError as exc:
        raise PromptError(f"{package}/prompts/{name}: {exc}") from exc
    except jinja2.exceptions.SecurityError as exc:
        raise PromptError(
            f"{package}/prompts/{name}: the template sandbox refused: {exc}"
        ) from None
    return text, used


def render(package: str, name: str, **variables: Any) -> Safe:
    """Render template `name` (e.g. ``"judge.j2"``) from `package`'s prompts folder.

    The result is `Safe` text that remembers its fences, for use as a variable of
    another template. A template with role markers must go through `render_messages`.
    """
    text, used = _render_marked(package, name, variables)
    if MARK in text:
        raise PromptError(f"{package}/prompts/{name} has role markers; use render_messages")
    return Safe(text, used)


def render_messages(package: str, name: str, **variables: Any) -> list[Message]:
    """Render a template into chat messages (see the module docstring).

    Messages are cut at the template's own role markers only; when the prompt holds
    fenced data, the system message says that the fenced parts are data.
    """
    messages, used = render_parts(package, name, **variables)
    return with_data_notice(messages, used)


def render_parts(package: str, name: str, **variables: Any) -> tuple[list[Message], list[str]]:
    """The messages of a template before the data notice is added, and its fence tags
    (for a caller that places the notice itself, as `veracity.prompt_layout` does)."""
    text, used = _render_marked(package, name, variables)
    pieces = _MARK_SPLIT.split(text)
    messages: list[Message] = []
    if pieces[0].strip():
        messages.append(Message(role="user", content=pieces[0].strip()))
    for role, content in zip(pieces[1::2], pieces[2::2], strict=False):
        if content.strip():
            messages.append(Message(role=role, content=content.strip()))
    if not messages:
        raise PromptError(f"{package}/prompts/{name} rendered to no messages")
    return messages, used


def with_data_notice(messages: list[Message], tags: Iterable[str]) -> list[Message]:
    """`messages` with the data notice for `tags` in the (first) system message."""
    tags = [t for t in tags if t]
    if not tags:
        return messages
    return with_system(messages, data_notice(tags), first=False)


def with_system(messages: list[Message], text: str, *, first: bool = True) -> list[Message]:
    """`messages` with `text` added to the system message (one is made if none leads).

    Args:
        first: put `text` before the existing system text (a persona) instead of after
            it (a note).
    """
    if not text:
        return messages
    if messages and messages[0].role == "system":
        own = messages[0].content
        merged = f"{text}\n\n{own}" if first else f"{own}\n\n{text}"
        return [Message(role="system", content=merged), *messages[1:]]
    return [Message(role="system", content=text), *messages]


def note_cut(what: str, kept: int, total: int, unit: str, setting: str | None) -> None:
    """Record in the running check's trace that part of the input was left out (a
    ``note`` event named ``input_cut``), so the user learns what and how to raise it."""
    ctx = context.active()
    if ctx is not None:
        ctx.emit(
            Note(
                name="input_cut",
                detail={
                    "what": what,
                    "kept": kept,
                    "total": total,
                    "unit": unit,
                    "setting": setting,
                },
            )
        )


def render_input(
    item: CheckInput,
    *,
    max_chars: int = 6000,
    max_replies: int = 10,
    setting: str | None = "max_input_chars",
) -> str:
    """A plain-text description of a check input for prompts (untrusted: fence it).

    Args:
        item: the input (already cut to the run's limits by the method, see
            `veracity.core.limits`).
        max_chars: the longest main text shown (article body, claim or post text).
        max_replies: the most replies shown (earliest first); the rest are counted.
        setting: the method setting that raises `max_chars`, named in the trace note
            (`note_cut`) when the text is cut here.
    """
    main = item.text if isinstance(item, Claim | Post) else getattr(item, "body", "")
    if len(main) > max_chars:
        what = {"claim": "the claim", "article": "the article's text", "post": "the post's text"}
        note_cut(what[item.kind], max_chars, len(main), "characters", setting)
    if isinstance(item, Claim):
        lines = [f"Claim: {truncate_chars(item.text, max_chars)}"]
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
        lines = [f"Post: {truncate_chars(item.text, max_chars)}"]
        if item.author:
            lines.append(f"Author: {item.author}")
        replies = item.replies_by_time(max_replies)
        if len(item.replies) > len(replies):
            note_cut("the post", len(replies), len(item.replies), "replies", None)
        if replies:
            lines.append("Replies:")
            lines += [f"- {r.text}" for r in replies]
            if len(item.replies) > len(replies):
                lines.append(f"({len(item.replies) - len(replies)} later replies not shown)")
        return "\n".join(lines)
    raise TypeError(f"not a check input: {type(item).__name__}")


def input_kind_name(item: CheckInput) -> str:
    return {"claim": "claim", "article": "news article", "post": "social-media post"}[item.kind]


# --------------------------------------------------------------------------- template audit

_TRUSTED = re.compile(r"\{#-?\s*trusted:\s*(.*?)\s*-?#\}", re.S)
_SAFE_FILTERS = {"data", "length", "count", "int", "float", "abs", "round"}


def trusted_names(source: str) -> set[str]:
    """The variables a template declares trusted (``{# trusted: a, b.c #}``)."""
    found: set[str] = set()
    for block in _TRUSTED.findall(source):
        for entry in re.sub(r"\([^)]*\)", "", block).replace("\n", ",").split(","):
            m = re.match(r"\s*([\w.]+)", entry)
            if m:
                found.add(m.group(1))
    return found


def _shown(node: jinja2.nodes.Node) -> set[str]:
    """Dotted names whose value `node` outputs (tests of a condition are not output)."""
    nodes = jinja2.nodes
    if isinstance(node, nodes.Filter):
        return set() if node.name in _SAFE_FILTERS else _shown(node.node)  # type: ignore[arg-type]
    if isinstance(node, nodes.CondExpr):
        return _shown(node.expr1) | (_shown(node.expr2) if node.expr2 is not None else set())
    if isinstance(node, nodes.Name):
        return {node.name}
    if isinstance(node, nodes.Getattr):
        return {f"{n}.{node.attr}" for n in _shown(node.node)}
    if isinstance(node, nodes.Getitem):
        key = node.arg.value if isinstance(node.arg, nodes.Const) else "?"
        return {f"{n}.{key}" for n in _shown(node.node)}
    if isinstance(node, nodes.Const | nodes.Test | nodes.Compare | nodes.Not):
        return set()
    out: set[str] = set()
    for child in node.iter_child_nodes():
        out |= _shown(child)
    return out


def private_names(source: str) -> list[str]:
    """The private names a template reads (``x.__class__``, ``x["_y"]``, ``_z``): none of
    the values a method passes has one worth showing, and they are the way out of the
    sandbox an attack tries first."""
    env = jinja2.Environment(extensions=[_RoleMarkers])
    nodes = jinja2.nodes
    found: set[str] = set()
    for node in env.parse(source).find_all((nodes.Getattr, nodes.Getitem, nodes.Name)):
        if isinstance(node, nodes.Getattr):
            name = node.attr
        elif isinstance(node, nodes.Getitem):
            name = node.arg.value if isinstance(node.arg, nodes.Const) else ""
        else:
            name = node.name
        if isinstance(name, str) and name.startswith("_") and name != "_":  # `_`: a loop dummy
            found.add(name)
    return sorted(found)


def unfenced_variables(source: str) -> list[str]:
    """Variables a template shows neither fenced with ``data`` nor declared trusted.

    A dotted name (``p.text``) is covered by a declaration of itself or of its root.
    """
    env = jinja2.Environment(extensions=[_RoleMarkers])
    trusted = trusted_names(source)
    found: set[str] = set()
    for output in env.parse(source).find_all(jinja2.nodes.Output):
        for expr in output.nodes:
            if isinstance(expr, jinja2.nodes.TemplateData):
                continue
            for name in _shown(expr):
                if name not in trusted and name.split(".", 1)[0] not in trusted:
                    found.add(name)
    return sorted(found)


# --------------------------------------------------------------------------- fence tags

_PACKAGE_ROOT = Path(__file__).resolve().parent


def template_fence_tags(source: str) -> set[str]:
    """The tags a template fences with the ``data`` filter: ``data("claim")`` gives
    ``claim``, ``data`` alone ``data``; a tag given by an expression shows as ``?``.

    Raises:
        jinja2.TemplateSyntaxError: `source` is not a template.
    """
    found: set[str] = set()
    for node in jinja2.Environment().parse(source).find_all(jinja2.nodes.Filter):
        if node.name != "data":
            continue
        given = node.args[0] if node.args else None
        given = next((k.value for k in node.kwargs if k.key == "tag"), given)
        if given is None:
            found.add("data")
        elif isinstance(given, jinja2.nodes.Const) and isinstance(given.value, str):
            found.add(given.value)
        else:
            found.add("?")
    return found


def note_fences(source: str, filename: str | None = None) -> None:
    """Make the fence tags of a template from outside the package known to `neutralize`
    before it renders (`veracity.core.untrusted.register_fence_tags`), with those of the
    other templates in its folder, which may render into the same prompt. The package's
    own tags are in `FENCE_TAGS` already (a test keeps that list complete)."""
    if filename is not None:
        folder = Path(filename).resolve().parent
        if folder.is_relative_to(_PACKAGE_ROOT):
            return
        _note_folder(folder)
    with contextlib.suppress(jinja2.TemplateSyntaxError):  # compiling reports it
        register_fence_tags(template_fence_tags(source))


@functools.cache
def _note_folder(folder: Path) -> None:
    for path in sorted(folder.glob("*.j2")):
        with contextlib.suppress(OSError, UnicodeDecodeError, jinja2.TemplateSyntaxError):
            register_fence_tags(template_fence_tags(path.read_text(encoding="utf-8")))
