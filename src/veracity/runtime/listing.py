"""The one listing of methods and source types, which every front end shows in its form.

`veracity methods` and `veracity sources` print it as tables, the REST server's
``/v1/methods`` and the web form offer it, the MCP server's ``list_methods`` and
``list_sources`` return it. A method whose plugin fails to load is listed with its
error (front ends that offer methods to choose from leave it out).
"""

from __future__ import annotations

from dataclasses import dataclass

from veracity.core import registry
from veracity.core.labels import LABEL_SPACES, LabelSpace


@dataclass(frozen=True)
class MethodEntry:
    """A registered method as front ends list it.

    Attributes:
        name: the registered name.
        description: one line.
        default_labels: the label space it answers in by default.
        label_spaces: the label spaces it accepts.
        input_kinds: what it checks (claim, article, post).
        options: the options a request may set (`veracity.methods.options`).
        searches: what it searches with its default settings when a run names no sources
            ("web search", "Wikipedia"); empty when it searches only sources it is given.
        offline: what it searches offline (no network, or ``VERACITY_OFFLINE=1``) with no
            sources given (`veracity.retrieval.defaults`), e.g. "the default index
            (needed), without Wikipedia"; empty when it searches nothing.
        error: why its plugin failed to load (the other fields are then empty).
    """

    name: str
    description: str = ""
    default_labels: str = ""
    label_spaces: tuple[str, ...] = ()
    input_kinds: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    offline: str = ""
    error: str | None = None


@dataclass(frozen=True)
class SourceType:
    """A registered source type and what using it needs now (a key, an index)."""

    name: str
    note: str = ""


def list_methods() -> list[MethodEntry]:
    """Every registered method, in registry order; a broken plugin does not hide the others."""
    from veracity.methods.options import allowed_options

    rows = []
    for name in registry.methods.names():
        try:
            cls = registry.methods.get(name)
            config_class = getattr(cls, "config_class", None)
            options = allowed_options(config_class) if config_class is not None else ()
        except Exception as exc:  # a broken plugin must not hide the others
            rows.append(MethodEntry(name=name, error=f"{type(exc).__name__}: {exc}"))
            continue
        allowed = getattr(cls, "allowed_labels", None)
        rows.append(
            MethodEntry(
                name=name,
                description=getattr(cls, "description", ""),
                default_labels=getattr(cls, "default_labels", "?"),
                label_spaces=tuple(allowed) if allowed else tuple(sorted(LABEL_SPACES)),
                input_kinds=tuple(getattr(cls, "input_kinds", ())),
                options=tuple(options),
                **_search_facts(cls),
            )
        )
    return rows


def _search_facts(cls: type) -> dict:
    """`searches` and `offline` of a method class, from its default source needs."""
    needs_of = getattr(cls, "source_needs", None)
    try:
        needs = list(needs_of({})) if needs_of is not None else []
    except Exception:  # a plugin's needs that fail to compute: the run reports it
        needs = []
    if not needs:
        return {}
    what = {"search": "web search", "encyclopedia": "Wikipedia"}
    searches = tuple(dict.fromkeys(what[n.kind] for n in needs))
    required = [n for n in needs if n.off is None]
    skipped = sorted({what[n.kind] for n in needs if n.off is not None})
    # offline a search need is met by the default local index, or the run stops with the
    # command that builds it; a need with `off` settings is dropped (veracity.retrieval.defaults)
    offline = "the default index (needed)" if required else "no search"
    if skipped and required:
        offline += f", without {' or '.join(skipped)}"
    return {"searches": searches, "offline": offline}


def label_spaces() -> list[LabelSpace]:
    """Every label space, by name."""
    return sorted(LABEL_SPACES.values(), key=lambda s: s.name)


def list_source_types() -> list[SourceType]:
    """Every registered source type, with which web engines have their key set."""
    from veracity.retrieval.registry_setup import WEB_ENGINES, available_web_engines

    usable = set(available_web_engines())
    rows = []
    for name in registry.sources.names():
        note = ""
        if name in WEB_ENGINES:
            var = WEB_ENGINES[name][1]
            note = "ready" if name in usable else f"needs {var}"
        elif name == "web":
            note = f"first ready engine of {', '.join(WEB_ENGINES)}"
        elif name == "local":
            note = "a local index built with `veracity index build`"
        rows.append(SourceType(name, note))
    return rows


__all__ = ["MethodEntry", "SourceType", "label_spaces", "list_methods", "list_source_types"]
