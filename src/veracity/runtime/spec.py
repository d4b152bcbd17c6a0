"""`RunSpec`: the effective run, resolved once.

A run is given in layers, later ones winning: built-in defaults < ``VERACITY_*``
environment < run or experiment file (and its variant) < command-line flags
(`veracity.runtime.resolve_config` makes that `RunConfig`). `resolve_spec` then resolves
it once, against the registries:

- the method's own config class validates ``method_config`` (an unknown key is refused
  with the method's valid keys listed), every default filled in;
- the label space: the one given, else the dataset's own when the method answers in it,
  else the method's default (a note says why);
- the model: the backend's own options model validates its options
  (`veracity.llm.options.resolve_llm`);
- sources, limits, prompts, evaluation settings, concurrency and seed as given.

The spec is what gets built (`veracity.runtime.build_run`) and what a run directory
records (`write_run_record`: ``spec.json`` with the package version, the source revision
where known and the prompt hashes), so ``veracity eval --spec RUN_DIR`` runs it again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, ValidationError

from veracity.core import registry
from veracity.core.config import PromptsConfig, RunConfig, validation_message
from veracity.core.errors import ConfigError, LabelError, RegistryError
from veracity.core.labels import get_label_space
from veracity.core.limits import InputLimits
from veracity.llm.options import LLMSpec, resolve_llm
from veracity.methods.base import BaseMethod, MethodConfig

SPEC_FILE = "spec.json"  # in a run directory, beside config.json
SCHEMA = 1  # the spec's format; a later format reads older ones or says it cannot


class RunSpec(BaseModel):
    """The effective run: every value resolved, every default filled in.

    Attributes:
        method: the registered method.
        method_config: the method's own config (its config class), defaults filled in;
            its ``labels`` is always None here: the label space lives in `labels`.
        labels: the label space the method answers in.
        labels_note: why `labels` is not the space asked for (the dataset's), if so.
        llm: the model: backend, model name, the backend's typed options, shared options.
        sources: source name -> options (defaults chosen for a retrieving method included).
        concurrency: examples checked at once (LLM calls at once: ``llm.max_concurrency``).
        seed: the run seed (sampling of examples and of model replies).
        The evaluation fields (`dataset` ... `repeats`) are as in `RunConfig`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = SCHEMA
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
    concurrency: int = Field(ge=1)
    seed: int
    # evaluation
    dataset: str | None
    split: str | None
    dataset_options: dict[str, Any]
    gold_evidence: bool
    gold_map: dict[str, str] | None
    limit: int | None
    sample: bool
    sample_per_class: int | None
    repeats: int
    data_dir: str | None
    stand_in: str | None
    document: dict[str, Any] | None = None  # the document task's settings (None: defaults)

    @property
    def method_class(self) -> type[BaseMethod]:
        return registry.methods.get(self.method)

    def method_options(self) -> MethodConfig:
        """The method config to build the method with (the label space included)."""
        return self.method_config.model_copy(update={"labels": self.labels})

    def to_config(self) -> RunConfig:
        """The same run as a `RunConfig` (every value explicit), e.g. to run it again."""
        data = self.model_dump(mode="json", exclude={"schema_version", "labels_note"})
        data["method_config"] = self.method_config.model_dump(mode="json", exclude={"labels"})
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
        return resolve_spec(config)


def _config_part(data: dict[str, Any]) -> dict[str, Any]:
    """A stored spec's values as `RunConfig` input (the flat ``llm:`` section)."""
    out = {k: v for k, v in data.items() if k not in ("schema_version", "labels_note")}
    llm = dict(out.get("llm") or {})
    options = dict(llm.pop("options", None) or {})
    out["llm"] = {**llm, **options}
    mcfg = dict(out.get("method_config") or {})
    mcfg.pop("labels", None)
    out["method_config"] = mcfg
    return out


def method_config_of(cls: type[BaseMethod], given: dict[str, Any]) -> MethodConfig:
    """`given` validated by the method's own config class, defaults filled in.

    Raises:
        ConfigError: a key the method does not take (its keys are listed) or a bad value.
    """
    try:
        return cls.config_class.model_validate({**given, "labels": None})
    except ValidationError as exc:
        valid = ", ".join(sorted(k for k in cls.config_class.model_fields if k != "labels"))
        unknown = [e for e in exc.errors() if e["type"] == "extra_forbidden"]
        detail = validation_message(exc)
        if unknown:
            detail += f" ({cls.name} takes: {valid or 'no options'})"
        raise ConfigError(f"{cls.name}: invalid method_config: {detail}") from None


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
    # the method's default: its config class's `labels` default, else its class default
    default = cls.config_class.model_fields["labels"].default or cls.default_labels
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


def resolve_spec(config: RunConfig, *, prefer_labels: str | None = None) -> RunSpec:
    """Resolve `config` (flags, file, environment and defaults already layered) once.

    Args:
        config: the run config (see `veracity.runtime.resolve_config`).
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
    )


# RunConfig keys a spec takes over as they are
_PLAIN_KEYS = {
    "name", "description", "variant", "method", "sources", "prompts", "limits",
    "concurrency", "seed", "dataset", "split", "dataset_options", "gold_evidence",
    "gold_map", "limit", "sample", "sample_per_class", "repeats", "data_dir", "stand_in",
    "document",
}  # fmt: skip


def read_spec(run_dir: str | Path) -> RunSpec:
    """The spec a run directory recorded (``spec.json``).

    Raises:
        ConfigError: the directory has no spec (runs made before specs were recorded:
            rerun with ``--config RUN_DIR/config.json``), or it cannot be read.
    """
    path = Path(run_dir) / SPEC_FILE
    if not path.is_file():
        raise ConfigError(
            f"{run_dir} records no run spec ({SPEC_FILE}); a run made before specs were "
            "recorded can be rerun from its config.json with --config"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read it: {exc}") from None
    spec = record.get("spec") if isinstance(record, dict) else None
    try:
        return RunSpec.from_json(spec)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


__all__ = [
    "SPEC_FILE",
    "RunSpec",
    "method_config_of",
    "read_spec",
    "resolve_labels",
    "resolve_spec",
]
