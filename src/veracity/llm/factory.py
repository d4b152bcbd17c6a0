"""Build a ready-to-use `ManagedLLM` from a run's resolved model (`LLMSpec`).

Each backend builds itself from its own options model (`veracity.llm.options`); nothing
here knows a backend's fields.
"""

from __future__ import annotations

from pathlib import Path

from veracity.llm.base import LLM
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM, RetryPolicy, SharedLimit
from veracity.llm.models import Progress
from veracity.llm.options import LLMSpec, options_class, resolve_llm
from veracity.llm.read_through import ReadThroughCache

from veracity.core import registry
from veracity.core.config import LLMConfig, settings


def build_backend(spec: LLMSpec, progress: Progress | None = None) -> LLM:
    """The registered backend `spec.backend` built from the spec's typed options (a
    plain-callable plugin gets the run's flat ``llm:`` config instead)."""
    backend = registry.llm_backends.get(spec.backend)
    if options_class(backend) is None:
        return backend(spec.to_config(), progress)
    return backend.from_options(spec.model, spec.options, progress)


def build_cache(
    cfg: LLMSpec | LLMConfig, cache_path: Path | None = None
) -> ResponseCache | ReadThroughCache | None:
    """The response cache for `cfg`: the user-level cache, or `cache_path` (a run's own)
    reading deterministic replies through to the user-level cache unless `cfg.user_cache`
    is off or the run is replayed."""
    if cfg.cache_mode == "off":
        return None
    user_path = settings().cache_path
    if cache_path is None:
        return ResponseCache(user_path, mode=cfg.cache_mode)
    own = ResponseCache(cache_path, mode=cfg.cache_mode)
    if not cfg.user_cache or cfg.cache_mode == "replay" or _same(cache_path, user_path):
        return own
    return ReadThroughCache(own, ResponseCache(user_path, mode="auto"))


def _same(a: Path, b: Path) -> bool:
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def build_llm(
    cfg: LLMSpec | LLMConfig | None = None,
    *,
    cache_path: Path | None = None,
    progress: Progress | None = None,
    backend: LLM | None = None,
    shared_limit: SharedLimit | None = None,
) -> ManagedLLM:
    """The configured backend wrapped with cache, retries, concurrency and accounting.

    Args:
        cfg: the resolved model, or a ``llm:`` config to resolve (default: from the
            ``VERACITY_*`` settings).
        cache_path: SQLite cache file (default: the user cache under VERACITY_HOME); a
            run directory's, read through to the user cache (see `build_cache`).
        progress: model-pull progress callback for the embedded backend.
        backend: a backend to wrap instead of building `cfg.backend` (tests, benchmarks).
        shared_limit: a limit on live calls shared with other processes (Ray workers).

    Raises:
        ConfigError: the backend is unknown or its options do not fit it.
    """
    spec = cfg if isinstance(cfg, LLMSpec) else resolve_llm(cfg or LLMConfig.from_settings())
    inner = backend if backend is not None else build_backend(spec, progress)
    return ManagedLLM(
        inner,
        cache=build_cache(spec, cache_path),
        max_concurrency=spec.max_concurrency,
        retry=RetryPolicy(max_attempts=spec.max_attempts),
        prices=spec.prices,
        shared_limit=shared_limit,
    )
