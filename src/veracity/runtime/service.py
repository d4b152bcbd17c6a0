"""The service every front end checks through: `Veracity`.

The Python API, ``veracity check``, ``veracity batch`` (local and Ray workers), the REST
server and the MCP server each hold one `Veracity` over their resolved run config and
do nothing of the following themselves:

- **lifetimes**: the model is built once per model name and shared by every check; a
  run is built once per resolved spec and kept (`RunCache`: the last `RUNS_KEPT` used),
  so a server or a batch loads a local index or a method's resources once, not per
  check; the sources ``search`` uses are built once; `close` / `aclose` release what the
  service built (never a model it was given), runs included;
- **validation**, once per check and before any run is built (`plan`; `plan_run` for a
  batch or an evaluation, whose inputs come later): the input
  (`veracity.runtime.inputs.read_input`), the method, the label space, the sources and
  the model a request picks, the request's method options
  (`veracity.methods.options.request_config`) and whether the method takes this kind of
  input. A refusal is a `CheckRefused`: a `ConfigError` with a short ``title`` (what the
  REST server answers as the problem's title) and a message saying what to change;
- **telling errors**: `error_text` (the one function, `veracity.core.errors.problem_text`);
- **listing** methods, label spaces and sources (`veracity.runtime.listing`).

A front end then only maps: its arguments into `plan` / `check`, and `CheckRefused`
into its own answer (exit 2, HTTP 422, an MCP tool error).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError, InputError, problem_text
from veracity.core.types import Document, Verdict
from veracity.documents import reading
from veracity.llm.base import LLM
from veracity.llm.client import ManagedLLM, SharedLimit, ensure_managed
from veracity.llm.models import Progress
from veracity.runtime import (
    CachePaths,
    Run,
    build_llm,
    build_run,
    documents,
    layered_config,
    managed_sources,
    resolve_spec,
)
from veracity.runtime.home import home_paths
from veracity.runtime.inputs import Input, read_input
from veracity.runtime.listing import MethodEntry, SourceType, list_methods, list_source_types
from veracity.runtime.rules import (
    KIND_REFUSED,
    MODEL_NOT_ALLOWED,
    NOT_BUILT,
    OPTION_REFUSED,
    UNKNOWN_SOURCE,
    CheckRefused,
    error_text,
    method_class,
    request_options,
    require_kind,
    require_labels,
)

if TYPE_CHECKING:
    from veracity.llm.options import LLMSpec
    from veracity.runtime.spec import RunSpec

RUNS_KEPT = 8  # built runs a service keeps: a server's few combinations, each maybe an index


def spec_key(spec: RunSpec) -> str:
    """A stable digest of a resolved spec (its JSON, keys sorted): equal specs, equal keys."""
    text = json.dumps(spec.model_dump(mode="json"), sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class RunCache:
    """Built runs by key, the `size` most recently used kept.

    A run is built once per key, also when several threads ask for it at once (the
    others wait for that build, not for builds of other keys). A run pushed out, or let
    go by `clear`, is retired: it closes once the checks under way on it end
    (`veracity.runtime.Run.retire`), so a check never loses its run mid-way.
    """

    def __init__(self, size: int = RUNS_KEPT):
        self.size = size
        self._runs: OrderedDict[Hashable, Run] = OrderedDict()
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.Lock] = {}

    def __len__(self) -> int:
        return len(self._runs)

    def _kept(self, key: Hashable) -> Run | None:
        run = self._runs.get(key)
        if run is not None:
            self._runs.move_to_end(key)
        return run

    def get(self, key: Hashable, build: Callable[[], Run]) -> Run:
        """The run kept under `key`, else `build()` kept under it."""
        with self._lock:
            run = self._kept(key)
            if run is not None:
                return run
            gate = self._building.setdefault(key, threading.Lock())
        with gate:
            with self._lock:
                run = self._kept(key)
            if run is not None:
                return run
            try:
                run = build()
            finally:
                with self._lock:
                    self._building.pop(key, None)
            with self._lock:
                self._runs[key] = run
                evicted = []
                while len(self._runs) > self.size:
                    evicted.append(self._runs.popitem(last=False)[1])
        for old in evicted:
            old.retire()
        return run

    def clear(self) -> list[Run]:
        """Let every run go (each retired); returns them."""
        with self._lock:
            runs = list(self._runs.values())
            self._runs.clear()
        for run in runs:
            run.retire()
        return runs


@dataclass
class Plan:
    """A check that passed every rule: the run to use and the input read.

    A document's plan also holds the composite `method` that checks it over the run's
    claim method; a document given by `url` is fetched by `read` (so nothing is fetched
    for a check that is refused).
    """

    run: Run
    item: Input | None
    method: Any = None
    url: str | None = None

    async def read(self) -> Input:
        """The input: as read, or the document fetched from `url`.

        Raises:
            InputError: the document cannot be fetched (the message names it and a fix).
        """
        if self.item is None:
            self.item = await documents.fetch_document(self.url)
        return self.item

    async def check(self) -> Verdict:
        """The verdict (a document's: a `veracity.documents.report.DocumentVerdict`)."""
        return await self.run.check(await self.read(), self.method)


@dataclass(frozen=True)
class Choices:
    """A check's choices, checked by the rules once (`Veracity.plan_run`): what its run
    is resolved from, on top of the service's run config.

    Attributes:
        method: a registered method that takes the check's input (None: the config's).
        labels: a registered label space (None: the config's, else the method's).
        options: the request's method options as `request_config` returned them.
        sources: configured sources to use, by name (None: all).
        model: one of the service's models (None: the default).
        prefer_labels: the label space to use when none is named and the method takes it
            (a dataset's own).
    """

    method: str | None = None
    labels: str | None = None
    options: tuple[tuple[str, Any], ...] = ()
    sources: tuple[str, ...] | None = None
    model: str | None = None
    prefer_labels: str | None = None

    def key(self) -> str:
        """The choices as stable text (option values may be lists: not hashable)."""
        return json.dumps(
            [self.method, self.labels, self.options, self.sources, self.model, self.prefer_labels],
            sort_keys=True,
            default=str,
        )


class Veracity:
    """Checks over one run config, for every front end.

    A check's choices (method, labels, options, sources, model) pass the rules once
    (`plan_run`) into a `Choices`; each distinct `Choices` is resolved to its spec once
    (`resolve`, on top of `config`) and the run is built once per spec (`RunCache`).

    Args:
        config: the run config, layered (`veracity.runtime.layered_config`): the base a
            check's choices are resolved from.
        llm: a model to share instead of building the configured one (not closed here).
        models: other model names a request may pick (the configured one comes first).
        options_refusal: when set, request options are refused with this text (a server
            whose operator does not take them); else they pass `request_config`.
        runs_kept: how many built runs to keep (`RunCache`); a check whose resolved
            spec, model, caches and home folder match a kept run's uses that run.
        caches: where the run's caches live (a run directory's, for batch).
        progress: model-download progress for the embedded backend.
        backend, shared_limit: a backend to wrap instead of the configured one and a
            limit on live calls shared with other processes (Ray workers).
        ready: called with a run's spec before its model is built when that model must
            be pulled first (`model_to_pull`: the CLI pulls it there, with a progress
            bar, so it is had before the backend is built).
    """

    def __init__(
        self,
        config: RunConfig | None = None,
        *,
        llm: LLM | None = None,
        models: Sequence[str] = (),
        options_refusal: str | None = None,
        runs_kept: int = RUNS_KEPT,
        caches: CachePaths | None = None,
        progress: Progress | None = None,
        backend: LLM | None = None,
        shared_limit: SharedLimit | None = None,
        ready: Callable[[RunSpec], None] | None = None,
    ):
        # the run as given, the base every check's choices are resolved from (default
        # sources are chosen per method when resolving, so the base keeps none of them)
        self.config = config or layered_config()  # the environment's model, else defaults
        self._specs: dict[str, RunSpec] = {}  # resolved once per distinct choices
        self.caches = caches
        self.options_refusal = options_refusal
        self._build = {"progress": progress, "backend": backend, "shared_limit": shared_limit}
        self._ready = ready
        self._llms: dict[str, ManagedLLM] = {}
        self._owned: list[ManagedLLM] = []
        self._runs = RunCache(runs_kept)
        self._sources: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self.default_model = self.config.llm.model if llm is None else _llm_name(llm)
        if llm is not None:
            self._llms[self.default_model] = ensure_managed(llm)
        self._models = [self.default_model, *(m for m in models if m)]

    # ------------------------------------------------------------------ lifetimes

    def models(self) -> list[str]:
        """The models a request may pick; the first is the default."""
        return list(self._models)

    def llm(self, name: str | None = None) -> ManagedLLM:
        """The shared model `name` (default: the configured one), built once from its spec."""
        name = name or self.default_model
        with self._lock:
            built = self._llms.get(name)
        if built is not None:
            return built
        spec = self.resolve(Choices(model=None if name == self.default_model else name))
        if self._ready is not None and model_to_pull(spec.llm) is not None:
            self._ready(spec)  # the CLI pulls the model here, with a progress bar
        with self._lock:
            if name not in self._llms:
                extra = {k: v for k, v in self._build.items() if v is not None}
                self._llms[name] = build_llm(spec, self.caches, **extra)
                self._owned.append(self._llms[name])
            return self._llms[name]

    @property
    def spec(self) -> RunSpec:
        """The spec of a check that chooses nothing (resolved once).

        Raises:
            ConfigError: the run config does not resolve.
        """
        return self.resolve(Choices())

    def resolve(self, choices: Choices) -> RunSpec:
        """The spec of a check with `choices` (already checked), resolved once per
        distinct choices (`veracity.runtime.resolve_spec`: request options are in it, so
        other options are another run).

        Raises:
            ConfigError: the combination does not resolve (e.g. a label space the method
                refuses), with the composition root's message.
        """
        key = choices.key()
        with self._lock:
            spec = self._specs.get(key)
        if spec is not None:
            return spec
        cfg = self.config
        if choices.sources is not None:
            picked = {n: cfg.sources[n] for n in choices.sources}
            cfg = cfg.model_copy(update={"sources": picked})
        model = choices.model if choices.model != cfg.llm.model else None
        flags = {
            "method": choices.method,
            "labels": choices.labels,
            "method_config": dict(choices.options) or None,
            "llm": {"model": model} if model else None,
        }
        spec = resolve_spec(cfg, flags=flags, prefer_labels=choices.prefer_labels)
        with self._lock:
            return self._specs.setdefault(key, spec)

    async def warm(self) -> None:
        """Build the default model and load its weights (in a thread, for a local one)."""
        managed = await asyncio.to_thread(self.llm)
        load = getattr(managed.inner, "load", None)
        if callable(load):
            await asyncio.to_thread(load)

    def close(self) -> None:
        """Release the runs kept (each closes once its checks end) and the models this
        service built (their caches, a backend's own close)."""
        self._runs.clear()
        with self._lock:
            owned, self._owned = self._owned, []
            for managed in owned:
                self._llms = {k: v for k, v in self._llms.items() if v is not managed}
        for managed in owned:
            for part in (managed.cache, managed.inner):
                close = getattr(part, "close", None)
                if callable(close):
                    close()

    async def aclose(self) -> None:
        """`close`, the runs kept closed now when no check is under way on them, and the
        sources `search` built."""
        sources, self._sources = self._sources or {}, None
        for source in sources.values():
            aclose = getattr(source, "aclose", None)
            if callable(aclose):
                await aclose()
        for run in self._runs.clear():
            if not run._checking:
                await run.aclose()
        self.close()

    def __enter__(self) -> Veracity:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Veracity:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # ------------------------------------------------------------------ checks

    def plan(
        self,
        item: Any,
        *,
        kind: str = "claim",
        method: str | None = None,
        labels: str | None = None,
        options: Mapping[str, Any] | None = None,
        sources: Sequence[str] | None = None,
        model: str | None = None,
        url: str | None = None,
        extraction: Mapping[str, Any] | Any = None,
        corrections: bool = False,
        concurrency: int | None = None,
    ) -> Plan:
        """Check every rule for one check, then build (or reuse) its run.

        A document (``kind="document"``, a `DocumentText`, or a `url`) is checked by the
        composite document method over a claim method (`veracity.runtime.documents`).

        Args:
            item: text, a mapping or a ready input (see `read_input`); a file `Path` is
                read as a document.
            kind: how to read plain text.
            method: a registered method (default: the config's; for a document, ``rag``).
            labels: a label space (default: the config's, else the method's).
            options: method options a request sets (checked by `request_config`).
            sources: the configured sources to use, by name (default: all).
            model: one of `models()` (default: the first).
            url: a document to fetch (through the runtime's guarded HTTP client) when the
                plan is checked, instead of `item`.
            extraction, corrections, concurrency: a document check's claim-extraction
                settings, corrections of refuted claims and claims at once
                (`veracity.runtime.documents.DocumentOptions`).

        Raises:
            InputError: the input is not a valid claim, article, post or document, or
                none or both of a document and a `url` are given.
            CheckRefused: anything else the service does not run, with what to change.
            ModelNotAvailable, LLMAuthError: the model cannot be had.
        """
        if (item is None) == (url is None) and (kind == "document" or url is not None):
            raise InputError("give a document: its text, a file path or a URL (one of them)")
        if isinstance(item, Path):  # a document's file (a URL is fetched by `Plan.read`)
            item = reading.from_file(item)
        checked = read_input(item, kind) if url is None else None
        given = {"extraction": extraction, "corrections": corrections, "concurrency": concurrency}
        choices = {"method": method, "labels": labels, "options": options, "sources": sources}
        if checked is not None and checked.kind != "document":
            if any(given.values()):
                raise CheckRefused(documents.OPTIONS_REFUSED, "they apply to a document only")
            return Plan(self.plan_run(checked.kind, **choices, model=model), checked)
        settings = documents.document_options(**given)
        run = self.plan_run("document", **choices, model=model)
        return Plan(run, checked, documents.document_method(run, settings), url)

    def plan_run(
        self,
        kind: str | None = None,
        *,
        method: str | None = None,
        labels: str | None = None,
        options: Mapping[str, Any] | None = None,
        sources: Sequence[str] | None = None,
        model: str | None = None,
        prefer_labels: str | None = None,
    ) -> Run:
        """Check every rule of `plan` but the input's own, then build (or reuse) the run:
        for a batch or an evaluation, whose inputs are read later.

        Args:
            kind: the kind of input the run will check (None: not known yet).
            prefer_labels: the label space to use when neither the request nor the config
                names one and the method takes it (a dataset's own).
            method, labels, options, sources, model: as for `plan`.

        Raises:
            CheckRefused: as for `plan`.
        """
        if kind == "document":  # checked by the composite over a claim method
            name = method or documents.DEFAULT_DOCUMENT_METHOD
            method = name
        else:
            name = method or self.config.method
        cls = method_class(name)
        require_labels(labels)
        chosen = self._pick_sources(sources)
        if model is not None and model not in self._models:
            raise CheckRefused(MODEL_NOT_ALLOWED, f"choose one of: {', '.join(self._models)}")
        settings = request_options(name, options, self.options_refusal)
        if kind == "document":
            if "claim" not in tuple(getattr(cls, "input_kinds", ())):
                raise documents.claim_method_refusal(name, tuple(getattr(cls, "input_kinds", ())))
        elif kind is not None:
            require_kind(cls, kind)
        choices = Choices(
            method=method,
            labels=labels,
            options=tuple(sorted(settings.items())),
            sources=chosen,
            model=None if model == self.default_model else model,
            prefer_labels=prefer_labels,
        )
        return self.run(choices)

    async def check(self, item: Any, **choices: Any) -> Verdict:
        """`plan` the check (same arguments), then run it."""
        return await self.plan(item, **choices).check()

    def run(self, choices: Choices | None = None) -> Run:
        """The run for `choices` (already checked; None: the config's own), sharing the
        model: its spec (`resolve`) decides it, so a run kept for the same spec, model,
        caches and home folder is used again, else one is built and kept. A kept run's
        method is never changed by a check: what differs per check lives in the check's
        context.

        Raises:
            CheckRefused: the combination does not build (e.g. a label space the method
                refuses), with the composition root's message.
        """
        choices = choices or Choices()
        try:
            spec = self.resolve(choices)
            llm = self.llm(choices.model)
            home = home_paths()
            key = (spec_key(spec), choices.model or self.default_model, self.caches, home)
            return self._runs.get(key, lambda: build_run(spec, llm=llm, caches=self.caches))
        except CheckRefused:
            raise
        except ConfigError as exc:
            raise CheckRefused(NOT_BUILT, str(exc)) from exc

    def _pick_sources(self, names: Sequence[str] | None) -> tuple[str, ...] | None:
        if names is None:
            return None
        unknown = sorted(set(names) - set(self.config.sources))
        if unknown:
            offered = ", ".join(self.config.sources) or "none"
            raise CheckRefused(
                UNKNOWN_SOURCE, f"{unknown} not configured; this server offers: {offered}"
            )
        return tuple(names)

    # ------------------------------------------------------------------ search

    async def search(self, query: str, source: str | None = None, top_k: int = 5) -> list[Document]:
        """Search the configured sources (built once), all of them or the one named.

        Raises:
            CheckRefused: no sources configured, an unknown one, or a bad query.
            SourceError: a source failed.
        """
        from veracity.retrieval.base import Query

        with self._lock:
            if self._sources is None:
                cfg = self.config  # the configured ones (no method's defaults)
                self._sources = managed_sources(
                    cfg.sources, cache_mode=cfg.llm.cache_mode, data_dir=cfg.data_dir
                )
        if not self._sources:
            raise CheckRefused(
                UNKNOWN_SOURCE, "no sources are configured; start the server with --source"
            )
        names = [source] if source else list(self._sources)
        unknown = [n for n in names if n not in self._sources]
        if unknown:
            raise CheckRefused(
                UNKNOWN_SOURCE, f"unknown source {unknown[0]!r}; configured: {list(self._sources)}"
            )
        try:
            q = Query(text=query, top_k=top_k)
        except ValidationError as exc:
            raise CheckRefused("invalid query", problem_text(exc, where=False)) from exc
        found = await asyncio.gather(*(self._sources[n].search(q) for n in names))
        return [doc for batch in found for doc in batch]

    # ------------------------------------------------------------------ listing

    def methods(self, *, loaded_only: bool = True) -> list[MethodEntry]:
        """The registered methods (those whose plugin loads, unless `loaded_only` is off)."""
        return [m for m in list_methods() if not (loaded_only and m.error)]

    def configured_sources(self) -> dict[str, str]:
        """The configured sources: name -> source type."""
        return {n: str((o or {}).get("type", n)) for n, o in self.config.sources.items()}

    @staticmethod
    def source_types() -> list[SourceType]:
        """Every registered source type, with what it needs now."""
        return list_source_types()


def model_to_pull(llm: LLMSpec) -> str | None:
    """The embedded catalogue model `llm` (a run's resolved model) names when it is not
    downloaded yet, else None."""
    if llm.backend != "embedded":
        return None
    from veracity.llm import models as catalog

    missing = llm.model in catalog.CATALOG and not catalog.is_pulled(llm.model, home_paths().models)
    return llm.model if missing else None


def _llm_name(llm: LLM) -> str:
    return str(getattr(llm, "model", None) or llm.backend_id)


__all__ = [
    "KIND_REFUSED",
    "LLM",
    "OPTION_REFUSED",
    "CheckRefused",
    "ManagedLLM",
    "Plan",
    "RunCache",
    "SharedLimit",
    "Veracity",
    "error_text",
    "model_to_pull",
    "require_kind",
]
