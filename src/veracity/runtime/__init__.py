"""The composition root: a run given in, its spec resolved once, a ready run out.

Every entry point resolves and builds its runs here — the Python API, `veracity check`,
`eval`, `batch`, and the server and MCP front ends (through `veracity.runtime.service`)
— so a run is resolved one way and built one way:

1. `resolve_spec(file, env, flags)` — the one entry: the defaults, the environment's
   model settings (`veracity.runtime.environment`, the one reader of ``VERACITY_*``), a
   run or experiment YAML (or none) with its variant, then the command-line flags, which
   always win over the file (`layered_config`; `evaluation_config` adds what an
   evaluation resumes or runs again from); then, for a retrieving method given no
   sources, the defaults of `veracity.retrieval.defaults` (`with_default_sources`: live
   keyless sources when the network answers, else the default local corpus); then the
   effective run (`RunSpec`, `spec_of`): the method's own config class validates
   ``method_config`` (`method_config_of`), the label space is chosen (`resolve_labels`),
   the backend's options model validates the model's options (`resolve_llm`): each
   of a run's values is validated from here, once.
2. `build_run(spec)` — the model (`build_llm`) with its cache, the sources
   (`build_sources`, each wrapped once in `ManagedSource`, which applies the evaluation
   guards, retries and search accounting) and the method (`build_method`) with its label
   space and prompt overrides. Every builder takes the spec and nothing else of the run.

Resolving builds nothing, so `veracity.runtime.service` finds a run it built by its spec
before building anything. Nothing here checks inputs or writes run directories;
`veracity.evaluation` does that on top of a `Run`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from veracity.core import registry
from veracity.core.bounds import completion_tokens_problem
from veracity.core.config import (
    LLMConfig,
    RunConfig,
    load_run_config,
    run_config_from,
    validation_message,
)
from veracity.core.errors import (
    ConfigError,
    LabelError,
    MethodConfigError,
    PromptError,
    RegistryError,
    RunStoreError,
)
from veracity.core.labels import get_label_space
from veracity.core.types import CheckInput, Verdict
from veracity.llm.base import LLM
from veracity.llm.client import ManagedLLM, SharedLimit, ensure_managed
from veracity.llm.models import Progress
from veracity.llm.options import LLMSpec, NoOptions, options_class
from veracity.methods.base import BaseMethod, MethodConfig, MethodParts
from veracity.prompting import PromptBundle
from veracity.retrieval.base import Source
from veracity.runtime.environment import Environment, default_data_dir, environment
from veracity.runtime.home import home_paths, model_builder, user_http_client
from veracity.runtime.spec import RunSpec

log = logging.getLogger("veracity")


@dataclass(frozen=True)
class CachePaths:
    """Where a run keeps its caches; None means the user-level cache under VERACITY_HOME.

    Attributes:
        llm, http: the model's and the HTTP client's SQLite caches.
        state: a folder for methods' persistent state (MERMAID's evidence memory).
        namespace: what that state belongs to (an evaluation's ``dataset/split``), so
            state kept for one set of examples is never read while checking another.
    """

    llm: Path | None = None
    http: Path | None = None
    state: Path | None = None
    namespace: str | None = None


@dataclass
class Run:
    """A built run: its spec and the objects built from it.

    Attributes:
        spec: the effective run, every default filled in (what a run directory records).
        llm: the model, with cache, retries, concurrency limit and accounting.
        sources: the configured sources by name, each managed once.
        method: the method instance.
        prompts: template name -> sha256 of the text the method will render.
        notes: what the user should know about how the run was assembled (default
            sources chosen, settings turned off for want of a source).
    """

    spec: RunSpec
    llm: ManagedLLM
    sources: dict[str, Source]
    method: BaseMethod
    prompts: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _checking: int = field(default=0, init=False, repr=False, compare=False)
    _retired: bool = field(default=False, init=False, repr=False, compare=False)
    closed: bool = field(default=False, init=False, repr=False, compare=False)

    async def check(self, item: CheckInput, method: Any = None) -> Verdict:
        """Check one input with this run's method, or with `method` built over it (the
        composite that checks a document); a retired run closes after its last check."""
        self._checking += 1
        try:
            return await (method or self.method).check(item)
        finally:
            self._checking -= 1
            if self._retired and not self._checking:
                await self.aclose()

    def retire(self) -> None:
        """No new checks will come (the service let it go): close it once the checks under
        way end; when none is, now (in the running event loop, if there is one; without
        one, what a loop held is gone with it and the run is only marked closed)."""
        self._retired = True
        if self._checking or self.closed:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.closed = True
            return
        task = loop.create_task(self.aclose())
        _closing.add(task)
        task.add_done_callback(_closing.discard)

    async def aclose(self) -> None:
        """Release what the run holds open: its method's and sources' connections (an
        ``aclose`` of theirs, e.g. MERMAID's tool servers). The model is shared (never
        closed here). Closing twice does nothing."""
        if self.closed:
            return
        self.closed = True
        for part in (self.method, *self.sources.values()):
            aclose = getattr(part, "aclose", None)
            if callable(aclose):
                try:
                    await aclose()
                except Exception as exc:  # a connection already gone: nothing to release
                    log.debug("closing %r: %s", part, exc)


_closing: set[asyncio.Task[None]] = set()  # closes under way (kept from garbage collection)


def layered_config(
    path: str | Path | None = None,
    *,
    variant: str | None = None,
    flags: Mapping[str, Any] | None = None,
    base: RunConfig | None = None,
    env: Environment | None = None,
) -> RunConfig:
    """The run config, layered: the defaults, the environment's model settings (`env`,
    default: read now), then `base` or the file at `path` (a run or experiment file, or a
    run directory's record), its `variant`, then `flags` (None values mean "not given";
    see `RunConfig.with_overrides`).

    Paths in the file resolve against its folder and may not leave it, except those the
    flags replace (`veracity.core.config.load_run_config`).

    Raises:
        ConfigError: the file, the variant or a flag does not fit the schema, or a path in
            the file leaves its folder.
    """
    if base is not None:
        cfg = base
    elif path is not None:
        cfg = _load_file(path, flags)
    else:
        cfg = RunConfig()
    # the environment's model settings below what the file (or the base) gave
    env = env or environment()
    cfg = cfg.model_copy(update={"llm": LLMConfig.layered(cfg.llm.given(), env.llm_settings())})
    cfg = cfg.with_variant(variant)
    return cfg.with_overrides(flags) if flags else cfg


def evaluation_config(
    path: str | Path | None,
    out_dir: str | Path | None,
    variant: str | None,
    flags: Mapping[str, Any],
    spec: str | Path | None = None,
    trust_spec: bool = False,
    env: Environment | None = None,
    replay: bool = False,
) -> RunConfig:
    """An evaluation's (or a batch's) run config: the file (or the spec another run
    directory recorded, with `spec`; or, resuming, the run directory's own record) with
    its variant, then the flags, which always win (`layered_config`). An evaluation keeps
    every reply, sampled ones included, so it can be replayed: a default ``auto`` LLM
    cache mode becomes ``record``; with `replay` (the run replays another run directory's
    replies), the cache only replays, so a request the recorded run never made is an
    error rather than a live call.

    A spec that reaches outside its run directory (an endpoint, a key variable, a command,
    files elsewhere) is refused unless `trust_spec` (`veracity.runtime.spec.read_spec`).

    Raises:
        ConfigError: as `layered_config`, and a spec given with a file or variant, a
            variant without a file, or a resumed directory of another variant.
    """
    from veracity.runtime.record import has_record, read_record
    from veracity.runtime.spec import read_spec

    base = None
    if trust_spec and spec is None:
        raise ConfigError("--trust-spec goes with --spec RUN_DIR")
    if spec is not None:
        if path is not None or variant is not None:
            raise ConfigError("--spec runs a recorded spec: give it without --config/--variant")
        base = read_spec(spec, trust=trust_spec, given=flags).to_config()
    elif path is None and out_dir is not None and has_record(out_dir):
        try:
            stored = read_record(out_dir).config
        except RunStoreError as exc:
            raise ConfigError(str(exc)) from None
        try:  # the user's own directory, resumed: its paths are theirs
            base = RunConfig.model_validate(stored)
        except ValidationError as exc:
            raise ConfigError(f"{out_dir}: its run config: {validation_message(exc)}") from None
        if variant is not None and variant != base.variant:
            raise ConfigError(f"{out_dir} holds variant {base.variant!r}, not {variant!r}")
        variant = None
    elif path is None and variant is not None:
        raise ConfigError("--variant needs --config (variants live in experiment configs)")
    cfg = layered_config(path, variant=variant, flags=flags, base=base, env=env)
    if replay:
        cfg = cfg.with_overrides({"llm": {"cache_mode": "replay"}})
    elif cfg.llm.cache_mode == "auto":
        # every response is kept, sampled ones included, so the run can be replayed
        cfg = cfg.with_overrides({"llm": {"cache_mode": "record"}})
    return cfg


def _load_file(path: str | Path, flags: Mapping[str, Any] | None) -> RunConfig:
    """A run or experiment file, or a run directory (or its ``run.json``): the config its
    record holds, paths confined to the directory as a run file's are to its folder."""
    from veracity.runtime.record import RECORD_FILE, has_record, read_record

    given = Path(path)
    folder = given if given.is_dir() else given.parent if given.name == RECORD_FILE else None
    if folder is None:
        return load_run_config(path, given=flags)
    if not has_record(folder):
        raise ConfigError(
            f"{path} is a directory, not a run directory (no {RECORD_FILE}): give a run "
            "file, or a directory `veracity eval` wrote"
        )
    try:
        record = read_record(folder)
    except RunStoreError as exc:
        raise ConfigError(str(exc)) from None
    return run_config_from(record.config, folder / RECORD_FILE, given=flags)


def build_llm(
    spec: RunSpec,
    caches: CachePaths | None = None,
    progress: Progress | None = None,
    *,
    backend: LLM | None = None,
    shared_limit: SharedLimit | None = None,
) -> ManagedLLM:
    """The model of `spec`, its replies cached in ``caches.llm`` (or the user cache).

    `backend` replaces the configured backend (wrapped the same way); `shared_limit`
    caps live calls together with other processes (see `ManagedLLM`).
    """
    from veracity.llm.factory import build_llm as build

    extra = {"backend": backend, "shared_limit": shared_limit}
    extra = {k: v for k, v in extra.items() if v is not None}
    home = home_paths()
    return build(
        spec.llm,
        cache_path=caches.llm if caches else None,
        user_cache=home.llm_cache,
        models_dir=home.models,
        progress=progress,
        **extra,
    )


def build_sources(spec: RunSpec, caches: CachePaths | None = None) -> dict[str, Source]:
    """The spec's sources by name, each wrapped once in `ManagedSource`
    (`managed_sources`)."""
    return managed_sources(
        spec.sources, caches, cache_mode=spec.llm.cache_mode, data_dir=spec.data_dir
    )


def managed_sources(
    sources: Mapping[str, Mapping[str, Any]],
    caches: CachePaths | None = None,
    *,
    cache_mode: str = "auto",
    data_dir: str | None = None,
) -> dict[str, Source]:
    """`sources` (name -> options) built, each wrapped once in `ManagedSource`: for a run,
    through `build_sources`; MERMAID's tool server builds a run's sources from what it was
    handed (`veracity.mcp.tool_server`).

    HTTP answers are kept in ``caches.http`` when given (without expiry, so a resumed or
    replayed run sees the same evidence; read-only when the LLM cache replays, per
    `cache_mode`), else in the user-level HTTP cache. A recorded source that names no path
    reads the traces under `data_dir` (default: the environment's data directory).
    """
    if not sources:
        return {}
    from veracity.retrieval.managed import ManagedSource
    from veracity.retrieval.recorded.source import TRACES_SUBDIR
    from veracity.retrieval.registry_setup import build_sources as build_configured
    from veracity.retrieval.transport.http import HttpClient
    from veracity.retrieval.transport.parts import HttpConfig

    if caches is not None and caches.http is not None:
        mode = {"replay": "replay", "off": "off"}.get(cache_mode, "auto")
        http = HttpClient(HttpConfig(cache_mode=mode, cache_path=caches.http, cache_ttl_s=None))
    else:
        http = user_http_client()
    options = {name: dict(opts or {}) for name, opts in sources.items()}
    for opts in options.values():
        if opts.get("type") == "recorded" and not opts.get("path"):
            root = data_dir if data_dir is not None else default_data_dir()
            opts["path"] = str(Path(root) / TRACES_SUBDIR)
    built = build_configured(options, http=http, indexes_dir=home_paths().indexes, managed=False)
    cache = str(caches.http) if caches is not None and caches.http is not None else None
    return {
        name: ManagedSource(
            source,
            # how to build it again elsewhere (MERMAID's tool server process)
            spec={"options": options[name], "http_cache": cache, "cache_mode": cache_mode},
        )
        for name, source in built.items()
    }


def with_default_sources(
    config: RunConfig, *, online: bool | None = None, options: MethodConfig | None = None
) -> tuple[RunConfig, list[str]]:
    """`config` with default sources for its method when it names none, and notes saying
    what was chosen (see `veracity.retrieval.defaults`); `config` itself when none are.

    Args:
        online: whether the network answers (None: probe it, only when defaults are needed).
        options: the method's options already validated (the spec's), read instead of
            validating ``config.method_config`` again.

    Raises:
        ConfigError: the method retrieves, nothing is configured, and no default can be had
            (the message gives the commands that fix it).
    """
    if config.sources or config.method not in registry.methods:
        return config, []
    try:
        cls = registry.methods.get(config.method)
    except RegistryError:
        return config, []  # build_method reports it
    needs_of = getattr(cls, "source_needs", None)
    given = options if options is not None else config.method_config
    needs = needs_of(given) if needs_of is not None else []
    if not needs:
        return config, []
    from veracity.retrieval.defaults import default_sources, network_available

    if online is None:
        online = network_available(offline=environment().offline)
    chosen = default_sources(config.method, needs, online=online, indexes_dir=home_paths().indexes)
    update = {"sources": chosen.sources, "method_config": chosen.method_config}
    return config.with_overrides(update), chosen.notes


def build_method(
    spec: RunSpec,
    llm: LLM | None,
    sources: Mapping[str, Source],
    *,
    caches: CachePaths | None = None,
) -> BaseMethod:
    """The method of `spec`, built in one statement from its parts (`MethodParts`): the
    spec's validated options and label space, the model, `sources`, the prompt overrides,
    the home folder, a model builder, the input limits, the spec's `notes` (how the run
    was resolved, traced per check) and, for methods that keep persistent state,
    ``caches.state`` and ``caches.namespace``.

    Raises:
        ConfigError: unknown method, a token setting beyond the model's window, bad
            prompts, or what the method's `setup` refuses.
    """
    # every token setting within the model's window, where the backend knows it
    window = llm.capabilities.context_window if llm is not None else None
    too_long = completion_tokens_problem(spec.method_config, window, "method_config")
    if too_long:
        raise ConfigError(too_long)
    state = caches if caches is not None else CachePaths()
    try:
        return spec.method_class(
            parts=MethodParts(
                llm=llm,  # type: ignore[arg-type]  # None is refused, with what to pass
                config=spec.method_config,
                labels=get_label_space(spec.labels),
                sources=dict(sources),
                home=home_paths(),
                prompts=PromptBundle.from_config(spec.prompts),
                model_builder=model_builder(),
                state_dir=state.state,
                state_namespace=state.namespace,
                limits=spec.limits,
                notes=spec.notes,
            )
        )
    except (MethodConfigError, LabelError, RegistryError, PromptError) as exc:
        raise ConfigError(str(exc)) from exc


def method_config_of(cls: type[BaseMethod], given: dict[str, Any]) -> MethodConfig:
    """`given` validated by the method's own config class, defaults filled in (the one
    validation of a run's method options: `BaseMethod.options`).

    Raises:
        ConfigError: a key the method does not take (its keys are listed; a ``labels``
            key is said to belong to the run) or a bad value.
    """
    try:
        return cls.options(given)
    except MethodConfigError as exc:
        raise ConfigError(str(exc)) from None


def resolve_labels(
    cls: type[BaseMethod], given: str | None, prefer: str | None
) -> tuple[str, str | None]:
    """The label space a method answers in, and a note when it is not the one preferred.

    `given` (the run's `labels`) must be a registered space the method accepts. Without
    one, `prefer` (a dataset's own space) is used when the method accepts it; a method
    that answers only in fixed spaces (`allowed_labels`) gets its default, with a note;
    a preferred space that is not registered is an error, never a silent fallback.

    Raises:
        ConfigError: the given or preferred space is unknown or refused.
    """
    allowed = cls.allowed_labels
    default = cls.default_labels  # declared once, on the method's class
    wanted = given if given is not None else prefer
    if wanted is None:
        return default, None
    try:
        get_label_space(wanted)
    except LabelError as exc:
        raise ConfigError(f"labels: {exc}") from None
    if allowed is None or wanted in allowed:
        return wanted, None
    if given is not None:
        raise ConfigError(f"{cls.name} works in {list(allowed)}, not {given}")
    note = (
        f"{cls.name} answers only in {', '.join(allowed)}; the dataset's labels "
        f"({prefer}) are mapped to {default}"
    )
    return default, note


def spec_of(config: RunConfig, *, prefer_labels: str | None = None) -> RunSpec:
    """Resolve `config` (flags, file, environment and defaults already layered) once,
    with the sources it names (`veracity.runtime.resolve_spec` chooses default sources
    first).

    Args:
        config: the run config (see `veracity.runtime.layered_config`).
        prefer_labels: the label space to use when `config.labels` is not set and the
            method answers in it (a dataset's own space).

    Raises:
        ConfigError: unknown method or backend, a method or backend option the method
            or backend does not take, a refused label space.
    """
    try:
        cls = registry.methods.get(config.method)
    except RegistryError:
        known = ", ".join(registry.methods.names())
        raise ConfigError(f"unknown method {config.method!r}; registered: {known}") from None
    mcfg = method_config_of(cls, dict(config.method_config))
    labels, note = resolve_labels(cls, config.labels, prefer_labels)
    values = config.model_dump(include=_PLAIN_KEYS)
    return RunSpec(
        **values,
        method_config=mcfg,
        labels=labels,
        labels_note=note,
        llm=resolve_llm(config.llm),
        notes=(note,) if note else (),
        given=config.model_copy(update={"labels": labels}),
    )


# RunConfig keys a spec takes over as they are
_PLAIN_KEYS = {
    "name", "description", "variant", "method", "sources", "prompts", "limits",
    "concurrency", "seed", "dataset", "split", "dataset_options", "gold_evidence",
    "gold_map", "limit", "sample", "sample_per_class", "repeats", "data_dir", "stand_in",
    "document",
}  # fmt: skip


# Options the environment can set (VERACITY_THREADS, VERACITY_AUTO_PULL) for the embedded
# backend; another backend ignores them instead of refusing the run.
_ENVIRONMENT_OPTIONS = frozenset({"n_threads", "auto_pull"})


def resolve_llm(cfg: LLMConfig) -> LLMSpec:
    """`cfg` with its backend's options validated by that backend's options model
    (`veracity.llm.options`): the run's model, resolved once.

    Raises:
        ConfigError: unknown backend, or an option the backend does not take or accept
            (the message lists the backend's options).
    """
    try:
        backend = registry.llm_backends.get(cfg.backend)
    except RegistryError as exc:
        raise ConfigError(f"llm.backend: {exc}") from None
    given = cfg.backend_options()
    model_cls = options_class(backend)
    if model_cls is None:
        options: BaseModel = NoOptions.model_validate(cfg.options)
    else:
        known = set(model_cls.model_fields)
        foreign = sorted(set(given) - known - _ENVIRONMENT_OPTIONS)
        if foreign:
            raise ConfigError(
                f"llm: {', '.join(foreign)}: not an option of the {cfg.backend!r} backend "
                f"(its options: {', '.join(sorted(known))})"
            )
        try:
            options = model_cls.model_validate({k: v for k, v in given.items() if k in known})
        except ValidationError as exc:
            raise ConfigError(f"llm: {validation_message(exc)}") from None
    shared = cfg.model_dump(include=set(LLMSpec.model_fields) - {"options"})
    return LLMSpec(**shared, options=options)


def resolve_spec(
    file: str | Path | RunConfig | None = None,
    env: Environment | None = None,
    flags: Mapping[str, Any] | None = None,
    *,
    variant: str | None = None,
    prefer_labels: str | None = None,
    online: bool | None = None,
) -> RunSpec:
    """The effective run, resolved once: the one entry every front end resolves a run by.

    The layers (`layered_config`: the defaults, the environment `env` (default: read
    now), the run or experiment file at `file` with its `variant`, then `flags`; or
    `file` given as a `RunConfig` already layered, `variant` and `flags` then applied to
    it), then default sources for a retrieving method that names none
    (`with_default_sources`), then the spec (`spec_of`: the method's
    config class, the label space, the backend's options). The spec's `notes` say what
    was chosen and its `given` is the config it came from.

    Args:
        prefer_labels: the label space to use when the run names none and the method
            answers in it (a dataset's own).
        online: whether the network answers, for default sources (None: probe it when a
            retrieving method has no sources).

    Raises:
        ConfigError: anything in the run that cannot be resolved, with what to change.
    """
    if isinstance(file, RunConfig):
        config = file.with_variant(variant)
        given = any(v is not None for v in (flags or {}).values())
        config = config.with_overrides(flags) if given else config
    else:
        config = layered_config(file, variant=variant, flags=flags, env=env)
    spec = spec_of(config, prefer_labels=prefer_labels)  # the method's options validated
    chosen, notes = with_default_sources(config, online=online, options=spec.method_config)
    if chosen is not config:  # default sources (and the settings they turn off): again
        spec = spec_of(chosen, prefer_labels=prefer_labels)
    return spec.model_copy(update={"notes": (*notes, *spec.notes)})


def build_run(
    spec: RunSpec,
    *,
    llm: LLM | None = None,
    caches: CachePaths | None = None,
    progress: Progress | None = None,
    backend: LLM | None = None,
    shared_limit: SharedLimit | None = None,
) -> Run:
    """Build the model (unless given), the sources and the method of `spec`.

    Args:
        spec: the effective run (`resolve_spec`).
        llm: a model to use instead of building the configured one (tests, servers
            sharing one loaded model); it is wrapped for accounting when it is not managed.
        caches: where the run's LLM and HTTP caches live (a run directory's, for eval).
        progress: model-download progress callback for the embedded backend.
        backend: a backend to use instead of the configured one, wrapped like it (the
            run's cache, limits, retries); ignored when `llm` is given.
        shared_limit: a limit on live LLM calls shared with other processes (the global
            limit of a Ray run); ignored when `llm` is given.

    Raises:
        ConfigError: the method or its prompts do not build, with what to change.
    """
    if llm is not None:
        managed = ensure_managed(llm)
    else:
        managed = build_llm(spec, caches, progress, backend=backend, shared_limit=shared_limit)
    managed.run_seed = spec.seed  # sampled calls get seeds derived from the run seed
    sources = build_sources(spec, caches)
    method = build_method(spec, managed, sources, caches=caches)
    notes = list(spec.notes)
    for note in notes:
        log.info("%s", note)
    prompts = method.prompt_hashes()
    return Run(spec, managed, method.sources, method, prompts, notes)


__all__ = [
    "CachePaths",
    "Run",
    "RunSpec",
    "build_llm",
    "build_method",
    "build_run",
    "build_sources",
    "evaluation_config",
    "layered_config",
    "managed_sources",
    "method_config_of",
    "resolve_labels",
    "resolve_llm",
    "resolve_spec",
    "spec_of",
    "with_default_sources",
]
