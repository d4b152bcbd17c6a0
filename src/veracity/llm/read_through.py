"""A run's own LLM cache that reads through to the user-level cache.

An evaluation keeps its replies in its run directory, so the directory alone can be
audited and replayed. Without a shared layer, the same deterministic run into a new
directory would ask the model every question again. `ReadThroughCache` looks a
temperature-0 request up in the run's cache first, then in the user-level cache
(``VERACITY_HOME``); a reply found there is copied into the run's cache, so the run
directory still records every reply it used. New deterministic replies go to both.

Sampled replies (temperature > 0) stay in the run's cache only: they are draws, not
answers another run may reuse. Turn the shared layer off with ``llm.user_cache: false``
or ``VERACITY_USER_CACHE=0``.
"""

from __future__ import annotations

from pathlib import Path

from veracity.llm.base import LLMRequest, LLMResponse
from veracity.llm.cache import ResponseCache


class ReadThroughCache:
    """`primary` (the run's cache) backed by `shared` (the user's) for temperature 0.

    Args:
        primary: the run directory's cache; its mode decides what is read and written.
        shared: the user-level cache; read and written for deterministic requests only.

    Attributes:
        shared_hits: replies taken from the shared cache (and copied into `primary`).
    """

    def __init__(self, primary: ResponseCache, shared: ResponseCache):
        if primary.mode == "replay":
            raise ValueError("a replayed run reads its own recording only; no read-through")
        self.primary = primary
        self.shared = shared
        self.shared_hits = 0

    @property
    def mode(self) -> str:
        return self.primary.mode

    @property
    def path(self) -> Path:
        return self.primary.path

    @property
    def hits(self) -> int:
        return self.primary.hits + self.shared_hits

    @property
    def misses(self) -> int:
        return self.primary.misses - self.shared_hits

    def get(self, request: LLMRequest, backend_id: str) -> LLMResponse | None:
        response = self.primary.get(request, backend_id)
        if response is not None or request.temperature != 0:
            return response
        response = self.shared.get(request, backend_id)
        if response is not None:
            self.shared_hits += 1
            self.primary.put(request, backend_id, response)  # the run records what it used
        return response

    def put(self, request: LLMRequest, backend_id: str, response: LLMResponse) -> None:
        self.primary.put(request, backend_id, response)
        if request.temperature == 0:
            self.shared.put(request, backend_id, response)

    def __len__(self) -> int:
        return len(self.primary)

    def close(self) -> None:
        self.primary.close()
        self.shared.close()
