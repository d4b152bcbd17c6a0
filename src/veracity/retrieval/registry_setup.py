"""Building sources by name from a config mapping.

Built-in sources register in ``veracity.core.registry.sources`` through entry points (group
``veracity.sources`` in pyproject.toml), exactly as a plugin would. A run config names
sources as a mapping from instance name to options::

    sources:
      wikipedia: {sentences: 2}
      wiki_de: {type: wikipedia, language: de}
      web: {engine: auto, fetch_pages: true}
      pubmed: {}

``type`` picks the registered source (default: the instance name). `build_sources`
turns such a mapping into managed sources (`ManagedSource`), with a `ConfigError` that
names the problem: an unknown type, a bad option, or a missing key (naming the
environment variable to set).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from veracity.core import registry
from veracity.core.config import ConfigError
from veracity.core.registry import RegistryError
from veracity.retrieval.base import Source
from veracity.retrieval.engines.common import MissingCredentials
from veracity.retrieval.engines.factcheck import FACT_CHECK_SITES, FactCheckSiteSearch
from veracity.retrieval.engines.web import (
    BraveSearchSource,
    SerperSource,
    TavilySource,
    WebSearchSource,
)
from veracity.retrieval.engines.web_free import DuckDuckGoSource, SearxngSource
from veracity.retrieval.managed import CombinedSource, ManagedSource
from veracity.retrieval.transport.http import HttpClient

# Web engines in the order `engine: auto` tries them, with what each needs.
WEB_ENGINES: dict[str, tuple[type[WebSearchSource], str | None]] = {
    "brave": (BraveSearchSource, "BRAVE_API_KEY"),
    "serper": (SerperSource, "SERPER_API_KEY"),
    "tavily": (TavilySource, "TAVILY_API_KEY"),
    "searxng": (SearxngSource, "SEARXNG_URL"),
    "duckduckgo": (DuckDuckGoSource, None),
}


def available_web_engines() -> list[str]:
    """Web engines usable now: those whose key (or URL) is set, DuckDuckGo always."""
    return [name for name, (_, var) in WEB_ENGINES.items() if var is None or os.environ.get(var)]


def build_web(
    engine: str = "auto",
    name: str | None = None,
    http: HttpClient | None = None,
    **options: Any,
) -> WebSearchSource:
    """A web engine by name, or with ``engine="auto"`` the first one with a key set
    (Brave, Serper, Tavily, SearXNG, then DuckDuckGo, which needs none)."""
    if engine == "auto":
        engine = available_web_engines()[0]
    if engine not in WEB_ENGINES:
        raise ConfigError(
            f"unknown web engine {engine!r}; choose from auto, {', '.join(WEB_ENGINES)}"
        )
    cls = WEB_ENGINES[engine][0]
    return cls(name=name or engine, http=http, **options)


def build_factcheck_sites(
    engine: str = "auto",
    sites: list[str] | tuple[str, ...] = FACT_CHECK_SITES,
    name: str = "factcheck_sites",
    http: HttpClient | None = None,
    **engine_options: Any,
) -> FactCheckSiteSearch:
    """Fact-check site search over a web engine chosen as in `build_web`."""
    web = build_web(engine, http=http, **engine_options)
    return FactCheckSiteSearch(web, sites=tuple(sites), name=name)


def _call(
    factory: Callable[..., Any],
    name: str,
    options: dict[str, Any],
    http: HttpClient | None,
    indexes_dir: Path | None = None,
) -> Any:
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # builtins without a signature
        params = {}
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    kwargs = dict(options)
    if "name" in params or takes_any:
        kwargs.setdefault("name", name)  # every Source has a name
    if http is not None and "http" in params:
        kwargs.setdefault("http", http)
    if indexes_dir is not None and "indexes_dir" in params and not kwargs.get("indexes_dir"):
        kwargs["indexes_dir"] = indexes_dir
    return factory(**kwargs)


def build_source(
    name: str,
    options: Mapping[str, Any] | None = None,
    *,
    http: HttpClient | None = None,
    indexes_dir: Path | None = None,
    managed: bool = True,
) -> Source:
    """One source from its instance name and options (see the module docstring).

    `http` and `indexes_dir` (where named local indexes live) go to the sources that
    take them, unless the options give their own.

    Raises:
        ConfigError: unknown type, bad options or missing credentials.
    """
    opts = dict(options or {})
    kind = opts.pop("type", name)
    try:
        factory = registry.sources.get(kind)
    except RegistryError as exc:
        raise ConfigError(f"sources.{name}: {exc}") from exc
    try:
        source = _call(factory, name, opts, http, indexes_dir)
    except MissingCredentials as exc:
        raise ConfigError(f"sources.{name}: {exc}") from exc
    except (ValidationError, TypeError, ValueError) as exc:
        raise ConfigError(f"sources.{name}: bad options for {kind!r}: {exc}") from exc
    if not isinstance(source, Source):
        raise ConfigError(
            f"sources.{name}: {kind!r} did not build a Source (got {type(source).__name__})"
        )
    return ManagedSource(source) if managed else source


def build_sources(
    config: Mapping[str, Mapping[str, Any] | None],
    *,
    http: HttpClient | None = None,
    indexes_dir: Path | None = None,
    managed: bool = True,
) -> dict[str, Source]:
    """Every source of a config mapping, by instance name (all errors are reported together).

    Raises:
        ConfigError: one or more entries cannot be built; the message lists each.
    """
    built: dict[str, Source] = {}
    problems: list[str] = []
    for name, options in config.items():
        if options is not None and not isinstance(options, Mapping):
            problems.append(
                f"sources.{name}: options must be a mapping, got {type(options).__name__}"
            )
            continue
        try:
            built[name] = build_source(
                name, options, http=http, indexes_dir=indexes_dir, managed=managed
            )
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("cannot build sources:\n  " + "\n  ".join(problems))
    return built


def build_combined(
    config: Mapping[str, Mapping[str, Any] | None],
    *,
    http: HttpClient | None = None,
    name: str = "combined",
) -> CombinedSource:
    """A `CombinedSource` over every (managed) source of a config mapping."""
    return CombinedSource(list(build_sources(config, http=http).values()), name=name)


__all__ = [
    "WEB_ENGINES",
    "available_web_engines",
    "build_combined",
    "build_factcheck_sites",
    "build_source",
    "build_sources",
    "build_web",
]
