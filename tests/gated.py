"""A model that holds its answer until a test lets it go (to keep a check `running`)."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from veracity.llm.base import LLMRequest, LLMResponse

__all__ = ["GatedLLM"]


class GatedLLM:
    """Answers like `inner`, but only once `gate` is set (to hold a check in `running`).

    With `tags`, only calls whose tag starts with one of them wait (``("rag",)`` holds a
    document's claim checks and lets its claim extraction through).
    """

    def __init__(self, inner: Any, tags: tuple[str, ...] | None = None):
        self.inner = inner
        self.tags = tags
        self.gate = threading.Event()
        self.waiting = threading.Event()

    @property
    def capabilities(self):
        return self.inner.capabilities

    @property
    def backend_id(self) -> str:
        return self.inner.backend_id

    @property
    def model(self) -> str:
        return "gated"

    async def complete(self, request: LLMRequest) -> LLMResponse:
        if self.tags is None or (request.tag or "").startswith(self.tags):
            self.waiting.set()
            while not self.gate.is_set():
                await asyncio.sleep(0.01)
        return await self.inner.complete(request)
