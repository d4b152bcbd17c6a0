"""`RunSpec`: the effective run, resolved once, and recorded specs read back.

A run is given in layers, later ones winning: built-in defaults < ``VERACITY_*``
environment < run or experiment file (and its variant) < command-line flags. The
composition root resolves them once, in one place (`veracity.runtime.resolve_spec`, the
one entry; `veracity.runtime.spec_of` for a config already layered), against the
registries:

- the method's own config class validates ``method_config`` (an unknown key is refused
  with the method's valid keys listed), every default filled in;
- the label space: the one given, else the dataset's own when the method answers in it,
  else the method's default (a note says why);
- the model: the backend's own options model validates its options
  (`veracity.runtime.resolve_llm`);
- sources, limits, prompts, evaluation settings, concurrency and seed as given.

The spec is what gets built (`veracity.runtime.build_run`) and what a run directory
records beside the config it came from (`RunSpec.given`; the run record, ``run.json``:
`veracity.runtime.record`), so ``veracity eval --spec RUN_DIR`` runs it again.

A recorded spec is data, often someone else's (`read_spec`): its paths resolve against its
run directory, and a spec that reaches outside it — an endpoint or a key variable, files
outside the directory, method options a request could not set (commands, URLs, paths) —
is shown to the user and runs only when they say so (``--trust-spec``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, ValidationError

from veracity.core import registry
from veracity.core.bounds import Concurrency, Examples, Repeats, Seed
from veracity.core.config import (
    PromptsConfig,
    RunConfig,
    confine_paths,
    given_keys,
    is_given,
    validation_message,
)
from veracity.core.errors import (
    ConfigError,
    RunStoreError,
)
from veracity.core.limits import InputLimits
from veracity.llm.options import LLMSpec
from veracity.methods.base import BaseMethod, MethodConfig

SCHEMA = 1  # the spec's format; a later format reads older ones or says it cannot


class RunSpec(BaseModel):
    """The effective run: every value resolved, every default filled in.

    Attributes:
        method: the registered method.
        method_config: the method's own config (its config class), defaults filled in.
        labels: the label space the method answers in.
        labels_note: why `labels` is not the space asked for (the dataset's), if so.
        llm: the model: backend, model name, the backend's typed options, shared options.
        sources: source name -> options (defaults chosen for a retrieving method included).
        concurrency: examples checked at once (LLM calls at once: ``llm.max_concurrency``).
        seed: the run seed (sampling of examples and of model replies).
        The evaluation fields (`dataset` ... `repeats`) are as in `RunConfig`.
        notes: what the user should know about how it was resolved (default sources
            chosen, settings turned off for want of a source, `labels_note`).
        given: the run as given: the layered config it was resolved from, with what
            resolving chose (default sources and the settings they turn off, the label
            space). A run directory records it beside the spec (an experiment's paper
            table is read from it and a resume is compared with it: the spec fills every
            default), and a service resolves a check's choices from it (a check of another
            method starts from the given settings, not from this method's defaults).
        `notes` and `given` are how it was resolved, not what it is: they are left out
        of its JSON, its digest and its equality.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = Field(default=SCHEMA, ge=1, le=1_000)
    labels_note: str | None = None
    # Every other field is required: `resolve_spec` fills them from a `RunConfig`, whose
    # defaults are the run's only ones.
    name: str
    description: str
    variant: str | None
    method: str
    method_config: SerializeAsAny[MethodConfig]
    labels: str
    llm: LLMSpec
    sources: dict[str, dict[str, Any]]
    prompts: PromptsConfig
    limits: InputLimits
    concurrency: Concurrency = Field(ge=1)
    seed: Seed
    # evaluation
    dataset: str | None
    split: str | None
    dataset_options: dict[str, Any]
    gold_evidence: bool
    gold_map: dict[str, str] | None
    limit: Examples | None
    sample: bool
    sample_per_class: Examples | None
    repeats: Repeats
    data_dir: str | None
    stand_in: str | None
    document: dict[str, Any] | None = None  # the document task's settings (None: defaults)
    notes: tuple[str, ...] = Field(default=(), exclude=True)
    given: RunConfig | None = Field(default=None, exclude=True, repr=False)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunSpec):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]  # a spec holds mappings; key it by `spec_key`

    @property
    def method_class(self) -> type[BaseMethod]:
        return registry.methods.get(self.method)

    def to_config(self) -> RunConfig:
        """The same run as a `RunConfig` (every value explicit), e.g. to run it again."""
        data = self.model_dump(mode="json", exclude={"schema_version", "labels_note"})
        data["llm"] = self.llm.to_config().model_dump(mode="json")
        try:
            return RunConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"spec: {validation_message(exc)}") from None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        """A spec as `model_dump(mode="json")` wrote it, its typed parts revalidated.

        Raises:
            ConfigError: not a spec this version can read.
        """
        if not isinstance(data, dict) or data.get("schema_version") != SCHEMA:
            raise ConfigError(f"not a run spec of format {SCHEMA}")
        try:
            config = RunConfig.model_validate(_config_part(data))
        except ValidationError as exc:
            raise ConfigError(f"spec: {validation_message(exc)}") from None
        from veracity.runtime import spec_of  # the resolver, which builds specs

        return spec_of(config)


def _config_part(data: dict[str, Any]) -> dict[str, Any]:
    """A stored spec's values as `RunConfig` input (the flat ``llm:`` section)."""
    out = {k: v for k, v in data.items() if k not in ("schema_version", "labels_note", "notes")}
    llm = dict(out.get("llm") or {})
    options = dict(llm.pop("options", None) or {})
    out["llm"] = {**llm, **options}
    mcfg = dict(out.get("method_config") or {})
    mcfg.pop("labels", None)  # specs recorded before the label space had one home: null
    out["method_config"] = mcfg
    return out


# option keys (at any depth) that point a run at a host, a process or a secret
_REACH_KEYS = frozenset({"base_url", "url", "provider", "command", "api_key_env"})
_REACH_SUFFIXES = ("_url", "_env")


def _reaching(value: Any, trail: str) -> list[tuple[str, str]]:
    """(dotted option, value) for each option in `value` that names a host, a command or
    an environment variable."""
    found: list[tuple[str, str]] = []
    if isinstance(value, dict):
        for k, v in value.items():
            key = f"{trail}.{k}" if trail else str(k)
            if v not in (None, "", [], {}) and (
                k in _REACH_KEYS or str(k).endswith(_REACH_SUFFIXES)
            ):
                found.append((key, v if isinstance(v, str) else json.dumps(v)))
            else:
                found += _reaching(v, key)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += _reaching(v, f"{trail}.{i}")
    return found


def _operator_options(spec: RunSpec) -> list[tuple[str, str]]:
    """The method options of `spec` that a request could not set (`veracity.methods.options`:
    anything but booleans, enumerations and bounded numbers) and that differ from the
    method's defaults: where a command, a host, a file or a variable name would be."""
    from veracity.methods.options import _unsafe, allowed_options

    cls = spec.method_class.config_class
    try:
        default = cls.model_validate({}).model_dump(mode="json")
    except ValidationError:
        default = {}
    given = spec.method_config.model_dump(mode="json")
    allowed = set(allowed_options(cls))
    found = []
    for name, field in cls.model_fields.items():
        if name in allowed or _unsafe(name, field) is None:
            continue
        if name in given and given[name] != default.get(name, object()):
            found.append((f"method_config.{name}", json.dumps(given[name])[:200]))
    return found


def spec_reach(
    spec: RunSpec, outside: list[tuple[str, str]] = (), given: Any = None
) -> list[tuple[str, str]]:
    """What a recorded spec reaches outside its run directory, as (option, value): the
    model's endpoint, provider and key variable, any option naming a URL, a command or an
    environment variable (sources, the document task, plugin options), method options a
    request could not set, and the paths in `outside`. Options the command line sets
    (`given`, the flags as `RunConfig.with_overrides` takes them) are the user's own and
    are left out.
    """
    options = spec.llm.options.model_dump(mode="json")
    found = [(f"llm.{k}", str(options[k])) for k in ("base_url", "provider", "api_key_env")
             if options.get(k)]  # fmt: skip
    rest = {k: v for k, v in options.items() if k not in ("base_url", "provider", "api_key_env")}
    found += _reaching(rest, "llm")
    for section in ("sources", "dataset_options", "document"):
        found += _reaching({section: getattr(spec, section)}, "")
    found += _operator_options(spec)
    found += list(outside)
    mine = given_keys(given)
    kept, seen = [], set()
    for key, value in found:
        if key in seen or is_given(key, mine):
            continue
        seen.add(key)
        kept.append((key, value))
    return kept


def read_spec(run_dir: str | Path, *, trust: bool = False, given: Any = None) -> RunSpec:
    """The spec a run directory recorded (its run record, `veracity.runtime.record`:
    ``run.json``, or ``spec.json`` in a directory written before it).

    Paths in it resolve against `run_dir`. Unless `trust` is set, a spec that reaches
    outside its run directory (`spec_reach`: an endpoint, a key variable, a command, files
    elsewhere) is refused with everything it reaches listed.

    Args:
        trust: the user has read the spec and runs it as it is (``--trust-spec``).
        given: the command-line flags that will override the spec (what they set is the
            user's own, not the spec's).

    Raises:
        ConfigError: the directory has no record or its record no spec (a run made before
            specs were recorded: the message says how to run it again), it cannot be
            read, or it reaches outside its directory and `trust` is not set.
    """
    from veracity.runtime.record import LEGACY_CONFIG, read_record

    try:
        record = read_record(run_dir)
    except RunStoreError as exc:
        raise ConfigError(f"{run_dir} records no run spec: {exc}") from None
    path = record.path
    if record.spec is None:
        if (record.config.get("repeats") or 1) > 1:
            raise ConfigError(
                f"{run_dir} records no run spec: it is a repeated run's parent; each repeat "
                f"records its own (--spec {Path(run_dir) / 'repeat-1'})"
            )
        raise ConfigError(
            f"{run_dir} records no run spec: it was made before specs were recorded; "
            f"resume it with --out {run_dir}, or run its config again with "
            f"--config {Path(run_dir) / LEGACY_CONFIG}"
        )
    data, outside = confine_paths(record.spec, Path(run_dir))
    try:
        spec = RunSpec.from_json(data)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    reach = spec_reach(spec, outside, given)
    if reach and not trust:
        shown = "; ".join(f"{key} = {value}" for key, value in reach)
        raise ConfigError(
            f"{path} reaches outside its run directory: {shown}. A recorded spec may come "
            "from anyone: run it only if you trust it, with --trust-spec (or override these "
            "on the command line)"
        )
    return spec


__all__ = ["RunSpec", "read_spec", "spec_reach"]
