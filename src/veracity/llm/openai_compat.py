"""`OpenAICompatLLM`: any endpoint that speaks the OpenAI chat-completions API.

Works with OpenAI, DeepSeek, vLLM, Ollama, a llama.cpp server, LM Studio and others.
What each endpoint supports differs, so capabilities are declared, either explicitly or
through a named provider preset. The API key is read from an environment variable (or
passed in) and kept out of reprs, logs, traces and cache keys.

Why not the openai SDK: the work here is one POST and the mapping of its status to our
errors, and the SDK does not fit the endpoints we serve. It requires an API key and
sends it as a Bearer header, where a local llama.cpp or Ollama server takes none and a
base URL's ``user:password`` authenticates with Basic auth in that same header; it
retries on its own (twice by default) beside `ManagedLLM`'s recorded retries; its errors
carry the server's reply unscrubbed (servers echo keys); and llama.cpp's fields
(``id_slot``, ``repeat_penalty``) would travel as untyped ``extra_body`` anyway.
Requests, timeouts and connection errors are httpx's.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import os
import time
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

import httpx
from pydantic import Field

from veracity.core.bounds import Concurrency, ContextWindow
from veracity.core.redaction import (
    install_log_redaction,
    join_path,
    query_secrets,
    scrub_secrets,
    split_credentials,
    strip_credentials,
)
from veracity.llm.base import (
    Capabilities,
    LLMAuthError,
    LLMBadReply,
    LLMRateLimited,
    LLMRequest,
    LLMRequestError,
    LLMResponse,
    LLMServerError,
    LLMTimeout,
)
from veracity.llm.chat_format import chat_payload, parse_chat_completion, sampling_suffix
from veracity.llm.options import BackendOptions
from veracity.llm.slots import SlotScheduler, prompt_text
from veracity.llm.timeouts import RequestTimer, TimeoutPolicy

JsonMode = Literal["json_schema", "json_object", "none"]

install_log_redaction("httpx")  # httpx logs every URL it requests, query string included


# Explicit presets: a user names the provider; nothing is inferred from model names.
PROVIDERS: dict[str, dict[str, Any]] = {
    "openai": {
        "base_url": "https://api.openai.com/v1",
        "api_key_env": "OPENAI_API_KEY",
        "json_mode": "json_schema",
        "logprobs": True,
    },
    "deepseek": {
        "base_url": "https://api.deepseek.com/v1",
        "api_key_env": "DEEPSEEK_API_KEY",
        "json_mode": "json_object",
        "logprobs": True,
    },
    "vllm": {
        "base_url": "http://localhost:8000/v1",
        "api_key_env": "VLLM_API_KEY",
        "json_mode": "json_schema",
        "logprobs": True,
        "penalty_field": "repetition_penalty",
    },
    "ollama": {
        "base_url": "http://localhost:11434/v1",
        "api_key_env": "OLLAMA_API_KEY",
        "json_mode": "json_schema",
        "logprobs": False,
        "slot_cache": True,
    },
    "llamacpp": {
        "base_url": "http://localhost:8080/v1",
        "api_key_env": "LLAMACPP_API_KEY",
        "json_mode": "json_schema",
        "logprobs": True,
        "penalty_field": "repeat_penalty",
        "slot_cache": True,
    },
    "lmstudio": {
        "base_url": "http://localhost:1234/v1",
        "api_key_env": "LMSTUDIO_API_KEY",
        "json_mode": "json_schema",
        "logprobs": False,
        "slot_cache": True,
    },
}


class EndpointOptions(BackendOptions):
    """The OpenAI-compatible backend's options (see `OpenAICompatLLM`): an endpoint by
    `base_url` or a `provider` preset, and what it supports where the preset does not
    say."""

    provider: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    json_mode: JsonMode | None = None
    logprobs: bool | None = None
    context_window: ContextWindow | None = Field(default=None, ge=1)
    slot_cache: bool | None = None
    slots: Concurrency | None = Field(default=None, ge=1)


class OpenAICompatLLM:
    """Chat completions over HTTP.

    Args:
        model: model name as the endpoint knows it.
        base_url: endpoint root, e.g. ``https://api.openai.com/v1``.
        api_key: the key; prefer `api_key_env` so the key stays out of config files.
        api_key_env: environment variable holding the key (read at construction).
        provider: a preset name from `PROVIDERS` giving defaults for the other options.
        json_mode: how to request JSON: a JSON schema, plain JSON mode, or none.
        logprobs: whether the endpoint returns token logprobs.
        slot_cache: whether the server keeps prompts per slot, as llama.cpp does
            (`Capabilities.slot_cache`); default: the preset's word, else true for an
            endpoint on this machine without a provider (taken to be llama.cpp, as in
            `penalty_field`) and false for a remote one.
        slots: a llama.cpp server's slot count (its ``--parallel``). Given, each request
            names the slot that holds most of its prompt (``id_slot``), and one whose
            prefix a running request is computing waits for that request's slot instead
            of computing the prefix again on another (`veracity.llm.slots`).
            Only for llama.cpp: the ``llamacpp`` provider, or an endpoint on this machine
            without a provider.
        max_top_logprobs: most alternatives per token the endpoint returns.
        timeout_s: a fixed per-request limit in seconds; None (default) scales each
            request's limit with its ``max_tokens`` and the speed measured so far
            (`veracity.llm.timeouts`), so long replies from a busy server are not cut off.
        repeat_penalty: penalty on recently generated tokens, sent where the endpoint
            takes one (`penalty_field`) exactly as the embedded backend sends it.
        client: an existing `httpx.AsyncClient` (tests inject one).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        provider: str | None = None,
        json_mode: JsonMode | None = None,
        logprobs: bool | None = None,
        max_top_logprobs: int = 20,
        context_window: int | None = None,
        timeout_s: float | None = None,
        repeat_penalty: float | None = None,
        slot_cache: bool | None = None,
        slots: int | None = None,
        client: httpx.AsyncClient | None = None,
    ):
        preset: dict[str, Any] = {}
        if provider is not None:
            if provider not in PROVIDERS:
                raise ValueError(f"unknown provider {provider!r}; known: {sorted(PROVIDERS)}")
            preset = PROVIDERS[provider]
        base_url = base_url or preset.get("base_url")
        if not base_url:
            raise ValueError("OpenAICompatLLM needs base_url or provider")
        if not model:
            raise ValueError("OpenAICompatLLM needs a model name")
        self.model = model
        # user:password and secret query parameters (?key=…) in the URL authenticate the
        # connection; nothing else sees them: `base_url` shows them redacted
        endpoint, self._basic_auth = split_credentials(base_url)
        self._endpoint = _without_trailing_slash(endpoint)
        self._query_secrets = query_secrets(endpoint)
        self.base_url = strip_credentials(self._endpoint)
        key_env = api_key_env or preset.get("api_key_env") or "OPENAI_API_KEY"
        self._api_key = api_key if api_key is not None else os.environ.get(key_env)
        self._key_env = key_env
        self.json_mode: JsonMode = json_mode or preset.get("json_mode", "json_schema")
        has_logprobs = logprobs if logprobs is not None else preset.get("logprobs", True)
        self._capabilities = Capabilities(
            json_schema=self.json_mode == "json_schema",
            logprobs=has_logprobs,
            max_top_logprobs=max_top_logprobs if has_logprobs else 0,
            seed=True,
            context_window=context_window,
            local=_is_loopback(self.base_url),
        )
        if slot_cache is None:
            slot_cache = preset.get("slot_cache", False) if provider else self._capabilities.local
        self._capabilities = self._capabilities.model_copy(update={"slot_cache": slot_cache})
        self.timer = RequestTimer(TimeoutPolicy(fixed_s=timeout_s))
        self.penalty_field = penalty_field(provider, preset, local=self._capabilities.local)
        # sent only where the endpoint takes it (hosted APIs reject unknown fields)
        self.repeat_penalty = repeat_penalty if self.penalty_field else None
        self.slots: SlotScheduler | None = None
        if slots is not None:
            if not (provider == "llamacpp" or (provider is None and self._capabilities.local)):
                raise ValueError(
                    "slots: only a llama.cpp server takes requests by slot (provider "
                    "llamacpp, or a server on this machine without a provider)"
                )
            self.slots = SlotScheduler(slots)
        self._client = client

    options_class = EndpointOptions

    @classmethod
    def from_options(
        cls, model: str, options: EndpointOptions, progress: Any = None
    ) -> OpenAICompatLLM:
        """The backend for `model` with validated `options` (`progress` is unused: an
        endpoint has nothing to download)."""
        return cls(model, **options.model_dump())

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatLLM(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def backend_id(self) -> str:
        return f"openai-compat:{self.base_url}:{self.model}{sampling_suffix(self.repeat_penalty)}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _secrets(self) -> list[str | None]:
        """Every form in which our credentials travel (to scrub them from messages)."""
        found = [self._api_key, *self._query_secrets]
        if self._basic_auth is not None:
            user, password = self._basic_auth
            token = base64.b64encode(f"{user}:{password}".encode()).decode()
            found += [password, token]
        return found

    def payload(self, request: LLMRequest) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        caps = self._capabilities
        return chat_payload(
            request,
            model=self.model,
            json_mode=self.json_mode,
            logprobs=caps.logprobs,
            max_top_logprobs=caps.max_top_logprobs,
            repeat_penalty=self.repeat_penalty,
            penalty_field=self.penalty_field or "repeat_penalty",
        )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = self.payload(request)
        if self.slots is None:
            return await self._complete(request, body)

        async def on_slot(slot: int) -> LLMResponse:
            return await self._complete(request, {**body, "id_slot": slot})

        return await self.slots.run(prompt_text(body), on_slot)

    async def _complete(self, request: LLMRequest, body: dict[str, Any]) -> LLMResponse:
        limit = self.timer.limit(request)
        started = time.perf_counter()
        try:
            if self._client is not None:
                resp = await asyncio.wait_for(self._post(self._client, body, limit), limit)
            else:
                async with httpx.AsyncClient() as client:
                    resp = await asyncio.wait_for(self._post(client, body, limit), limit)
        except (httpx.TimeoutException, asyncio.TimeoutError) as exc:
            self.timer.timed_out(request, limit)
            local = self._capabilities.local
            raise LLMTimeout(
                f"{self.base_url}: no reply within {limit:g} s (max_tokens="
                f"{request.max_tokens}, {self._speed()})",
                timeout_s=limit,
                local=local,
            ) from exc
        except httpx.TransportError as exc:
            raise LLMServerError(
                f"{self.base_url}: connection failed ({type(exc).__name__})"
            ) from exc
        latency = time.perf_counter() - started
        self._raise_for_status(resp)
        try:
            data = resp.json()
        except ValueError as exc:  # also covers a body that is not UTF-8
            raise LLMBadReply(f"{self.base_url}: reply is not JSON") from exc
        response = parse_chat_completion(data, latency=latency, fallback_model=self.model)
        self.timer.observe(response, latency)
        return response

    def _speed(self) -> str:
        if self.timer.policy.fixed_s is not None:
            return "fixed limit"
        rate = 1 / self.timer.seconds_per_token
        return f"{rate:.1f} tokens/s {'measured' if self.timer.measured else 'assumed'}"

    async def _post(
        self, client: httpx.AsyncClient, body: dict[str, Any], limit: float
    ) -> httpx.Response:
        return await client.post(
            join_path(self._endpoint, "chat/completions"),
            json=body,
            headers=self._headers(),
            timeout=httpx.Timeout(limit, connect=min(limit, 15.0)),
            auth=self._basic_auth or httpx.USE_CLIENT_DEFAULT,
        )

    def _raise_for_status(self, resp: httpx.Response) -> None:
        code = resp.status_code
        if code < 400:
            return
        detail = scrub_secrets(_error_detail(resp), self._secrets())  # servers echo keys
        where = f"{self.base_url} ({self.model})"
        if code in (401, 403):
            hint = "" if self._api_key else f"; set {self._key_env}"
            raise LLMAuthError(f"{where}: HTTP {code}, credentials rejected{hint}: {detail}")
        if code == 429:
            raise LLMRateLimited(
                f"{where}: HTTP 429 rate limited: {detail}", retry_after=_retry_after(resp)
            )
        if code >= 500:
            raise LLMServerError(f"{where}: HTTP {code}: {detail}", retry_after=_retry_after(resp))
        if code == 408:
            raise LLMTimeout(f"{where}: HTTP 408: {detail}")
        hint = ""
        if "context" in detail.lower():  # llama.cpp: "exceeds the available context size"
            hint = (
                " (the request does not fit the model's context: start the server with a "
                "larger one, e.g. llama.cpp's -c / vLLM's --max-model-len, shorten the input, "
                "or use a model with a longer context)"
            )
        raise LLMRequestError(f"{where}: HTTP {code}: {detail}{hint}")


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _error_detail(resp: httpx.Response) -> str:
    try:
        err = resp.json().get("error", {})
        if isinstance(err, dict):
            return str(err.get("message") or err)[:500]
        return str(err)[:500]
    except ValueError:
        return resp.text[:500]


def penalty_field(provider: str | None, preset: dict[str, Any], *, local: bool) -> str | None:
    """The body field an endpoint takes a repetition penalty in, or None where it takes
    none: a provider's preset says; an endpoint on this machine without a provider is
    taken to be llama.cpp-compatible (llama.cpp, LM Studio, koboldcpp spell it
    ``repeat_penalty``); a remote one without a provider is sent none."""
    if provider is not None:
        return preset.get("penalty_field")
    return "repeat_penalty" if local else None


def _without_trailing_slash(url: str) -> str:
    """`url` without a "/" at the end of its path (its query string kept)."""
    try:
        p = urlsplit(url)
    except ValueError:
        return url.rstrip("/")
    return urlunsplit((p.scheme, p.netloc, p.path.rstrip("/"), p.query, p.fragment))


def _is_loopback(base_url: str) -> bool:
    """Whether the endpoint is on this machine (a local server charges no per-token fee)."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
