"""What every network front end (``veracity serve``, ``veracity mcp --http``) checks before
it answers anyone: the addresses it may listen on without a token, and the ``Host`` and
``Origin`` headers it answers to.

- `check_bind`: a non-loopback address needs a token, unless the operator passed the
  explicit opt-out (then the caller prints `public_warning`).
- `HostGuard`: ASGI middleware against DNS rebinding and cross-site calls. A web page
  that rebinds its own name to 127.0.0.1 still sends ``Host: its-name``, so a name must
  be one the server was told about (421 otherwise); a browser call from another site
  carries that site's ``Origin`` (403).

Plain ASGI, no web framework imported: the REST server and the MCP server share it.

Why not Starlette's ``TrustedHostMiddleware``: it answers a refused ``Host`` with a plain
400 "Invalid host header", where a client is told 421 (misdirected) with a problem-details
body that names the flag to allow the name; it matches names against a fixed list, so an
IP address, ``localhost`` and the bind address would each have to be listed (here every
address passes: a rebinding page never reaches the server by address); and it has no
``Origin`` check (403 for another site's page) nor a policy-1008 close for a WebSocket.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from veracity.core.errors import ConfigError

LOOPBACK_NAMES = frozenset({"localhost"})
WILDCARD_BINDS = frozenset({"0.0.0.0", "::", ""})
ANY_HOST = "*"


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    """Whether `host` (a bind address or a host name) is this machine's loopback."""
    name = host.strip().lower().rstrip(".")
    if name in LOOPBACK_NAMES:
        return True
    ip = _ip(name)
    return ip is not None and ip.is_loopback


def check_bind(
    host: str, *, has_token: bool, allow_public: bool, how_to_set: str, opt_out: str
) -> bool:
    """Refuse to listen on a non-loopback address without a token.

    Args:
        host: the address to bind.
        has_token: whether a (non-blank) token is configured.
        allow_public: the operator's explicit opt-out.
        how_to_set: how this front end's token is set (for the message).
        opt_out: the opt-out flag's name (for the message).

    Returns:
        True when the bind is public and unauthenticated by the operator's choice (the
        caller must print `public_warning`); False when nothing needs saying.

    Raises:
        ConfigError: a public address, no token and no opt-out.
    """
    if is_loopback(host) or has_token:
        return False
    if allow_public:
        return True
    raise ConfigError(
        f"refusing to serve on {host or 'every address'} without a token: anyone who can "
        f"reach it could use this server. {how_to_set}, or bind 127.0.0.1; to serve "
        f"openly anyway, pass {opt_out}"
    )


def public_warning(host: str, port: int) -> str:
    """The warning printed at start-up of a public server without a token."""
    return (
        f"WARNING: serving on {host}:{port} WITHOUT A TOKEN: anyone who can reach this "
        "address can use this server and everything it is allowed to do"
    )


def split_host(value: str) -> tuple[str, int | None] | None:
    """``name[:port]`` → (lower-case name, port); None when it is not a valid authority."""
    value = value.strip().lower()
    if not value or any(c in value for c in "/@?#\\ \t"):
        return None
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or _ip(name) is None or (rest and not rest.startswith(":")):
            return None
        port = rest[1:] or None
    else:
        name, sep, port = value.rpartition(":")
        if not sep:
            name, port = value, None
        elif ":" in name:  # a bare IPv6 address is not a Host header
            return None
    if port is not None and not (port.isascii() and port.isdigit() and int(port) <= 65535):
        return None
    name = name.rstrip(".")
    return (name, int(port) if port is not None else None) if name else None


@dataclass(frozen=True)
class HostPolicy:
    """Which ``Host`` and ``Origin`` values a server answers to.

    Attributes:
        allowed_hosts: names the operator allows (``name`` for any port, ``name:port``
            for one; ``*`` turns the Host check off).
        allowed_origins: origins allowed besides the server's own (e.g. CORS origins).
        bind_host: the address the server listens on (a name given here is allowed).
    """

    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()
    bind_host: str = "127.0.0.1"

    @classmethod
    def build(
        cls,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
        bind_host: str = "127.0.0.1",
    ) -> HostPolicy:
        """A policy with the entries cleaned (blank ones dropped, invalid ones refused).

        Raises:
            ConfigError: an entry that is not ``*`` or ``name[:port]``.
        """
        hosts = tuple(h.strip().lower() for h in allowed_hosts if h.strip())
        for entry in hosts:
            if entry != ANY_HOST and split_host(entry) is None:
                raise ConfigError(
                    f"allowed host {entry!r} is not a host name (name or name:port, or * for any)"
                )
        origins = tuple(o.strip().lower().rstrip("/") for o in allowed_origins if o.strip())
        return cls(hosts, origins, bind_host.strip().lower())

    def _named(self, name: str, port: int | None) -> bool:
        for entry in self.allowed_hosts:
            allowed = split_host(entry) if entry != ANY_HOST else None
            if allowed and allowed[0] == name and allowed[1] in (None, port):
                return True
        return False

    def host_ok(self, header: str | None) -> bool:
        """Whether the request's ``Host`` names this server.

        IP addresses always pass (a rebinding page reaches the server under its own DNS
        name, never under an address), and so do ``localhost``, the bind address and the
        operator's names.
        """
        if ANY_HOST in self.allowed_hosts:
            return True
        parts = split_host(header or "")
        if parts is None:
            return False
        name, port = parts
        if name in LOOPBACK_NAMES or _ip(name) is not None:
            return True
        return name == self.bind_host.strip("[]") or self._named(name, port)

    def origin_ok(self, origin: str | None, host: str | None) -> bool:
        """Whether a request with this ``Origin`` (None: not a cross-site browser call)
        may go ahead: the server's own origin, a loopback page, a named host or an
        allowed origin; ``null`` and other sites may not."""
        if origin is None:
            return True
        origin = origin.strip().lower().rstrip("/")
        if origin in self.allowed_origins:
            return True
        url = urlsplit(origin)
        if url.scheme not in ("http", "https") or url.path or url.query or url.fragment:
            return False
        parts = split_host(url.netloc)
        if parts is None:
            return False
        name, port = parts
        same = split_host(host or "")
        if same is not None and same[0] == name:
            default = 443 if url.scheme == "https" else 80
            if (port or default) == (same[1] or default):
                return True
        return is_loopback(name) or self._named(name, port)


def _problem(status: int, title: str, detail: str) -> tuple[dict[str, Any], bytes]:
    body = {"type": "about:blank", "title": title, "status": status, "detail": detail}
    return (
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/problem+json")],
        },
        json.dumps(body).encode(),
    )


class HostGuard:
    """ASGI middleware: 421 for a ``Host`` the policy refuses, 403 for an ``Origin``.

    Args:
        app: the application behind it.
        policy: what to allow.
        hint: how the operator allows another name (for the 421 message).
    """

    def __init__(self, app: Any, policy: HostPolicy, hint: str = "--allow-host NAME"):
        self.app = app
        self.policy = policy
        self.hint = hint

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        host = headers.get(b"host", b"").decode("latin-1")
        origin_raw = headers.get(b"origin")
        origin = origin_raw.decode("latin-1") if origin_raw is not None else None
        refusal = self._refusal(host, origin)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        start, body = refusal
        await send(start)
        await send({"type": "http.response.body", "body": body})

    def _refusal(self, host: str, origin: str | None) -> tuple[dict[str, Any], bytes] | None:
        if not self.policy.host_ok(host):
            detail = (
                f"this server does not answer to Host {host[:100] or '(none)'!r}; "
                f"its operator can allow a name with {self.hint}"
            )
            return _problem(421, "misdirected request", detail)
        if origin is not None and not self.policy.origin_ok(origin, host):
            detail = (
                f"calls from the web origin {origin[:100]!r} are not allowed; its operator "
                f"can allow that site's host with {self.hint}"
            )
            return _problem(403, "forbidden", detail)
        return None
