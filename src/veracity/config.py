"""Settings and per-run configuration.

Three layers, later ones winning: built-in defaults, environment variables ``VERACITY_*``
(`Settings`), and a per-run YAML file (`RunConfig`). Every config model forbids unknown
keys, so a typo in a YAML file is an error rather than a silently ignored option.
Secrets are never stored in config: a config names the environment variable that holds
an API key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict

from veracity.llm.cache import CacheMode


class ConfigError(ValueError):
    """A configuration that cannot be used, with a message saying what to change."""


def _default_home() -> Path:
    return Path.home() / ".cache" / "veracity"


class Settings(BaseSettings):
    """Process-wide settings from ``VERACITY_*`` environment variables."""

    model_config = SettingsConfigDict(env_prefix="VERACITY_", extra="ignore")

    home: Path = Field(default_factory=_default_home)  # models, caches, indexes
    models_dir_override: Path | None = Field(default=None, alias="VERACITY_MODELS_DIR")
    data_dir: Path | None = None  # benchmark data; see `data_dir()`
    llm: Literal["embedded", "openai"] = "embedded"
    model: str = "smollm2-135m"
    base_url: str | None = None
    provider: str | None = None
    api_key_env: str | None = None
    cache_mode: CacheMode = "auto"
    max_concurrency: int = 4
    auto_pull: bool = True

    @property
    def models_dir(self) -> Path:
        return self.models_dir_override or self.home / "models"

    @property
    def cache_path(self) -> Path:
        return self.home / "cache" / "llm.sqlite"

    @property
    def indexes_dir(self) -> Path:
        return self.home / "indexes"


def settings() -> Settings:
    """Current settings (re-read each call so tests and CLIs can change the environment)."""
    return Settings()


def data_dir(explicit: str | Path | None = None) -> Path:
    """Where benchmark data lives.

    Order: the explicit argument, ``VERACITY_DATA_DIR``, then ``../shared/data`` beside
    the working directory or beside the source checkout.

    Raises:
        ConfigError: none of these exists.
    """
    candidates: list[Path] = []
    if explicit is not None:
        candidates.append(Path(explicit))
    env = settings().data_dir
    if env is not None:
        candidates.append(env)
    if explicit is None and env is None:
        candidates.append(Path.cwd().parent / "shared" / "data")
        candidates.append(Path(__file__).resolve().parents[3] / "shared" / "data")
    for c in candidates:
        if c.is_dir():
            return c
    tried = ", ".join(str(c) for c in candidates)
    raise ConfigError(f"no benchmark data directory found (tried {tried}); set VERACITY_DATA_DIR")


class LLMConfig(BaseModel):
    """Which model to use and how to call it."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["embedded", "openai"] = "embedded"
    model: str = "smollm2-135m"  # catalog name or GGUF path (embedded); model id (openai)
    # openai-compatible endpoints
    provider: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    json_mode: Literal["json_schema", "json_object", "none"] | None = None
    logprobs: bool | None = None
    context_window: int | None = None
    timeout_s: float = 120.0
    # embedded llama.cpp
    n_ctx: int = 8192  # tokens per request; each parallel slot has its own
    n_parallel: int = 4
    n_threads: int | None = None
    auto_pull: bool = True
    repeat_penalty: float = 1.1  # llama.cpp repetition penalty; 1.0 turns it off
    # shared behaviour
    cache_mode: CacheMode = "auto"
    max_concurrency: int = 4
    max_attempts: int = 4
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict)

    @classmethod
    def from_settings(cls, s: Settings | None = None, **overrides: Any) -> LLMConfig:
        s = s or settings()
        base: dict[str, Any] = {
            "backend": s.llm,
            "model": s.model,
            "cache_mode": s.cache_mode,
            "max_concurrency": s.max_concurrency,
            "auto_pull": s.auto_pull,
        }
        for name in ("provider", "base_url", "api_key_env"):
            if getattr(s, name) is not None:
                base[name] = getattr(s, name)
        base.update({k: v for k, v in overrides.items() if v is not None})
        if (base.get("base_url") or base.get("provider")) and overrides.get("backend") is None:
            base["backend"] = "openai"  # naming an endpoint means using it
        return cls.model_validate(base)


class RunConfig(BaseModel):
    """Everything one run needs; one YAML file reproduces a run."""

    model_config = ConfigDict(extra="forbid")

    method: str = "direct"
    method_config: dict[str, Any] = Field(default_factory=dict)
    llm: LLMConfig = Field(default_factory=LLMConfig)
    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    dataset: str | None = None
    dataset_options: dict[str, Any] = Field(default_factory=dict)  # extra loader arguments
    # Give each example's gold evidence to the method (Claim.evidence): the papers'
    # "full evidence" settings. Off by default: methods retrieve their own evidence.
    gold_evidence: bool = False
    split: str | None = None
    limit: int | None = None
    seed: int = 0
    concurrency: int = 4
    data_dir: str | None = None


def load_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file not found: {p}")
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{p}: the top level must be a mapping")
    return data


def load_run_config(path: str | Path, **overrides: Any) -> RunConfig:
    data = load_yaml(path)
    data.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
