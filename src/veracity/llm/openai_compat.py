"""`OpenAICompatLLM`: any endpoint that speaks the OpenAI chat-completions API.

Works with OpenAI, DeepSeek, vLLM, Ollama, a llama.cpp server, LM Studio and others.
What each endpoint supports differs, so capabilities are declared, either explicitly or
through a named provider preset. The API key is read from an environment variable (or
passed in) and kept out of reprs, logs, traces and cache keys.
"""

from __future__ import annotations

import ipaddress
import os
import time
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from veracity.llm.base import (
    Capabilities,
    LLMAuthError,
    LLMRateLimited,
    LLMRequest,
    LLMRequestError,
    LLMResponse,
    LLMServerError,
    LLMTimeout,
    TokenLogprob,
    TokenUsage,
    TopLogprob,
)

JsonMode = Literal["json_schema", "json_object", "none"]


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
    },
    "ollama": {
        "base_url": "http://localhost:11434/v1",
        "api_key_env": "OLLAMA_API_KEY",
        "json_mode": "json_schema",
        "logprobs": False,
    },
    "llamacpp": {
        "base_url": "http://localhost:8080/v1",
        "api_key_env": "LLAMACPP_API_KEY",
        "json_mode": "json_schema",
        "logprobs": True,
    },
    "lmstudio": {
        "base_url": "http://localhost:1234/v1",
        "api_key_env": "LMSTUDIO_API_KEY",
        "json_mode": "json_schema",
        "logprobs": False,
    },
}


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
        max_top_logprobs: most alternatives per token the endpoint returns.
        timeout_s: per-request timeout.
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
        timeout_s: float = 120.0,
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
        self.base_url = base_url.rstrip("/")
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
        self.timeout_s = timeout_s
        self._client = client

    def __repr__(self) -> str:  # never show the key
        return f"OpenAICompatLLM(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    @property
    def backend_id(self) -> str:
        return f"openai-compat:{self.base_url}:{self.model}"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def payload(self, request: LLMRequest) -> dict[str, Any]:
        """The JSON body sent for `request`."""
        caps = self._capabilities
        return chat_payload(
            request,
            model=self.model,
            json_mode=self.json_mode,
            logprobs=caps.logprobs,
            max_top_logprobs=caps.max_top_logprobs,
        )

    async def complete(self, request: LLMRequest) -> LLMResponse:
        body = self.payload(request)
        started = time.perf_counter()
        try:
            if self._client is not None:
                resp = await self._post(self._client, body)
            else:
                async with httpx.AsyncClient(timeout=self.timeout_s) as client:
                    resp = await self._post(client, body)
        except httpx.TimeoutException as exc:
            raise LLMTimeout(f"{self.base_url}: request timed out after {self.timeout_s}s") from exc
        except httpx.TransportError as exc:
            raise LLMServerError(
                f"{self.base_url}: connection failed ({type(exc).__name__})"
            ) from exc
        latency = time.perf_counter() - started
        self._raise_for_status(resp)
        try:
            data = resp.json()
        except ValueError as exc:
            raise LLMServerError(f"{self.base_url}: reply is not JSON") from exc
        return parse_chat_completion(data, latency=latency, fallback_model=self.model)

    async def _post(self, client: httpx.AsyncClient, body: dict[str, Any]) -> httpx.Response:
        return await client.post(
            f"{self.base_url}/chat/completions",
            json=body,
            headers=self._headers(),
            timeout=self.timeout_s,
        )

    def _raise_for_status(self, resp: httpx.Response) -> None:
        code = resp.status_code
        if code < 400:
            return
        detail = _error_detail(resp)
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
        raise LLMRequestError(f"{where}: HTTP {code}: {detail}")


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


def chat_payload(
    request: LLMRequest,
    *,
    model: str | None = None,
    json_mode: str = "json_schema",
    logprobs: bool = True,
    max_top_logprobs: int | None = None,
) -> dict[str, Any]:
    """The OpenAI-style chat-completion body for `request` (HTTP and embedded backends).

    Args:
        request: the request.
        model: the ``model`` field (None: left out, as in process).
        json_mode: how a JSON schema is asked for: ``json_schema`` (constrained),
            ``json_object`` (any JSON) or ``none``.
        logprobs: whether the backend returns logprobs (else they are not asked).
        max_top_logprobs: the backend's cap on alternatives (None: no cap).
    """
    body: dict[str, Any] = {"model": model} if model is not None else {}
    body.update(
        messages=[m.model_dump() for m in request.messages],
        temperature=request.temperature,
        max_tokens=request.max_tokens,
    )
    if request.stop:
        body["stop"] = request.stop
    if request.seed is not None:
        body["seed"] = request.seed
    if request.json_schema is not None and json_mode == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": "reply", "schema": request.json_schema},
        }
    elif request.json_schema is not None and json_mode == "json_object":
        body["response_format"] = {"type": "json_object"}
    if request.logprobs and logprobs:
        body["logprobs"] = True
        if request.top_logprobs:
            cap = max_top_logprobs if max_top_logprobs is not None else request.top_logprobs
            body["top_logprobs"] = min(request.top_logprobs, cap)
    return body


def parse_chat_completion(
    data: dict[str, Any], *, latency: float = 0.0, fallback_model: str = ""
) -> LLMResponse:
    """Turn an OpenAI-style chat-completion body into an `LLMResponse`."""
    try:
        choice = data["choices"][0]
        message = choice.get("message") or {}
        text = message.get("content") or ""
    except (KeyError, IndexError, TypeError) as exc:
        raise LLMServerError(f"malformed chat completion: {str(data)[:300]}") from exc
    logprobs = None
    lp = choice.get("logprobs")
    if isinstance(lp, dict) and lp.get("content"):
        logprobs = [
            TokenLogprob(
                token=t["token"],
                logprob=float(t["logprob"]),
                top=[
                    TopLogprob(token=a["token"], logprob=float(a["logprob"]))
                    for a in (t.get("top_logprobs") or [])
                ],
            )
            for t in lp["content"]
        ]
    usage = data.get("usage") or {}
    return LLMResponse(
        text=text,
        logprobs=logprobs,
        usage=TokenUsage(
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
        ),
        latency_s=round(latency, 4),
        model=str(data.get("model") or fallback_model),
        finish_reason=choice.get("finish_reason"),
    )


def _is_loopback(base_url: str) -> bool:
    """Whether the endpoint is on this machine (a local server charges no per-token fee)."""
    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
