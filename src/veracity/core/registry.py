"""Named registries for methods, sources and LLM backends.

Built-ins register exactly as third-party plugins do: through entry points in the
groups ``veracity.methods``, ``veracity.sources``, ``veracity.llms`` and
``veracity.datasets`` (see
pyproject.toml). Code can also register directly with `Registry.register`.
Entry points are loaded lazily, on the first lookup, so importing veracity stays fast.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import metadata
from typing import Any, Generic, TypeVar

from veracity.core.errors import RegistryError

T = TypeVar("T")


class Registry(Generic[T]):
    def __init__(self, kind: str, group: str):
        self.kind = kind
        self.group = group
        self._items: dict[str, T] = {}
        self._entry_points: dict[str, metadata.EntryPoint] | None = None

    def register(self, name: str, obj: T | None = None) -> Any:
        """Register `obj` under `name`; usable as a decorator when `obj` is omitted."""

        def _add(o: T) -> T:
            existing = self._items.get(name)
            if existing is not None and existing is not o:
                raise RegistryError(f"{self.kind} {name!r} is already registered")
            self._items[name] = o
            return o

        return _add if obj is None else _add(obj)

    def _eps(self) -> dict[str, metadata.EntryPoint]:
        if self._entry_points is None:
            self._entry_points = {ep.name: ep for ep in metadata.entry_points(group=self.group)}
        return self._entry_points

    def get(self, name: str) -> T:
        if name in self._items:
            return self._items[name]
        ep = self._eps().get(name)
        if ep is None:
            raise RegistryError(
                f"unknown {self.kind} {name!r}; available: {', '.join(self.names()) or 'none'}"
            )
        try:
            obj = ep.load()
        except ImportError as exc:
            raise RegistryError(
                f"{self.kind} {name!r} is registered by an installed package ({ep.value}) "
                f"but could not be imported: {exc}"
            ) from exc
        self._items.setdefault(name, obj)
        return self._items[name]

    def entry_point_names(self) -> list[str]:
        """Names registered through entry points (installed packages), not at run time."""
        return sorted(self._eps())

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._eps()))

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()


methods: Registry[Callable[..., Any]] = Registry("method", "veracity.methods")
sources: Registry[Callable[..., Any]] = Registry("source", "veracity.sources")
llm_backends: Registry[Callable[..., Any]] = Registry("LLM backend", "veracity.llms")
datasets: Registry[Any] = Registry("dataset", "veracity.datasets")
