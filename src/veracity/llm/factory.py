"""Build a ready-to-use `ManagedLLM` from an `LLMConfig`."""

from __future__ import annotations

from pathlib import Path

from veracity import registry
from veracity.config import LLMConfig, settings
from veracity.llm.base import LLM
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM, RetryPolicy, SharedLimit
from veracity.llm.models import Progress


def build_embedded(cfg: LLMConfig, progress: Progress | None = None) -> LLM:
    from veracity.llm.embedded import EmbeddedLLM

    return EmbeddedLLM(
        cfg.model,
        n_ctx=cfg.n_ctx,
        n_parallel=cfg.n_parallel,
        n_threads=cfg.n_threads,
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
    )


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
        cache_path: SQLite cache file (default: the user cache under VERACITY_HOME).
        progress: model-pull progress callback for the embedded backend.
        backend: a backend to wrap instead of building `cfg.backend` (tests, benchmarks).
        shared_limit: a limit on live calls shared with other processes (Ray workers).
    """
    cfg = cfg or LLMConfig.from_settings()
    inner = backend
    if inner is None:
        inner = registry.llm_backends.get(cfg.backend)(cfg, progress)
    cache = None
    if cfg.cache_mode != "off":
        cache = ResponseCache(cache_path or settings().cache_path, mode=cfg.cache_mode)
    return ManagedLLM(
        inner,
        cache=cache,
        max_concurrency=cfg.max_concurrency,
        retry=RetryPolicy(max_attempts=cfg.max_attempts),
        prices=cfg.prices,
        shared_limit=shared_limit,
    )
