"""Helpers shared by the CLI commands: source options, input errors, model pulls."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from veracity.cli.app import console, fail
from veracity.errors import ConfigError, ModelNotAvailable

if TYPE_CHECKING:
    from veracity.config import LLMConfig


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


MEMORY_MODES = ("on", "off", "read-only")


def with_memory_mode(cfg: Any, mode: str | None) -> Any:
    """`cfg` with MERMAID's evidence memory switched to `mode` (``--memory``), keeping
    the config's other memory options.

    Raises:
        ConfigError: an unknown mode, or a method without an evidence memory.
    """
    if mode is None:
        return cfg
    if mode not in MEMORY_MODES:
        raise ConfigError(f"--memory must be one of {', '.join(MEMORY_MODES)}, not {mode!r}")
    current = cfg.method_config.get("memory") or {}
    if isinstance(current, str):
        current = {"mode": current}
    return cfg.with_overrides({"method_config": {"memory": {**current, "mode": mode}}})


def input_message(exc: Exception) -> str:
    from pydantic import ValidationError

    if isinstance(exc, ValidationError):
        return "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
    return str(exc)


def ensure_model(cfg: LLMConfig) -> None:
    """Pull the embedded default model up front so the user sees a progress bar."""
    if cfg.backend != "embedded":
        return
    from veracity.config import settings
    from veracity.llm import models as catalog

    if cfg.model in catalog.CATALOG and not catalog.is_pulled(cfg.model, settings().models_dir):
        if not cfg.auto_pull:
            fail(f"model {cfg.model} is not downloaded; run `veracity models pull {cfg.model}`", 3)
        console.print(
            f"[yellow]model {cfg.model} is not downloaded yet; pulling it now "
            "(one time, about 100 MB)[/]"
        )
        from veracity.cli.models import pull_with_progress

        try:
            pull_with_progress(cfg.model)
        except ModelNotAvailable as exc:
            fail(str(exc), code=3)
