"""The home folder and what lives in it, from the environment (`veracity.runtime.
environment`, the one reader of ``VERACITY_*``).

The layers below the composition root take their paths and switches as arguments;
these functions are where the environment becomes those arguments.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from veracity.core.config import LLMConfig
from veracity.core.infra import CacheMode
from veracity.core.paths import HomePaths
from veracity.nlp import embeddings
from veracity.runtime.environment import environment

if TYPE_CHECKING:
    from veracity.llm.client import ManagedLLM
    from veracity.retrieval.transport.http import HttpClient

_user_clients: dict[tuple[str, str], HttpClient] = {}
_user_lock = threading.Lock()


def home_paths() -> HomePaths:
    """The home folder and the folders under it, from ``VERACITY_HOME`` and
    ``VERACITY_MODELS_DIR`` (re-read on each call, so tests and CLIs can change them)."""
    return environment().paths


def offline() -> bool:
    """Whether ``VERACITY_OFFLINE`` forbids network probes and downloads."""
    return environment().offline


def _embedder_store() -> tuple[Path, bool]:
    """Where the sentence embedder is pulled to, and whether it may be fetched on first
    use (not under ``VERACITY_OFFLINE``); re-read on each call like `home_paths`."""
    return home_paths().models, not offline()


embeddings.use_model_store(_embedder_store)


def user_http_client(cache_mode: CacheMode | None = None) -> HttpClient:
    """The HTTP client runs share when they keep no cache of their own: one per home
    folder and cache mode (default ``VERACITY_CACHE_MODE``), its answers kept in the
    home's HTTP cache, so its rate limits and connections are shared too."""
    from veracity.retrieval.transport.http import HttpClient
    from veracity.retrieval.transport.parts import HttpConfig

    s = environment()
    mode: CacheMode = cache_mode or s.cache_mode or "auto"
    key = (str(s.home), mode)
    with _user_lock:
        client = _user_clients.get(key)
        if client is None:
            path = HomePaths(home=s.home).http_cache
            client = _user_clients[key] = HttpClient(HttpConfig(cache_mode=mode, cache_path=path))
        return client


def model_builder() -> Callable[[Mapping[str, Any]], ManagedLLM]:
    """Builds a further model a method names (S2MAD's ``scorer_llm:``): the section layered
    over the environment's model settings, with the home's user-level cache."""

    def build(section: Mapping[str, Any]) -> ManagedLLM:
        from veracity.llm.factory import build_llm
        from veracity.runtime import resolve_llm

        env = environment()
        home = env.paths
        cfg = LLMConfig.layered({}, env.llm_settings()).merged(section)
        return build_llm(resolve_llm(cfg), user_cache=home.llm_cache, models_dir=home.models)

    return build


__all__ = ["home_paths", "model_builder", "offline", "user_http_client"]
