"""Build a ready-to-use `ManagedLLM` from an `LLMConfig`."""

from __future__ import annotations

from pathlib import Path

from veracity.core import registry
from veracity.core.config import LLMConfig, settings
from veracity.llm.base import LLM
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM, RetryPolicy, SharedLimit
from veracity.llm.models import Progress
from veracity.llm.read_through import ReadThroughCache


def build_embedded(cfg: LLMConfig, progress: Progress | None = None) -> LLM:
    from veracity.llm.embedded import EmbeddedLLM

    return EmbeddedLLM(
        cfg.model,
        n_ctx=cfg.n_ctx,
        n_parallel=cfg.n_parallel,
        n_threads=cfg.n_threads,
        poll=cfg.poll,
        timeout_s=cfg.timeout_s,
        auto_pull=cfg.auto_pull,
        progress=progress,
        repeat_penalty=cfg.repeat_penalty,
    )


def build_openai(cfg: LLMConfig, progress: Progress | None = None) -> LLM:
    from veracity.llm.openai_compat import OpenAICompatLLM

    return OpenAICompatLLM(
        cfg.model,
        base_url=cfg.base_url,
        provider=cfg.provider,
        api_key_env=cfg.api_key_env,
        json_mode=cfg.json_mode,
        logprobs=cfg.logprobs,
        context_window=cfg.context_window,
        timeout_s=cfg.timeout_s,
        repeat_penalty=cfg.repeat_penalty,
    )


def build_cache(
    cfg: LLMConfig, cache_path: Path | None = None
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
    cfg: LLMConfig | None = None,
    *,
    cache_path: Path | None = None,
    progress: Progress | None = None,
    backend: LLM | None = None,
    shared_limit: SharedLimit | None = None,
) -> ManagedLLM:
    """The configured backend wrapped with cache, retries, concurrency and accounting.

    Args:
        cfg: the LLM config (default: from ``VERACITY_*`` settings).
        cache_path: SQLite cache file (default: the user cache under VERACITY_HOME); a
            run directory's, read through to the user cache (see `build_cache`).
        progress: model-pull progress callback for the embedded backend.
        backend: a backend to wrap instead of building `cfg.backend` (tests, benchmarks).
        shared_limit: a limit on live calls shared with other processes (Ray workers).
    """
    cfg = cfg or LLMConfig.from_settings()
    inner = backend
    if inner is None:
        inner = registry.llm_backends.get(cfg.backend)(cfg, progress)
    cache = build_cache(cfg, cache_path)
    return ManagedLLM(
        inner,
        cache=cache,
        max_concurrency=cfg.max_concurrency,
        retry=RetryPolicy(max_attempts=cfg.max_attempts),
        prices=cfg.prices,
        shared_limit=shared_limit,
    )
