"""The environment, read here and nowhere else: the ``VERACITY_*`` variables as one typed
snapshot (`Environment`), which the composition root passes down as values.

`environment()` reads it (again on each call, so tests and CLIs can change the
variables); everything below `veracity.runtime` takes paths, switches and model settings
as arguments (the import contract checks that no module there reads a ``VERACITY_*``
variable). The variables:

- ``VERACITY_HOME`` (models, caches, indexes; default ``~/.cache/veracity``),
  ``VERACITY_MODELS_DIR`` (models elsewhere), ``VERACITY_DATA_DIR`` (benchmark data;
  default ``HOME/datasets``);
- ``VERACITY_OFFLINE`` (``1``, ``true`` or ``yes``: no network probes or downloads);
- the model settings, a run's ``llm:`` layer below its file and flags:
  ``VERACITY_LLM`` (backend), ``_MODEL``, ``_BASE_URL``, ``_PROVIDER``, ``_API_KEY_ENV``,
  ``_CACHE_MODE``, ``_MAX_CONCURRENCY``, ``_AUTO_PULL``, ``_THREADS``, ``_USER_CACHE``.

The server's own variables (``VERACITY_SERVER_*``) are read by its settings, a front end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from veracity.core.bounds import Concurrency
from veracity.core.config import KeyEnvName
from veracity.core.errors import ConfigError
from veracity.core.infra import CacheMode
from veracity.core.paths import HomePaths

# Environment field -> the ``llm:`` key it sets
_LLM_KEYS = {
    "llm": "backend", "model": "model", "base_url": "base_url", "provider": "provider",
    "api_key_env": "api_key_env", "cache_mode": "cache_mode",
    "max_concurrency": "max_concurrency", "auto_pull": "auto_pull", "threads": "n_threads",
    "user_cache": "user_cache",
}  # fmt: skip


def _default_home() -> Path:
    return Path.home() / ".cache" / "veracity"


class Environment(BaseSettings):
    """The ``VERACITY_*`` variables, typed (a snapshot: `environment()` reads a new one)."""

    model_config = SettingsConfigDict(env_prefix="VERACITY_", extra="ignore", frozen=True)

    home: Path = Field(default_factory=_default_home)  # models, caches, indexes
    models_dir_override: Path | None = Field(default=None, alias="VERACITY_MODELS_DIR")
    data_dir: Path | None = None  # benchmark data; see `default_data_dir`
    offline: bool = False  # no network probes or downloads
    # The model settings: None means "not set in the environment". Their defaults live
    # once, in `LLMConfig` (shared options) and in each backend's options model.
    llm: Literal["embedded", "openai"] | None = None
    model: str | None = None
    base_url: str | None = None
    provider: str | None = None
    api_key_env: KeyEnvName | None = None
    cache_mode: CacheMode | None = None
    max_concurrency: Concurrency | None = Field(default=None, ge=1)
    auto_pull: bool | None = None
    threads: Concurrency | None = Field(default=None, ge=1)  # llama.cpp threads
    user_cache: bool | None = None  # runs read deterministic replies through the user cache

    @field_validator("offline", mode="before")
    @classmethod
    def _offline(cls, value: Any) -> bool:
        # only these words turn it on; anything else (0, no, off, a typo) leaves it off
        return str(value).strip().lower() in ("1", "true", "yes")

    @property
    def models_dir(self) -> Path:
        return self.models_dir_override or self.home / "models"

    @property
    def indexes_dir(self) -> Path:
        return self.home / "indexes"

    @property
    def paths(self) -> HomePaths:
        """The home folder and the folders under it."""
        return HomePaths(home=self.home, models_override=self.models_dir_override)

    @property
    def default_data_dir(self) -> Path:
        """Where `veracity datasets get` puts benchmarks: ``VERACITY_DATA_DIR`` if set,
        else ``VERACITY_HOME/datasets``. The folder need not exist yet."""
        return self.data_dir if self.data_dir is not None else self.home / "datasets"

    def llm_settings(self) -> dict[str, Any]:
        """The ``llm:`` keys the environment sets (nothing else): a run's model layer
        below its file and flags (`veracity.core.config.LLMConfig.layered`)."""
        values = {key: getattr(self, name) for name, key in _LLM_KEYS.items()}
        return {k: v for k, v in values.items() if v is not None}


def environment() -> Environment:
    """The environment now.

    Raises:
        ConfigError: a ``VERACITY_*`` variable holds a value it cannot (one line).
    """
    from pydantic import ValidationError

    from veracity.core.config import validation_message

    try:
        return Environment()
    except ValidationError as exc:
        raise ConfigError(f"VERACITY_* environment: {validation_message(exc)}") from None


def default_data_dir(env: Environment | None = None) -> Path:
    """`Environment.default_data_dir` of `env` (default: the environment now)."""
    return (env or environment()).default_data_dir


def data_dir(explicit: str | Path | None = None, env: Environment | None = None) -> Path:
    """Where benchmark data lives: the explicit argument, else the environment's.

    Raises:
        ConfigError: that folder does not exist (the message says how to fill it).
    """
    env = env or environment()
    root = Path(explicit) if explicit is not None else env.default_data_dir
    if root.is_dir():
        return root
    origin = (
        "given"
        if explicit is not None
        else "VERACITY_DATA_DIR"
        if env.data_dir is not None
        else "the default, VERACITY_HOME/datasets"
    )
    raise ConfigError(
        f"no benchmark data directory at {root} ({origin}); download a benchmark with "
        "`veracity datasets get NAME` (`veracity datasets` lists them), or point "
        "VERACITY_DATA_DIR at a folder that holds them"
    )


__all__ = ["Environment", "data_dir", "default_data_dir", "environment"]
