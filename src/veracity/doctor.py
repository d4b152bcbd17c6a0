"""`veracity doctor`: what the environment lacks, and what to do about it.

Each check returns a `Finding` (ok, warn, fail or skipped) with a one-line detail and,
when something is wrong, the fix. Checks: Python and veracity versions, the model the
run config uses (the embedded GGUF file present, or the endpoint reachable with its key
accepted), the home folder and caches writable (a real SQLite write), free disk space,
the benchmark data directory, optional extras, and every configured source (its key set,
its service reachable). Network checks are skipped with ``network=False``.

Evidence sources are probed by what they do: every usable web engine (the ones default
sources would pick from) and every configured source that lives on a service runs one
tiny real search under a short time limit, and is reported ok only when the search
answers; the default local index is reported with its size, or with how to build it.
Default web engines are not probed when ``VERACITY_OFFLINE`` is set (runs then never
use them).
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import platform
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import BaseModel

from veracity.core.config import ConfigError, LLMConfig, RunConfig
from veracity.core.errors import SourceError
from veracity.core.redaction import join_path, split_credentials, strip_credentials
from veracity.core.storage import check_store, fault, sqlite_writable
from veracity.llm import models as catalog
from veracity.retrieval.base import Query
from veracity.retrieval.defaults import DEFAULT_INDEX
from veracity.retrieval.transport.http import HttpClient
from veracity.retrieval.transport.parts import HttpConfig
from veracity.runtime import layered_config
from veracity.runtime.environment import data_dir, default_data_dir, environment
from veracity.runtime.home import home_paths, offline

Status = Literal["ok", "warn", "fail", "skipped"]
MIN_FREE_BYTES = 200 * 1024**2  # below this a run cannot keep its caches
LOW_FREE_BYTES = 2 * 1024**3  # below this, warn
PROBE_TIMEOUT_S = 5.0
SEARCH_TIMEOUT_S = 8.0  # a test search of one source
PROBE_QUERY = "Wikipedia"  # a query every engine answers


class Finding(BaseModel):
    """One check's result."""

    check: str
    status: Status
    detail: str
    fix: str = ""
    """What to do: parts separated by "; ", a part that is a whole command (it starts with
    ``pip``, ``veracity``, ``export``) or a command in backticks inside a sentence;
    `veracity doctor` prints commands whole, never broken across lines."""


Probe = Callable[[str, dict[str, str]], int]
"""GET a URL with headers; the HTTP status, or an OSError/httpx error when unreachable."""


def http_probe(url: str, headers: dict[str, str]) -> int:
    user_pass = split_credentials(url)
    auth = user_pass[1] or httpx.USE_CLIENT_DEFAULT
    with httpx.Client(timeout=PROBE_TIMEOUT_S, follow_redirects=True) as client:
        return client.get(user_pass[0], headers=headers, auth=auth).status_code


SearchProbe = Callable[[str, dict[str, Any]], int]
"""Build a source from (name, options) and run one tiny search; the number of results.
Raises the source's error (`SourceError`, `ConfigError`) or `TimeoutError`."""


def search_probe(name: str, options: dict[str, Any]) -> int:
    """One live search of PROBE_QUERY, uncached, within SEARCH_TIMEOUT_S."""
    from veracity.retrieval.registry_setup import build_source

    limit = SEARCH_TIMEOUT_S
    http = HttpClient(
        HttpConfig(cache_mode="off", timeout_s=limit, connect_timeout_s=limit / 2, max_attempts=1)
    )
    source = build_source(name, options, http=http, managed=False)

    async def once() -> int:
        try:
            found = await asyncio.wait_for(source.search(Query(text=PROBE_QUERY, top_k=1)), limit)
            return len(found)
        finally:
            await http.aclose()

    return asyncio.run(once())


def diagnose(
    config: RunConfig | None = None,
    *,
    network: bool = True,
    probe: Probe = http_probe,
    search: SearchProbe = search_probe,
) -> list[Finding]:
    """Run every check for `config` (default: the environment's settings).

    Args:
        network: probe endpoints and sources over the network.
        probe: GETs an endpoint (the model's).
        search: runs one test search of a source (web engines, configured sources).
    """
    if config is None:
        config = layered_config()  # the environment's model over the defaults
    cfg = config
    findings = [_python(), *_home(), _disk(), _data(cfg), *_model(cfg.llm, network, probe)]
    findings += _sources(cfg, network, search)
    findings += _extras()
    return findings


def _python() -> Finding:
    from importlib.metadata import version

    ok = sys.version_info >= (3, 10)
    return Finding(
        check="python",
        status="ok" if ok else "fail",
        detail=f"Python {platform.python_version()}, veracity {version('veracity')}",
        fix="" if ok else "use Python 3.10 or newer",
    )


def _home() -> list[Finding]:
    home = environment().home
    out = []
    for name, folder in (("home", home), ("caches", home / "cache")):
        problem = sqlite_writable(folder)
        out.append(
            Finding(
                check=name,
                status="fail" if problem else "ok",
                detail=f"{folder} {'is not writable: ' + problem if problem else 'is writable'}",
                fix="set VERACITY_HOME to a writable folder on a local disk" if problem else "",
            )
        )
    return out + [_store(what, path) for what, path in _stores(home) if path.exists()]


def _stores(home: Path) -> list[tuple[str, Path]]:
    """veracity's own SQLite stores at their default places."""
    server = os.environ.get("VERACITY_SERVER_DATA_DIR") or home / "server"
    return [
        ("LLM cache", home / "cache" / "llm.sqlite"),
        ("HTTP cache", home / "cache" / "http.sqlite"),
        ("evidence memory", home / "memory" / "evidence.sqlite"),
        ("job database", Path(server) / "jobs.sqlite"),
    ]


def _store(what: str, path: Path) -> Finding:
    """One store opened read-only, its integrity checked, and whether it can be written."""
    found = check_store(path, what)
    if found is None and not os.access(path, os.W_OK):
        found = fault("read-only", path, what)
    if found is None:
        size = path.stat().st_size / 1024**2
        return Finding(check=what, status="ok", detail=f"{path} is sound ({size:.1f} MB)")
    detail = str(found).removesuffix(f". {found.fix}")
    fix = found.fix
    if found.kind == "corrupt" and what.endswith("cache"):
        fix = "nothing to do: veracity moves a damaged cache aside and starts a new one"
    return Finding(check=what, status="fail", detail=detail, fix=fix)


def _disk() -> Finding:
    home = environment().home
    where = home if home.exists() else Path(tempfile.gettempdir())
    free = shutil.disk_usage(where).free
    shown = f"{free / 1024**3:.1f} GB free at {where}"
    if free < MIN_FREE_BYTES:
        return Finding(check="disk", status="fail", detail=shown, fix="free some disk space")
    if free < LOW_FREE_BYTES:
        return Finding(check="disk", status="warn", detail=shown,
                       fix="runs keep caches and traces; keep a few GB free")  # fmt: skip
    return Finding(check="disk", status="ok", detail=shown)


def _data(cfg: RunConfig) -> Finding:
    """The data directory and which benchmark sets are in it."""
    from veracity.datasets.catalogue import entries

    get = (
        "`veracity datasets get NAME` (or `--all`) downloads benchmarks; "
        "`veracity datasets` lists them"
    )
    try:
        found = data_dir(cfg.data_dir)
    except ConfigError:
        where = cfg.data_dir or default_data_dir()
        return Finding(check="benchmark data", status="warn",
                       detail=f"no data directory at {where} yet", fix=get)  # fmt: skip
    sets = entries()
    present = [e.folder for e in sets if (found / e.folder).is_dir()]
    missing = [e.folder for e in sets if e.kind == "download" and e.folder not in present]
    absent = [e.folder for e in sets if e.folder not in present]
    detail = f"{found}: {len(present)} of {len(sets)} sets present"
    if present:  # name the shorter list
        few = ("present", present) if len(present) <= len(absent) else ("absent", absent)
        detail += f"; {few[0]}: {', '.join(few[1])}" if few[1] else ""
    status = "ok" if present else "warn"
    return Finding(check="benchmark data", status=status, detail=detail, fix=get if missing else "")


def _model(llm: LLMConfig, network: bool, probe: Probe) -> list[Finding]:
    if llm.backend == "embedded":
        try:
            path, spec = catalog.resolve(llm.model, environment().models_dir)
        except Exception as exc:
            return [Finding(check="model", status="fail", detail=str(exc),
                            fix="give a catalog name or a GGUF file path")]  # fmt: skip
        if path.is_file():
            return [Finding(check="model", status="ok", detail=f"{llm.model} at {path}")]
        fix = f"veracity models pull {llm.model}" if spec else "check the GGUF path"
        pulls = llm.auto_pull is not False  # None: the embedded backend's default, which pulls
        status: Status = "warn" if spec and pulls else "fail"
        return [Finding(check="model", status=status, detail=f"{llm.model} is not downloaded",
                        fix=fix)]  # fmt: skip
    return _endpoint(llm, network, probe)


def _endpoint(llm: LLMConfig, network: bool, probe: Probe) -> list[Finding]:
    from veracity.llm.openai_compat import PROVIDERS

    preset = PROVIDERS.get(llm.provider or "", {})
    base = llm.base_url or preset.get("base_url")
    if not base:
        return [Finding(check="model", status="fail", detail="no endpoint configured",
                        fix="give --base-url or --provider")]  # fmt: skip
    key_env = llm.api_key_env or preset.get("api_key_env") or "OPENAI_API_KEY"
    key = os.environ.get(key_env)
    shown = strip_credentials(base)
    fix = "" if key else f"export {key_env}=... (a local server may need none)"
    out = [Finding(check="API key", status="ok" if key else "warn",
                   detail=f"{key_env} is {'set' if key else 'not set'}", fix=fix)]  # fmt: skip
    if not network:
        return [*out, Finding(check="model", status="skipped", detail=f"{llm.model} at {shown}")]
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    try:
        code = probe(join_path(base, "models"), headers)
    except (httpx.HTTPError, OSError) as exc:
        return [*out, Finding(check="model", status="fail",
                              detail=f"{shown} unreachable: {type(exc).__name__}",
                              fix="start the server or check --base-url")]  # fmt: skip
    if code in (401, 403):
        return [*out, Finding(check="model", status="fail",
                              detail=f"{shown} rejected the credentials (HTTP {code})",
                              fix=f"check {key_env}")]  # fmt: skip
    return [*out, Finding(check="model", status="ok",
                          detail=f"{llm.model} at {shown} answers (HTTP {code})")]  # fmt: skip


def _sources(cfg: RunConfig, network: bool, search: SearchProbe) -> list[Finding]:
    from veracity.retrieval.registry_setup import WEB_ENGINES, available_web_engines

    ready = available_web_engines()
    missing = [f"{n} ({v})" for n, (_, v) in WEB_ENGINES.items() if v and n not in ready]
    live = network and not offline()  # VERACITY_OFFLINE: defaults never go live
    engines = [_web_engine(engine, live, network, search) for engine in ready]
    answered = [f.check.removeprefix("web search ") for f in engines if f.status == "ok"]
    if not live:
        status: Status = "skipped"
        detail = f"usable: {', '.join(ready)} (not probed)"
    elif answered:
        status, detail = "ok", f"answered a test search: {', '.join(answered)}"
    else:
        status, detail = "fail", f"none answered a test search (tried {', '.join(ready)})"
    fix = f"set keys to enable: {', '.join(missing)}" if missing else ""
    out = [Finding(check="web engines", status=status, detail=detail, fix=fix), *engines]
    out.append(_default_index())
    for name, options in cfg.sources.items():
        out.append(_source(name, options, network, search))
    return out


def _web_engine(engine: str, live: bool, network: bool, search: SearchProbe) -> Finding:
    """One test search of a usable web engine (what default sources would search)."""
    check = f"web search {engine}"
    if not live:
        why = "--offline" if not network else "VERACITY_OFFLINE is set"
        return Finding(check=check, status="skipped", detail=f"not probed ({why})")
    options: dict[str, Any] = {"type": engine}
    if engine == "duckduckgo":
        options["timeout_s"] = int(SEARCH_TIMEOUT_S)
    fix = (
        "check the network; set a key for another engine (`veracity sources`), or work "
        "offline on the default local index (`veracity index build ./my-docs`)"
    )
    return _searched(check, engine, options, search, fix)


def _searched(
    check: str, name: str, options: dict[str, Any], search: SearchProbe, fix: str
) -> Finding:
    """The finding of one test search: ok with the result count, or failed with the error."""

    try:
        n = search(name, options)
    except (SourceError, ConfigError, TimeoutError, asyncio.TimeoutError, OSError) as exc:
        error = f"{type(exc).__name__}: {str(exc) or f'no answer in {SEARCH_TIMEOUT_S:g} s'}"
        error = error if len(error) <= 300 else error[:300] + "…"
        return Finding(check=check, status="fail", detail=f"test search failed: {error}", fix=fix)
    results = f"{n} result{'s' if n != 1 else ''}"
    return Finding(check=check, status="ok", detail=f"a test search answered ({results})")


def _default_index() -> Finding:
    """The default local corpus: what retrieving methods search offline with no source."""
    from veracity.retrieval.local.index import read_manifest

    check, folder = "default index", environment().indexes_dir / DEFAULT_INDEX
    build = "veracity index build ./my-docs; veracity index build --dataset scifact"
    if not (folder / "manifest.json").is_file():
        return Finding(check=check, status="warn", fix=build,
                       detail=f"not built ({folder}): offline, a retrieving method given no "
                       "source has nothing to search")  # fmt: skip
    try:
        m = read_manifest(folder)
    except SourceError as exc:
        return Finding(check=check, status="fail", detail=str(exc), fix=f"rebuild it; {build}")
    return Finding(check=check, status="ok",
                   detail=f"{m.documents:,} documents ({m.chunks:,} passages, "
                   f"{m.default_mode}) at {folder}")  # fmt: skip


def _source(name: str, options: dict, network: bool, search: SearchProbe) -> Finding:
    from veracity.retrieval.registry_setup import build_sources

    check = f"source {name}"
    try:
        built = build_sources({name: options}, indexes_dir=home_paths().indexes, managed=False)[
            name
        ]
    except ConfigError as exc:
        return Finding(check=check, status="fail", detail=str(exc), fix="see the message")
    url = _service_url(built)
    if url is None:
        return Finding(check=check, status="ok", detail=f"{type(built).__name__} (local)")
    shown = strip_credentials(url)
    if not network:
        return Finding(check=check, status="skipped", detail=shown)
    fix = "check the network, the service URL or the key"
    found = _searched(check, name, dict(options or {}), search, fix)
    return found.model_copy(update={"detail": f"{shown}: {found.detail}"})


_SERVICE_ROOTS = {
    "WikipediaSource": "https://en.wikipedia.org/w/api.php",
    "DuckDuckGoSource": "https://duckduckgo.com/",
    "RedditSource": "https://www.reddit.com/",
}


def _service_url(source: object) -> str | None:
    """The URL a source talks to (None for local sources)."""
    for attr in ("endpoint", "base_url", "base", "url"):
        value = getattr(source, attr, None)
        if isinstance(value, str) and value.startswith(("http://", "https://")):
            return value
    inner = getattr(source, "web", None) or getattr(source, "inner", None)
    if inner is not None and inner is not source:
        return _service_url(inner)
    return _SERVICE_ROOTS.get(type(source).__name__)


# the package each optional extra brings, and NLP packages veracity itself depends on (None);
# torch (the torch extra) is for ToE's networks and training only: checks run without it
_PACKAGES: dict[str, str | None] = {
    "fastapi": "server",
    "uvicorn": "server",
    "ray": "ray",
    "torch": "torch",
    "sentence_transformers": "torch",
    "spacy": None,
}


def _extras() -> list[Finding]:
    from veracity.core.extras import install_command

    absent = {m: x for m, x in _PACKAGES.items() if importlib.util.find_spec(m) is None}
    if not absent:
        return [Finding(check="optional packages", status="ok", detail="all present")]
    names = ", ".join(f"{m} ({f'extra {x}' if x else 'a dependency'})" for m, x in absent.items())
    fixes = dict.fromkeys(install_command(x) for x in absent.values())  # each command once
    return [Finding(check="optional packages", status="warn", detail=f"missing: {names}",
                    fix="; ".join(fixes))]  # fmt: skip
