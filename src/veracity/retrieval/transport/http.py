"""The shared HTTP client every web source uses.

`HttpClient` wraps `httpx.AsyncClient` with: timeouts; retries with exponential backoff
and full jitter on 429, 5xx, timeouts and connection errors (honouring Retry-After);
per-host rate limits; the SQLite response cache of `httpcache` (record/replay); redaction
of API keys from logs, trace events, error messages, cache keys and cache rows; and, for
URLs taken from search results, the public-address guard of `netsafe` (checked again on
every redirect). Failures surface as the typed errors of `veracity.retrieval.base`.

Sources share one client per process (`default_http_client()`), so the per-host limits
hold across sources; tests pass their own client (mocked with respx, cache in tmp_path).
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import logging
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from veracity.core import context
from veracity.core.events import Fault
from veracity.core.infra import RetryPolicy, retrying
from veracity.core.redaction import install_log_redaction
from veracity.retrieval.base import (
    SourceAuthError,
    SourceBadResponse,
    SourceRateLimited,
    SourceUnreachable,
)
from veracity.retrieval.transport.cache import CachedResponse, HttpCache, ReplayMiss, request_key
from veracity.retrieval.transport.netsafe import (
    REDACTED,
    Resolver,
    UnsafeURL,
    check_public_url,
    redact_mapping,
    redact_url,
    scrub,
    secret_values,
)
from veracity.retrieval.transport.parts import (
    AUTH_STATUS,
    DEFAULT_RATE_LIMITS,
    RETRY_STATUS,
    HostLimiter,
    HttpConfig,
    HttpResponse,
    HttpStatusError,
    RequestTally,
    count_answer,
    retry_after_s,
    track_requests,
)

log = logging.getLogger("veracity.http")


install_log_redaction("httpx")  # httpx logs full URLs


@dataclass
class _Call:
    """One logical request (retries and redirects included)."""

    source: str
    method: str
    url: str
    params: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    json_body: dict[str, Any] | None = None
    form: dict[str, str] | None = None
    auth: tuple[str, str] | None = None
    guard: bool = False
    secrets: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        try:
            in_url = dict(parse_qsl(urlsplit(self.url).query))
        except ValueError:  # malformed: refused when it is sent (see _send)
            in_url = {}
        self.secrets = secret_values(
            {**in_url, **(self.params or {})}, self.headers, self.json_body
        )
        self.secrets += [v for v in (self.form or {}).values() if len(v) >= 8]
        if self.auth:
            self.secrets.append(self.auth[1])


class HttpClient:
    """Async HTTP with retries, rate limits, caching, redaction and the address guard.

    Args:
        config: client settings.
        cache: a cache to use instead of the one `config` describes.
        transport: an httpx transport (tests); respx also works without it.
        resolver: host resolver for the address guard (tests).
    """

    def __init__(
        self,
        config: HttpConfig | None = None,
        *,
        cache: HttpCache | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        resolver: Resolver | None = None,
    ):
        self.config = config or HttpConfig()
        if cache is None and self.config.cache_mode != "off" and self.config.cache_path:
            cache = HttpCache(
                self.config.cache_path, self.config.cache_mode, self.config.cache_ttl_s
            )
        self.cache = cache
        self.retry = RetryPolicy(
            self.config.max_attempts, self.config.base_delay_s, self.config.max_delay_s
        )
        self.resolver = resolver
        self._transport = transport
        self._limiter = HostLimiter(self.config.rate_limits, self.config.default_rate)
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._clients = weakref.WeakKeyDictionary()
        self.requests = 0  # live requests sent (retries included)

    def __repr__(self) -> str:
        return f"HttpClient(cache_mode={self.config.cache_mode!r})"

    def _client(self) -> httpx.AsyncClient:
        # An AsyncClient belongs to the loop it first ran on: keep one per loop.
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.config.timeout_s, connect=self.config.connect_timeout_s),
                headers={"User-Agent": self.config.user_agent},
                transport=self._transport,
                follow_redirects=False,
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close the connection pool of the running loop."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    # ------------------------------------------------------------------ public API

    async def get_json(self, source: str, url: str, **kwargs: Any) -> Any:
        """GET `url` and parse the JSON body (see `request` for the arguments)."""
        return (await self.request(source, "GET", url, **kwargs)).json(source)

    async def post_json(self, source: str, url: str, **kwargs: Any) -> Any:
        """POST to `url` and parse the JSON body (see `request` for the arguments)."""
        return (await self.request(source, "POST", url, **kwargs)).json(source)

    async def request(
        self,
        source: str,
        method: str,
        url: str,
        *,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        json_body: dict[str, Any] | None = None,
        form: dict[str, str] | None = None,
        auth: tuple[str, str] | None = None,
        use_cache: bool = True,
        guard: bool = False,
        cache_if: Callable[[HttpResponse], bool] | None = None,
    ) -> HttpResponse:
        """Send one request through the cache, rate limit and retry loop.

        Args:
            source: the source name, for errors, logs and trace events.
            method: GET or POST.
            url: the endpoint.
            params: query parameters (secret ones are redacted everywhere).
            headers: extra headers (secret ones are redacted everywhere).
            json_body: a JSON body.
            form: a form-encoded body (never cached; used for OAuth token requests).
            auth: HTTP basic credentials (never cached, logged or stored).
            use_cache: read and write the response cache.
            guard: refuse non-public addresses, also on redirects (for result URLs).
            cache_if: store a live answer only when this returns True (for services
                that report errors inside a 200 answer).

        Raises:
            SourceAuthError: 401 or 403.
            SourceRateLimited: 429 after the last attempt.
            SourceUnreachable: network errors, timeouts or 5xx after the last attempt.
            HttpStatusError: any other non-2xx status.
            UnsafeURL: `guard` is on and the URL or a redirect is not public.
            ReplayMiss: replay mode and nothing recorded for this request.
        """
        call = _Call(source, method, url, params, headers, json_body, form, auth, guard)
        cacheable = use_cache and self.cache is not None and form is None and auth is None
        key = request_key(method, url, params, json_body) if cacheable else ""
        if cacheable:
            hit = self.cache.get(key, what=f"{method} {redact_url(url)}")
            if hit is not None:
                log.debug("%s %s (cached)", method, _show(url, params))
                count_answer(cached=True, retrieved_at=hit.retrieved_at)
                return HttpResponse(
                    hit.status, redact_url(url), hit.content_type, hit.body, hit.retrieved_at, True
                )
        response = await self._with_retries(call)
        count_answer(cached=False, retrieved_at=response.retrieved_at)
        if cacheable and (cache_if is None or cache_if(response)):
            stored = CachedResponse(
                response.status,
                response.content_type,
                _scrub_bytes(response.content, call.secrets),
                response.retrieved_at,
            )
            self.cache.put(
                key, method=method, url=url, params=params, body=json_body, response=stored
            )
        return response

    async def fetch_page(self, source: str, url: str) -> HttpResponse:
        """GET a page named by a search result: guarded, size-capped, cached."""
        return await self.request(source, "GET", url, guard=True)

    # ------------------------------------------------------------------ internals

    async def _with_retries(self, call: _Call) -> HttpResponse:
        def retry(exc: BaseException, attempt: int, delay: float) -> None:
            error = f"{type(exc).__name__}: {exc}"
            context.current().emit(
                Fault(name=call.source, error=error, attempt=attempt, retry_in_s=round(delay, 3))
            )
            log.info("%s: %s; retry %d in %.2fs", call.source, exc, attempt, delay)

        def give_up(exc: BaseException, attempt: int) -> None:
            error = f"{type(exc).__name__}: {exc}"
            context.current().emit(Fault(name=call.source, error=error, attempts=attempt))

        def retry_after(exc: BaseException) -> float | None:
            return getattr(exc, "retry_after", None)

        return await retrying(
            lambda: self._send(call),
            self.retry,
            retry_on=(SourceRateLimited, SourceUnreachable),
            retry_after=retry_after,
            # a server asking for a longer pause than we would wait: give up now
            give_up_if=lambda exc: (retry_after(exc) or 0) > self.retry.max_delay_s,
            on_retry=retry,
            on_give_up=give_up,
        )

    async def _send(self, call: _Call) -> HttpResponse:
        client = self._client()
        try:
            request = client.build_request(
                call.method,
                call.url,
                params=call.params,
                headers=call.headers,
                json=call.json_body,
                data=call.form,
            )
        except (httpx.InvalidURL, ValueError, UnicodeError) as exc:
            # odd octal or Unicode-digit hosts, unbalanced brackets, bad ports, ...
            raise UnsafeURL(call.source, f"refusing to fetch a malformed URL ({exc})") from None
        if call.auth is not None:
            token = base64.b64encode(f"{call.auth[0]}:{call.auth[1]}".encode()).decode()
            request.headers["Authorization"] = f"Basic {token}"
        cap = self.config.max_page_bytes if call.guard else None
        for _hop in range(self.config.max_redirects + 1):
            shown = redact_url(str(request.url))
            outgoing = request
            if call.guard:
                checked = await check_public_url(
                    str(request.url), source=call.source, resolver=self.resolver
                )
                outgoing = pinned(client, request, checked[0])
            wait = self._limiter.delay_for(request.url.host)
            if wait > 0:
                await asyncio.sleep(wait)
            self.requests += 1
            log.debug("%s %s", request.method, shown)
            try:
                response = await client.send(outgoing, stream=True)
                try:
                    body = await _read_capped(response, cap)
                finally:
                    await response.aclose()
            except httpx.TimeoutException as exc:
                raise SourceUnreachable(call.source, f"timeout on {shown}") from exc
            except httpx.TransportError as exc:
                message = f"cannot reach {shown}: {type(exc).__name__}: {exc}"
                raise SourceUnreachable(call.source, scrub(message, call.secrets)) from exc
            if response.is_redirect:
                request = _redirect(client, request, response, call.source)
                continue
            return _check(call, response, body, shown)
        raise SourceBadResponse(call.source, f"too many redirects from {redact_url(call.url)}")


def _check(call: _Call, response: httpx.Response, body: bytes, shown: str) -> HttpResponse:
    status = response.status_code
    log.debug("%s -> %d (%d bytes)", shown, status, len(body))
    if 200 <= status < 300:
        content_type = response.headers.get("content-type", "")
        return HttpResponse(status, shown, content_type, body, time.time(), False)
    snippet = scrub(body[:300].decode("utf-8", errors="replace"), call.secrets)
    message = f"{status} from {shown}: {snippet}"
    if status == 429:
        raise SourceRateLimited(call.source, message, retry_after=retry_after_s(response))
    if status in RETRY_STATUS:
        raise SourceUnreachable(call.source, message)
    if status in AUTH_STATUS:
        raise SourceAuthError(call.source, message)
    raise HttpStatusError(call.source, message, status, snippet)


async def _read_capped(response: httpx.Response, cap: int | None) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if cap is not None and size >= cap:
            break  # a page bigger than the cap is cut, not refused
    body = b"".join(chunks)
    return body[:cap] if cap is not None else body


def pinned(client: httpx.AsyncClient, request: httpx.Request, address: str) -> httpx.Request:
    """`request` sent to `address` (the one the guard checked) instead of to its host name:
    the Host header and, for https, the TLS server name (SNI, certificate check) stay
    those of the host, so the site sees an ordinary request."""
    url = request.url
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if url.host == str(ip):
        return request
    headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
    headers["Host"] = url.netloc.decode("ascii")
    extensions = dict(request.extensions)
    if url.scheme == "https":
        extensions["sni_hostname"] = url.host
    return client.build_request(
        request.method, url.copy_with(host=str(ip)), headers=headers, extensions=extensions
    )


def _redirect(
    client: httpx.AsyncClient, request: httpx.Request, response: httpx.Response, source: str
) -> httpx.Request:
    location = response.headers.get("location")
    if not location:
        raise SourceBadResponse(source, f"redirect without Location from {request.url.host}")
    target = request.url.join(location)
    # Credentials go only to the host they were meant for.
    keep = {
        k: v
        for k, v in request.headers.items()
        if target.host == request.url.host or k.lower() not in ("authorization", "cookie")
    }
    keep.pop("content-length", None)
    keep.pop("host", None)
    return client.build_request("GET", target, headers=keep)


def _scrub_bytes(body: bytes, secrets: list[str]) -> bytes:
    for secret in secrets:
        if secret and len(secret) >= 4:
            body = body.replace(secret.encode(), REDACTED.encode())
    return body


def _show(url: str, params: dict[str, Any] | None) -> str:
    shown = redact_url(url)
    return f"{shown} {redact_mapping(params)}" if params else shown


_default: list[HttpClient] = []  # the built-in default, made on first use
_default_lock = threading.Lock()
_override: list[HttpClient] = []


def default_http_client() -> HttpClient:
    """The process-wide client sources use when given none: the one set with
    `set_default_http_client`, else one with default settings and no disk cache (the
    composition root, `veracity.runtime`, passes runs a client with the user's cache)."""
    with _default_lock:
        if _override:
            return _override[0]
        if not _default:
            _default.append(HttpClient(HttpConfig(cache_mode="off")))
        return _default[0]


def set_default_http_client(client: HttpClient | None) -> None:
    """Make `client` the one sources use by default (None: back to the built-in default).

    Use it to set rate limits, timeouts or the cache for a whole run, e.g.
    ``set_default_http_client(HttpClient(HttpConfig(rate_limits={...})))``.
    """
    with _default_lock:
        _override.clear()
        if client is not None:
            _override.append(client)


__all__ = [
    "DEFAULT_RATE_LIMITS",
    "HttpClient",
    "HttpConfig",
    "HttpResponse",
    "HttpStatusError",
    "ReplayMiss",
    "RequestTally",
    "UnsafeURL",
    "default_http_client",
    "set_default_http_client",
    "track_requests",
]
