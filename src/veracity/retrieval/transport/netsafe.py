"""Network safety helpers: secret redaction and the public-address guard.

Redaction: API keys travel in query parameters (``key=``, ``api_key=``), headers
(``X-Subscription-Token``, ``Authorization``, ``X-API-KEY``) or JSON bodies (``api_key``).
`redact_url`, `redact_mapping` and `scrub` remove them before anything is logged, traced,
hashed into a cache key or stored.

Guard: `check_public_url` refuses URLs that are not http(s) or whose host resolves to any
non-public address (loopback, private, link-local, carrier-grade NAT, multicast,
reserved, unspecified). Every resolved address is checked, so a name with one public and
one private address is refused. IPv6 addresses that lead to an IPv4 host (mapped,
translated, NAT64, 6to4, Teredo, ISATAP, IPv4-compatible) are judged by that host. The
check runs before each request and before each redirect hop, and returns the addresses
it checked: the HTTP client connects to one of them (`pinned`), so a DNS answer that
changes between the check and the connection (DNS rebinding) cannot reach another host.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

# one list of secret query parameters, one log filter, for every layer (veracity.core.redaction)
from veracity.core.redaction import (  # noqa: F401  (re-exported)
    REDACTED,
    SECRET_PARAMS,
    RedactingFilter,
    strip_credentials,
)
from veracity.retrieval.base import SourceError, SourceUnreachable

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-subscription-token",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "cookie",
        "ocp-apim-subscription-key",
    }
)

Resolver = Callable[[str, int], Awaitable[list[str]]]


class UnsafeURL(SourceError):
    """A URL that the guard refuses to fetch (bad scheme or non-public address)."""


def is_secret_param(name: str) -> bool:
    return name.lower() in SECRET_PARAMS


def is_secret_header(name: str) -> bool:
    return name.lower() in SECRET_HEADERS


def redact_mapping(values: Mapping[str, Any] | None, *, headers: bool = False) -> dict[str, Any]:
    """A copy of `values` with secret entries replaced by a marker (recursing into dicts)."""
    if not values:
        return {}
    secret = is_secret_header if headers else is_secret_param
    out: dict[str, Any] = {}
    for name, value in values.items():
        if secret(str(name)):
            out[name] = REDACTED
        elif isinstance(value, Mapping):
            out[name] = redact_mapping(value)
        else:
            out[name] = value
    return out


def strip_secrets(values: Mapping[str, Any] | None) -> dict[str, Any]:
    """A copy of `values` without secret entries at all (for cache keys)."""
    return {k: v for k, v in (values or {}).items() if not is_secret_param(str(k))}


def redact_url(url: str) -> str:
    """`url` with secret query parameters and any user:password part redacted.

    A URL too malformed to parse is redacted by pattern instead (never an error).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return strip_credentials(url)
    query = urlencode(
        [
            (k, REDACTED if is_secret_param(k) else v)
            for k, v in parse_qsl(parts.query, keep_blank_values=True)
        ],
        safe="[]",
    )
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every occurrence of each secret value replaced by a marker."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def secret_values(
    params: Mapping[str, Any] | None,
    headers: Mapping[str, Any] | None,
    body: Mapping[str, Any] | None = None,
) -> list[str]:
    """The secret values carried by a request (to scrub them from messages)."""
    found = [str(v) for k, v in (params or {}).items() if is_secret_param(str(k)) and v]
    found += [str(v) for k, v in (body or {}).items() if is_secret_param(str(k)) and v]
    for k, v in (headers or {}).items():
        if is_secret_header(str(k)) and v:
            value = str(v)
            found.append(value)
            if " " in value:  # "Bearer abc" → also "abc"
                found.append(value.split(" ", 1)[1])
    return found


# --------------------------------------------------------------------------- guard


_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # RFC 6052 well-known prefix
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # RFC 8215, never global
_V4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated IPv4-compatible addresses
_V4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT, RFC 2765
_IETF_V4 = ipaddress.ip_network("192.0.0.0/24")  # protocol assignments (RFC 6890), no web hosts


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address] | None:
    """The IPv4 addresses an IPv6 address carries (mapped, translated, NAT64, 6to4,
    Teredo, ISATAP, IPv4-compatible), [] when it carries none, None when it is in a
    range whose embedding we cannot read (local-use NAT64: refused)."""
    if ip in _NAT64_LOCAL:
        return None
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    found: list[ipaddress.IPv4Address] = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip in _NAT64 or ip in _V4_TRANSLATED or (ip in _V4_COMPATIBLE and int(ip) > 1):
        found.append(low)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if (int(ip) >> 32) & 0xFDFFFFFF == 0x00005EFE:  # ISATAP interface id ::0:5efe:a.b.c.d
        found.append(low)
    return found


def _is_public(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = embedded_ipv4(ip)
        if inner is None:
            return False
        if inner:  # an address that leads to an IPv4 host is as public as that host
            return all(_is_public(str(a)) for a in inner)
    if isinstance(ip, ipaddress.IPv4Address) and ip in _IETF_V4:
        return False
    return ip.is_global and not ip.is_multicast


async def system_resolver(host: str, port: int) -> list[str]:
    """Every address `host` resolves to, through the system resolver."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return sorted({info[4][0] for info in infos})


async def check_public_url(
    url: str, *, source: str = "http", resolver: Resolver | None = None
) -> list[str]:
    """Refuse `url` unless it is http(s) and every address of its host is public.

    Returns:
        The checked addresses, IPv4 first: connect to one of these (never resolve the
        name again), so a DNS answer that changes after the check cannot redirect the
        connection (DNS rebinding).

    Raises:
        UnsafeURL: a URL that cannot be parsed, wrong scheme, no host, or a non-public
            address.
        SourceUnreachable: the host name does not resolve.
    """
    try:
        parts = urlsplit(url)
        shown = redact_url(url)
        host = parts.hostname
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as exc:  # unbalanced brackets, a port out of range, ...
        raise UnsafeURL(source, f"refusing to fetch a malformed URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise UnsafeURL(source, f"refusing to fetch {shown}: only http and https are allowed")
    if not host:
        raise UnsafeURL(source, f"refusing to fetch {shown}: no host")
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            addresses = await (resolver or system_resolver)(host, port)
        except (OSError, UnicodeError) as exc:
            raise SourceUnreachable(source, f"cannot resolve {host}: {exc}") from exc
    if not addresses:
        raise SourceUnreachable(source, f"{host} resolves to no address")
    bad = [a for a in addresses if not _is_public(a)]
    if bad:
        raise UnsafeURL(
            source, f"refusing to fetch {shown}: {host} resolves to non-public {', '.join(bad)}"
        )
    return sorted(addresses, key=lambda a: (":" in a, a))
