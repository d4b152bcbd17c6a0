"""Helpers shared by the CLI commands: the model and source options, input errors,
model pulls (progress lines are in `veracity.cli.progress`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from pydantic import ValidationError

from veracity.cli.app import console, fail
from veracity.core.errors import ConfigError, EngineError, ModelNotAvailable

if TYPE_CHECKING:
    from veracity.runtime.spec import LLMSpec


# The options every model-using command takes: declared once, so help and spelling agree.
MODEL_OPTION = typer.Option(
    None, help="model: catalog name or GGUF path (embedded), or the endpoint's model id"
)
BASE_URL_OPTION = typer.Option(None, help="OpenAI-compatible endpoint URL")
PROVIDER_OPTION = typer.Option(
    None, help="endpoint preset: openai, deepseek, vllm, ollama, llamacpp, lmstudio"
)
SOURCE_OPTION = typer.Option(
    None,
    "--source",
    "-s",
    metavar="NAME=TYPE",
    help="evidence source NAME=TYPE[:ARG], e.g. web=duckduckgo, web=local:INDEX, "
    "wikipedia (repeatable; see `veracity sources`)",
)


def parse_source_options(specs: list[str]) -> dict[str, dict[str, Any]]:
    """``NAME=TYPE[:ARG]`` options into a sources mapping (see `--source`).

    ``local:X`` names index X, ``web:X`` the web engine X; a bare ``NAME`` uses the
    source type of that name with its defaults.
    """
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        name, _, rest = spec.partition("=")
        name = name.strip()
        if not name:
            raise ConfigError(f"--source {spec!r}: give NAME=TYPE, e.g. web=duckduckgo")
        kind, _, arg = (rest or name).partition(":")
        options: dict[str, Any] = {"type": kind.strip()}
        if arg:
            key = {"local": "index", "web": "engine", "recorded": "path"}.get(options["type"])
            if key is None:
                raise ConfigError(f"--source {spec!r}: {options['type']!r} takes no ':' argument")
            options[key] = arg.strip()
        out[name] = options
    return out


def parse_set_options(specs: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` options into method settings (``method_config``), see `--set`.

    VALUE is read as YAML (``3``, ``0.5``, ``true``, ``[a, b]``, or plain text); a dotted
    KEY sets a nested setting (``corpus.index=mydocs``).
    """
    import yaml

    out: dict[str, Any] = {}
    for spec in specs:
        key, sep, raw = spec.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--set {spec!r}: give KEY=VALUE, e.g. --set rounds=2")
        try:
            value = yaml.safe_load(raw) if raw.strip() else ""
        except yaml.YAMLError:
            value = raw
        *parents, leaf = key.strip().split(".")
        node = out
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {spec!r}: {part!r} is set twice, once as a value")
        node[leaf] = value
    return out


def pull_notice(model: str) -> str:
    """One short line (under 80 columns for the catalogue's names), so that a terminal
    never breaks it inside a phrase: the model, that it is fetched once, and its size."""
    from veracity.runtime.rules import catalogue_size

    size_b = catalogue_size(model)
    size = f", {size_b / 1e6:.0f} MB" if size_b is not None else ""
    return f"pulling model {model} (first use only{size})"


def ensure_model(llm: LLMSpec) -> None:
    """Pull a run's embedded catalogue model (`llm`, its resolved model) up front, before
    the run builds its backend, so the user sees a progress bar."""
    from veracity.runtime.service import model_to_pull

    if model_to_pull(llm) is not None:
        if getattr(llm.options, "auto_pull", True) is False:
            fail(f"model {llm.model} is not downloaded; run `veracity models pull {llm.model}`", 3)
        console.print(pull_notice(llm.model), style="yellow", markup=False, soft_wrap=True)
        from veracity.cli.models import pull_with_progress

        try:
            pull_with_progress(llm.model)
        except ModelNotAvailable as exc:
            fail(str(exc), code=3)


ENGINE_HELP = "where examples are checked: local (this process) or ray (a Ray cluster)"
RAY_ADDRESS_HELP = "Ray cluster to join (auto, HOST:6379, ray://HOST:10001); default: start one"
WORKERS_HELP = "Ray worker processes, each building the method once (default 2)"
LLM_LIMIT_HELP = "most live LLM calls in flight across all Ray workers (default: per worker)"


def engine_for(
    engine: str, ray_address: str | None, workers: int | None, llm_limit: int | None
) -> Any:
    """The engine the ``--engine`` options name (None: the local default).

    Raises:
        ConfigError: an unknown engine, Ray options given to the local engine, or
            ``ray`` without its extra (checked here, before a run creates anything).
    """
    if engine == "local":
        given = [f for f, v in (("--ray-address", ray_address), ("--workers", workers),
                                ("--llm-limit", llm_limit)) if v is not None]  # fmt: skip
        if given:
            raise ConfigError(f"{', '.join(given)} go with --engine ray")
        return None
    if engine != "ray":
        raise ConfigError(f"--engine {engine!r}: use local or ray")
    from veracity.evaluation.ray_engine import RayEngine, RayOptions, require_ray

    try:
        require_ray()
    except EngineError as exc:
        raise ConfigError(str(exc)) from None
    options = {"address": ray_address, "workers": workers, "llm_limit": llm_limit}
    try:
        return RayEngine(RayOptions(**{k: v for k, v in options.items() if v is not None}))
    except ValidationError as exc:
        flag = {"address": "--ray-address", "workers": "--workers", "llm_limit": "--llm-limit"}
        why = "; ".join(
            f"{flag.get(str(e['loc'][0]), e['loc'][0])}: {e['msg']}" for e in exc.errors()
        )
        raise ConfigError(why) from None


def check_flag(flag: str, value: Any, model: type, field: str) -> None:
    """Check the value of `flag` against the field of `model` that bounds it (the bound
    is declared once, beside the field; `veracity.core.bounds`), for a flag whose value
    does not pass through that model on its way (``batch --kind document
    --concurrency``, ``calibrate radar --concurrency``).

    Raises:
        ConfigError: one line naming the flag and the bound.
    """
    if value is None:
        return
    from pydantic import TypeAdapter

    info = model.model_fields[field]
    kind = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    try:
        TypeAdapter(kind).validate_python(value)
    except ValidationError as exc:
        reason = "; ".join(e["msg"] for e in exc.errors())
        raise ConfigError(f"{flag}: {reason}") from None
