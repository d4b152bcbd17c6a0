"""Build a ready-to-use `ManagedLLM` from a run's resolved model (`LLMSpec`).

Each backend builds itself from its own options model (`veracity.llm.options`); nothing
here knows a backend's fields.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from veracity.core import registry
from veracity.core.config import LLMConfig
from veracity.llm.base import LLM
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM, RetryPolicy, SharedLimit
from veracity.llm.models import Progress
from veracity.llm.options import LLMSpec, options_class
from veracity.llm.read_through import ReadThroughCache


def build_backend(
    spec: LLMSpec, progress: Progress | None = None, models_dir: Path | None = None
) -> LLM:
    """The registered backend `spec.backend` built from the spec's typed options (a
    plain-callable plugin gets the run's flat ``llm:`` config instead); `models_dir` (where
    catalog models live) goes to a backend whose ``from_options`` takes it."""
    backend = registry.llm_backends.get(spec.backend)
    if options_class(backend) is None:
        return backend(spec.to_config(), progress)
    extra = {}
    takes = inspect.signature(backend.from_options).parameters
    if models_dir is not None and "models_dir" in takes:
        extra["models_dir"] = models_dir
    return backend.from_options(spec.model, spec.options, progress, **extra)


def build_cache(
    cfg: LLMSpec | LLMConfig, cache_path: Path | None = None, user_cache: Path | None = None
) -> ResponseCache | ReadThroughCache | None:
    """The response cache for `cfg`: the user-level cache at `user_cache` (the composition
    root passes the home's), or `cache_path` (a run's own) reading deterministic replies
    through to the user-level cache unless `cfg.user_cache` is off or the run is replayed.
    None when the mode is off or neither path is given."""
    if cfg.cache_mode == "off":
        return None
    user_path = user_cache
    if cache_path is None:
        return ResponseCache(user_path, mode=cfg.cache_mode) if user_path is not None else None
    own = ResponseCache(cache_path, mode=cfg.cache_mode)
    if user_path is None or not cfg.user_cache or cfg.cache_mode == "replay":
        return own
    if _same(cache_path, user_path):
        return own
    return ReadThroughCache(own, ResponseCache(user_path, mode="auto"))


def _same(a: Path, b: Path) -> bool:
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def build_llm(
    spec: LLMSpec,
    *,
    cache_path: Path | None = None,
    user_cache: Path | None = None,
    models_dir: Path | None = None,
    progress: Progress | None = None,
    backend: LLM | None = None,
    shared_limit: SharedLimit | None = None,
) -> ManagedLLM:
    """The configured backend wrapped with cache, retries, concurrency and accounting.

    Args:
        spec: the resolved model (`veracity.runtime.resolve_llm` resolves a ``llm:``
            config; a run's is its spec's ``llm``).
        cache_path: a run directory's SQLite cache, read through to `user_cache` (see
            `build_cache`).
        user_cache: the user-level SQLite cache (the composition root passes the home's;
            None with no `cache_path`: replies are not cached).
        models_dir: where catalog models live (the composition root passes the home's).
        progress: model-pull progress callback for the embedded backend.
        backend: a backend to wrap instead of building `spec.backend` (tests, benchmarks).
        shared_limit: a limit on live calls shared with other processes (Ray workers).

    Raises:
        ConfigError: the backend is unknown.
    """
    inner = backend if backend is not None else build_backend(spec, progress, models_dir)
    return ManagedLLM(
        inner,
        cache=build_cache(spec, cache_path, user_cache),
        max_concurrency=spec.max_concurrency,
        retry=RetryPolicy(max_attempts=spec.max_attempts),
        prices=spec.prices,
        shared_limit=shared_limit,
    )
