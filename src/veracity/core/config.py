"""Per-run configuration.

Layers, later ones winning: built-in defaults, the ``VERACITY_*`` environment, a per-run
YAML file (`RunConfig`), its variant, the command-line flags. Nothing here reads the
environment: `veracity.runtime.environment` does, and `veracity.runtime.layered_config`
passes its model settings in (`LLMConfig.layered`). Every config model forbids unknown
keys, so a typo in a YAML file is an error rather than a silently ignored option.
Secrets are never stored in config: a config names the environment variable that holds
an API key.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from veracity.core.bounds import (
    Attempts,
    Concurrency,
    ContextWindow,
    Examples,
    Items,
    Price,
    PromptChars,
    RepeatPenalty,
    Repeats,
    Seconds,
    Seed,
)
from veracity.core.errors import ConfigError, InputError, problem_text
from veracity.core.infra import CacheMode, default_concurrency
from veracity.core.limits import InputLimits
from veracity.core.paper_table import PaperRow, PaperTable
from veracity.core.textio import MAX_CONFIG_BYTES, decode_text, read_file_limited

# What `api_key_env` may name: an upper-case variable whose name says it holds a key or a
# token (OPENAI_API_KEY, HF_TOKEN, MY_KEY). The model's endpoint gets its value as a bearer
# key, so a run file must not be able to send HOME, PATH or a cloud credential to the
# endpoint it names (and a recorded spec that names an endpoint or a key variable runs
# only when the user says so: `veracity eval --spec DIR --trust-spec`).
KEY_ENV_PATTERN = re.compile(r"^[A-Z][A-Z0-9_]{0,63}_(KEY|TOKEN)$")
# credentials that are never an LLM endpoint's bearer key (AWS signs its requests)
_NOT_KEY_PREFIXES = ("AWS_",)


def check_key_env_name(name: str) -> str:
    """`name` if it may name the variable that holds an API key (`KEY_ENV_PATTERN`).

    Raises:
        ValueError: it does not look like a key's variable.
    """
    if not KEY_ENV_PATTERN.match(name) or name.startswith(_NOT_KEY_PREFIXES):
        raise ValueError(
            f"{name!r} does not name an API key variable: use an upper-case name ending in "
            "_KEY or _TOKEN (e.g. OPENAI_API_KEY), not a cloud credential (AWS_...)"
        )
    return name


# An environment variable holding an API key (validated once, here)
KeyEnvName = Annotated[str, AfterValidator(check_key_env_name)]


DEFAULT_MODEL = "smollm2-135m"  # the embedded catalog model a run uses when none is named

# The keys that say which model answers; a file that names its own backend or endpoint
# takes none of them from the environment (the rest, e.g. cache mode, still apply).
_IDENTITY_KEYS = ("backend", "model", "base_url", "provider", "api_key_env")
# Options of one backend (None: not given; the backend's options model holds the
# defaults and the ranges, see `veracity.llm.embedded.EmbeddedOptions` and
# `veracity.llm.openai_compat.EndpointOptions`).
BACKEND_OPTION_KEYS = (
    "provider", "base_url", "api_key_env", "json_mode", "logprobs", "context_window",
    "timeout_s", "n_ctx", "n_parallel", "n_threads", "poll", "auto_pull", "repeat_penalty",
    "slot_cache", "slots", "slot_wait_chars",
)  # fmt: skip


class LLMConfig(BaseModel):
    """Which model to use and how to call it, as a run file or the flags give it.

    The shared options (cache, concurrency, retries, prices) have their defaults here. The
    backend options are None when not given: each backend declares its own options model
    with their defaults and ranges, and `veracity.runtime.spec` resolves them into the
    run's spec (a key the chosen backend does not take is an error there).
    """

    model_config = ConfigDict(extra="forbid")

    backend: str = "embedded"  # a registered backend (`veracity.llms`): embedded, openai
    model: str = DEFAULT_MODEL  # catalog name or GGUF path (embedded); model id (openai)
    # openai-compatible endpoints
    provider: str | None = None
    base_url: str | None = None
    api_key_env: KeyEnvName | None = None  # see `KEY_ENV_PATTERN`
    json_mode: Literal["json_schema", "json_object", "none"] | None = None
    logprobs: bool | None = None
    context_window: ContextWindow | None = None
    slot_cache: bool | None = None  # whether the server keeps prompts per slot
    slots: Concurrency | None = None  # a llama.cpp server's slot count: requests placed by prefix
    # per-request limit in seconds; None: scaled by max_tokens and the measured speed
    timeout_s: Seconds | None = None
    # embedded llama.cpp
    n_ctx: ContextWindow | None = None
    n_parallel: Concurrency | None = None
    n_threads: Concurrency | None = Field(default=None, ge=1)  # None: half the cores, at least 1
    poll: Items | None = None
    auto_pull: bool | None = None
    slot_wait_chars: PromptChars | None = None  # wait for the slot holding a prefix (0: never)
    # penalty on recently generated tokens (embedded, and endpoints that take it)
    repeat_penalty: RepeatPenalty | None = None
    # options of a plugin backend (checked by that backend's options model)
    options: dict[str, Any] = Field(default_factory=dict)
    # shared behaviour
    cache_mode: CacheMode = "auto"
    # a run directory's cache reads temperature-0 replies through the user-level cache
    # (and adds its own), so the same run elsewhere asks the model nothing again
    user_cache: bool = True
    max_concurrency: Concurrency = Field(default=4, ge=1)
    max_attempts: Attempts = Field(default=4, ge=1)
    prices: dict[str, tuple[Price, Price] | tuple[Price, Price, Price]] = Field(
        default_factory=dict
    )

    def backend_options(self) -> dict[str, Any]:
        """The backend options given (not None), `options` included."""
        given = {k: getattr(self, k) for k in BACKEND_OPTION_KEYS if getattr(self, k) is not None}
        return {**given, **self.options}

    @classmethod
    def layered(cls, given: Mapping[str, Any], environment: Mapping[str, Any]) -> LLMConfig:
        """`given` (a file's ``llm:`` section, or the keys a config set) over the
        environment's model settings (`veracity.runtime.environment.Environment.llm_settings`)
        over the defaults.

        A section that names its own backend or endpoint takes no model identity from the
        environment (backend, model, endpoint, key variable), so an endpoint from the
        environment never leaks into a file's different backend; the other environment
        settings (cache mode, concurrency, threads, ...) still apply.
        """
        env = dict(environment)
        if {"backend", "base_url", "provider"} & set(given):
            env = {k: v for k, v in env.items() if k not in _IDENTITY_KEYS}
        return cls().merged(env).merged(given)

    @staticmethod
    def section(given: Mapping[str, Any]) -> dict[str, Any]:
        """A ``llm:`` section as given: keys set to None are "not given", and naming an
        endpoint (`base_url`, `provider`) without a `backend` selects the OpenAI-compatible
        one (the rule of `merged`)."""
        data = {k: v for k, v in given.items() if v is not None}
        if ("base_url" in data or "provider" in data) and "backend" not in data:
            data["backend"] = "openai"  # naming an endpoint means using it
        return data

    def given(self) -> dict[str, Any]:
        """The keys this config was given (not those left at their defaults)."""
        return self.model_dump(include=self.model_fields_set)

    def merged(self, overrides: Mapping[str, Any]) -> LLMConfig:
        """A copy with `overrides` (None: not given) applied.

        The one rule for endpoints: giving `base_url` or `provider` without a `backend`
        selects the OpenAI-compatible backend; giving a different `backend` alone drops
        an endpoint that belonged to the old one.
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        data = self.model_dump()
        data.update(given)
        if ("base_url" in given or "provider" in given) and "backend" not in given:
            data["backend"] = "openai"  # naming an endpoint means using it
        try:
            return LLMConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"llm: {validation_message(exc)}") from exc


class Variant(BaseModel):
    """Overrides of one variant; mappings (method_config, llm, sources) are merged."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    method: str | None = None
    method_config: dict[str, Any] = Field(default_factory=dict)
    # false: start from an empty method_config instead of the base's (a variant that runs
    # another method, e.g. a baseline, whose config does not take the base method's keys)
    inherit_method_config: bool = True
    llm: dict[str, Any] = Field(default_factory=dict)
    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    dataset: str | None = None
    split: str | None = None
    limit: Examples | None = None
    labels: str | None = None
    gold_map: dict[str, str] | None = None
    sample: bool | None = None
    sample_per_class: Examples | None = None
    seed: Seed | None = None  # the seed of the variant's sample (sample, sample_per_class)
    dataset_options: dict[str, Any] | None = None  # the loader's options (e.g. HoVer num_hops)
    repeats: Repeats | None = None
    stand_in: str | None = None
    gold_evidence: bool | None = None
    document: dict[str, Any] | None = None  # the document task's settings, replaced whole


class PromptsConfig(BaseModel):
    """Prompt overrides for the run's method (see `veracity.prompting`).

    Attributes:
        dir: a folder of templates; a file named like one of the method's templates
            (e.g. ``judge.j2``) replaces it.
        templates: template name -> file, replacing single templates (wins over `dir`).
        claims: template name -> file for the shared claim-extraction stage
            (``claims_window.j2``; in sentence mode ``claims_decompose.j2``,
            ``claims_decontextualise.j2``, ``claims_checkworthy.j2``), used by document
            checks and by the methods that extract claims (SAFE, FacTool, FactCheck-GPT).
    """

    model_config = ConfigDict(extra="forbid")

    dir: str | None = None
    templates: dict[str, str] = Field(default_factory=dict)
    claims: dict[str, str] = Field(default_factory=dict)


class RunConfig(BaseModel):
    """Everything one run needs; one YAML file reproduces a run.

    A plain run file sets `method`, `method_config`, `llm`, `sources`; an experiment file
    (``configs/experiments/``) is the same schema with the evaluation keys (`dataset`,
    `split`, `limit`, ...), `variants` (named overrides: ablations, other columns of a
    table) and `paper` (the table as printed). `veracity check` and `veracity eval`
    accept either; command-line flags always override the file (`with_overrides`).

    The method's label space is `labels` and only that (a ``labels`` key inside
    `method_config` is refused when the run resolves, saying so).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = ""
    description: str = ""
    method: str = "direct"
    method_config: dict[str, Any] = Field(default_factory=dict)
    labels: str | None = None
    llm: LLMConfig = Field(default_factory=LLMConfig)  # the environment's: `layered_config`
    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    prompts: PromptsConfig = Field(default_factory=PromptsConfig)
    limits: InputLimits = Field(default_factory=InputLimits)  # what a check shows the model
    # evaluation
    dataset: str | None = None
    dataset_options: dict[str, Any] = Field(default_factory=dict)  # extra loader arguments
    # Give each example's gold evidence to the method (Claim.evidence): the papers'
    # "full evidence" settings. Off by default: methods retrieve their own evidence.
    gold_evidence: bool = False
    gold_map: dict[str, str] | None = None
    split: str | None = None
    limit: Examples | None = None
    sample: bool = False  # with limit: a seeded random sample instead of the first N
    # a balanced sample: this many examples of each gold class (seeded; all of a smaller
    # class), instead of `limit`
    sample_per_class: Examples | None = Field(default=None, ge=1)
    seed: Seed = 0
    # evaluate this many times, with seeds seed, seed + 1, ...; each repeat is a run
    # directory of its own (RUN_DIR/repeat-K) and the spread is in RUN_DIR/repeats.json
    repeats: Repeats = Field(default=1, ge=1)
    # examples checked at once (LLM calls at once: llm.max_concurrency); default: the
    # core count, 2 to 8 (docs/performance.md)
    concurrency: Concurrency = Field(default_factory=default_concurrency, ge=1)
    data_dir: str | None = None
    stand_in: str | None = None
    # the document task (a dataset of documents: find, check and score their claims):
    # `veracity.evaluation.document_task.DocumentTaskConfig`, validated when a run starts;
    # None (the default, also in runs made before it existed): the task's defaults
    document: dict[str, Any] | None = None
    # experiments
    variant: str | None = None
    variants: dict[str, Variant] = Field(default_factory=dict)
    paper: PaperTable | None = None

    @model_validator(mode="before")
    @classmethod
    def _llm_section(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        if isinstance(data.get("llm"), Mapping):  # the environment's layer: `layered_config`
            data = {**data, "llm": LLMConfig.section(data["llm"])}
        return data

    @model_validator(mode="after")
    def _rows_name_variants(self) -> RunConfig:
        if self.paper is not None:
            unknown = {r.variant for r in self.paper.rows} - set(self.variants) - {None}
            if unknown:
                raise ValueError(f"paper rows name unknown variants: {sorted(unknown)}")
        if self.variant is not None and self.variant not in self.variants:
            raise ValueError(f"variant {self.variant!r} is not one of {sorted(self.variants)}")
        return self

    def with_variant(self, name: str | None) -> RunConfig:
        """A copy with variant `name` applied (None: the base run, unchanged)."""
        if name is None:
            return self
        if name not in self.variants:
            known = ", ".join(sorted(self.variants)) or "none"
            label = self.name or "config"
            raise ConfigError(f"{label} has no variant {name!r} (variants: {known})")
        v = self.variants[name]
        update = {k: getattr(v, k) for k in VARIANT_KEYS if getattr(v, k) is not None}
        update.update(method_config=v.method_config, llm=v.llm, sources=v.sources, variant=name)
        base = self if v.inherit_method_config else self.model_copy(update={"method_config": {}})
        try:
            return base.with_overrides(update)
        except ConfigError as exc:
            raise ConfigError(f"variant {name!r}: {exc}") from exc

    def with_overrides(self, overrides: Mapping[str, Any]) -> RunConfig:
        """A copy with `overrides` applied; None values mean "not given".

        Top-level keys replace; `method_config` and `sources` are merged by key; `llm`
        keys are merged with `LLMConfig.merged` (naming an endpoint selects the OpenAI-
        compatible backend).
        """
        given = {k: v for k, v in overrides.items() if v is not None}
        data = self.model_dump()
        for key, value in given.items():
            if key in ("method_config", "sources", "limits"):
                data[key] = {**data[key], **value}
            elif key == "llm":
                data["llm"] = self.llm.merged(value).model_dump()
            else:
                data[key] = value
        try:
            return RunConfig.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(validation_message(exc)) from exc

    def paper_rows(self) -> list[PaperRow]:
        return self.paper.rows_for(self.variant) if self.paper else []


# A variant's keys that replace the run's (the rest are merged, or describe the variant);
# `Variant` is the one list
VARIANT_KEYS = tuple(
    k
    for k in Variant.model_fields
    if k not in ("description", "method_config", "inherit_method_config", "llm", "sources")
)


def validation_message(exc: ValidationError) -> str:
    """A config's pydantic error as ``field.path: message`` parts (`errors.problem_text`),
    an unknown key named as such."""
    return problem_text(exc, unknown="unknown key (not one of this section's options)")


def load_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        raw = read_file_limited(p, MAX_CONFIG_BYTES, "config file")
        text = decode_text(raw, f"config file {p}")
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping")
    return data


# --------------------------------------------------------------------------- run-file paths
#
# A run file (and a recorded spec, `veracity.runtime.spec.read_spec`) is data that may come
# from someone else: the paths in it resolve against its own folder, never the working
# directory, and may not leave that folder. A path-valued option is known by its key, at
# any depth (``data_dir``, ``dataset_options.path``, ``sources.NAME.path``,
# ``method_config.memory.path``, ``mcp_servers[].cwd``, ...), or by its place (the files of
# ``prompts.templates`` and ``prompts.claims``). Paths given on the command line or in
# Python are the user's own and are not confined.

_PATH_KEYS = frozenset({"path", "dir", "cwd", "folder", "file"})
_PATH_SUFFIXES = ("_path", "_dir", "_file", "_folder")
# keys that hold a name, or a path when the value looks like one (has a separator)
_NAME_OR_PATH_KEYS = frozenset({"index", "checkpoint"})
_PATH_MAPS = (("prompts", "templates"), ("prompts", "claims"))  # name -> file


def is_path_option(key: str, value: Any, trail: tuple[str, ...] = ()) -> bool:
    """Whether the option `key` (under `trail`, the keys above it) holds a file path."""
    if not isinstance(value, str) or not value:
        return False
    if trail[-2:] in _PATH_MAPS:
        return True
    if key in _PATH_KEYS or key.endswith(_PATH_SUFFIXES):
        return True
    if key in _NAME_OR_PATH_KEYS:
        return "/" in value or "\\" in value or value.startswith(("~", "."))
    return False


def confine_paths(data: Any, folder: Path) -> tuple[Any, list[tuple[str, str]]]:
    """`data` (a run file's or a spec's values) with every path option resolved against
    `folder`, and the options whose path leaves it (``..``, an absolute path elsewhere, a
    symbolic link pointing out), as (dotted option, resolved path)."""
    root = folder.resolve()
    outside: list[tuple[str, str]] = []

    def walk(value: Any, trail: tuple[str, ...]) -> Any:
        if isinstance(value, dict):
            out = {}
            for k, v in value.items():
                if is_path_option(str(k), v, trail):
                    p = Path(v).expanduser()
                    real = (p if p.is_absolute() else root / p).resolve()
                    if not real.is_relative_to(root):
                        outside.append((".".join((*trail, str(k))), str(real)))
                    out[k] = str(real)
                else:
                    out[k] = walk(v, (*trail, str(k)))
            return out
        if isinstance(value, list):
            return [walk(v, (*trail, str(i))) for i, v in enumerate(value)]
        return value

    return walk(data, ()), outside


def given_keys(flags: Mapping[str, Any] | None) -> set[str]:
    """The dotted options command-line `flags` set (None: not given), e.g. ``data_dir``,
    ``llm.base_url``: what a run file or spec says for them is not used."""
    out: set[str] = set()
    for key, value in (flags or {}).items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            out |= {f"{key}.{k}" for k, v in value.items() if v is not None}
        else:
            out.add(key)
    return out


def is_given(option: str, given: set[str]) -> bool:
    """Whether `option` (dotted) or an option above it is in `given` (`given_keys`)."""
    parts = option.split(".")
    return any(".".join(parts[:n]) in given for n in range(1, len(parts) + 1))


def load_run_config(
    path: str | Path, *, given: Mapping[str, Any] | None = None, **overrides: Any
) -> RunConfig:
    """Read a run or experiment YAML; `overrides` that are not None win (see
    `RunConfig.with_overrides`).

    Paths in the file resolve against the file's folder and may not leave it (see
    `confine_paths`), except those the command line replaces (`given`: the flags, applied
    later by the caller).

    Raises:
        ConfigError: the file does not fit the schema, or a path in it leaves its folder.
    """
    cfg = run_config_from(load_yaml(path), path, given={**(given or {}), **overrides})
    return cfg.with_overrides(overrides) if overrides else cfg


def run_config_from(
    data: dict[str, Any], path: str | Path, *, given: Mapping[str, Any] | None = None
) -> RunConfig:
    """`data`, read from the file at `path` (a run file, or a run directory's record), as a
    `RunConfig`; its paths resolve against the file's folder and may not leave it, except
    those `given` (the flags) replaces.

    Raises:
        ConfigError: the data does not fit the schema, or a path in it leaves its folder.
    """
    data, outside = confine_paths(data, Path(path).parent)
    replaced = given_keys(given)
    outside = [(key, where) for key, where in outside if not is_given(key, replaced)]
    if outside:
        names = "; ".join(f"{key} = {where}" for key, where in outside)
        raise ConfigError(
            f"{path}: {names}: outside the run file's folder {Path(path).parent.resolve()}; "
            "a run file may only name files in its own folder (move them there, or give the "
            "path on the command line)"
        )
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {validation_message(exc)}") from exc
