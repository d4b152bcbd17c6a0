"""Default sources for retrieving methods run without any (zero-config retrieval).

A method states what it searches (`SourceNeed`: an instance name and a kind). When a run
names no sources, `default_sources` fills those needs:

- **online** (the network answers, see `network_available`): keyless live sources —
  ``search`` needs get open-web search (``{type: web, engine: auto}``: the first engine
  with a key set, else DuckDuckGo) and ``encyclopedia`` needs Wikipedia;
- **offline**: the default local corpus, an index named ``default`` (built once with
  ``veracity index build --dataset NAME`` or ``veracity index build ./docs``), answers
  ``search`` needs; an encyclopedia need has no offline stand-in, so the method runs
  without it where it can (the need's ``off`` settings) and says so;
- neither: one `ConfigError` giving the exact commands.

Every choice is returned as a note, for the console and the run's log.
`VERACITY_OFFLINE=1` (read by `veracity.runtime`) skips the probe and chooses the offline
branch.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from veracity.core.errors import ConfigError

DEFAULT_INDEX = "default"  # the local corpus retrieving methods use offline
PROBE_HOSTS = ("duckduckgo.com", "en.wikipedia.org")
PROBE_TIMEOUT_S = 2.0
_PROBE_TTL_S = 60.0


@dataclass(frozen=True)
class SourceNeed:
    """A source a method searches, as it would be named in the run's ``sources:``.

    Attributes:
        name: the instance name the method looks the source up by.
        kind: ``search`` (documents for a query: a web engine or a local index) or
            ``encyclopedia`` (Wikipedia's sense lookup and summaries).
        off: method settings that make the method run without this source, used when
            the source cannot be had (None: the method cannot run without it).
        purpose: what the method uses it for, in a few words (shown in notes).
    """

    name: str
    kind: Literal["search", "encyclopedia"] = "search"
    off: Mapping[str, Any] | None = None
    purpose: str = ""


@dataclass
class DefaultSources:
    """What `default_sources` chose: the sources, method settings it turned off, notes."""

    sources: dict[str, dict[str, Any]] = field(default_factory=dict)
    method_config: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _reachable(host: str) -> bool:
    try:
        with socket.create_connection((host, 443), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


def probe_network(hosts: Sequence[str] = PROBE_HOSTS) -> bool:
    """True when every one of `hosts` accepts a TCP connection on port 443."""
    with ThreadPoolExecutor(len(hosts)) as pool:
        return all(pool.map(_reachable, hosts))


_probe: Callable[[], bool] = probe_network
_last: tuple[float, bool] | None = None


def set_probe(probe: Callable[[], bool] | None) -> None:
    """Replace the network probe (tests); None restores the real one and forgets results."""
    global _probe, _last
    _probe = probe or probe_network
    _last = None


def network_available(*, offline: bool = False) -> bool:
    """Whether live sources can be reached (cached for a minute; `offline`, which
    `veracity.runtime` sets from ``VERACITY_OFFLINE=1``: never, without probing)."""
    global _last
    if offline:
        return False
    now = time.monotonic()
    if _last is None or now - _last[0] > _PROBE_TTL_S:
        _last = (now, bool(_probe()))
    return _last[1]


def default_index_exists(indexes_dir: Path) -> bool:
    """Whether the default local corpus (index ``default``) has been built there."""
    return (Path(indexes_dir) / DEFAULT_INDEX / "manifest.json").is_file()


def _offline_help(method: str, name: str) -> str:
    return (
        f"{method} retrieves evidence, no source was given and the network does not answer "
        "(or VERACITY_OFFLINE is set). Build the default local corpus once, from your own "
        "documents or a benchmark's corpus:\n"
        "  veracity index build ./my-docs\n"
        "  veracity index build --dataset scifact\n"
        f"and it is used automatically; or name a source: --source {name}=local:INDEX "
        "(see `veracity sources`)"
    )


def default_sources(
    method: str,
    needs: Sequence[SourceNeed],
    *,
    online: bool,
    indexes_dir: Path,
) -> DefaultSources:
    """Sources for `needs` when a run names none (see the module docstring).

    Args:
        method: the method's name, for messages.
        needs: what the method searches.
        online: whether the network answers (`veracity.runtime` probes it with
            `network_available`).
        indexes_dir: where named indexes live (the home's ``indexes`` folder).

    Raises:
        ConfigError: offline without the default local corpus, or a need that has no
            offline stand-in and no way to run without it.
    """
    out = DefaultSources()
    if not needs:
        return out
    if online:
        for need in needs:
            live = {"type": "web", "engine": "auto"} if need.kind == "search" else None
            out.sources[need.name] = live or {"type": "wikipedia"}
        shown = ", ".join(f"{n}={out.sources[n]['type']}" for n in out.sources)
        out.notes.append(f"no sources given: {method} searches live sources ({shown})")
        return out
    has_index = default_index_exists(indexes_dir)
    for need in needs:
        if need.kind == "search" and has_index:
            out.sources[need.name] = {"type": "local", "index": DEFAULT_INDEX}
        elif need.off is not None:
            out.method_config.update(need.off)
            what = need.purpose or need.name
            out.notes.append(f"offline: {method} runs without {what} (no offline stand-in)")
        elif need.kind == "search":
            raise ConfigError(_offline_help(method, need.name))
        else:
            raise ConfigError(
                f"{method} needs {need.purpose or need.name}, which cannot be reached offline; "
                f"give a source with --source {need.name}=TYPE"
            )
    if out.sources:
        out.notes.append(
            f"no sources given and offline: {method} searches the default local corpus "
            f"(index {DEFAULT_INDEX!r}) as {', '.join(out.sources)}"
        )
    return out


__all__ = [
    "DEFAULT_INDEX",
    "DefaultSources",
    "SourceNeed",
    "default_index_exists",
    "default_sources",
    "network_available",
    "probe_network",
    "set_probe",
]
