"""The server operator's settings: where jobs are kept, limits, auth, what callers may pick.

Read from ``VERACITY_SERVER_*`` environment variables (e.g. ``VERACITY_SERVER_TOKEN``),
then `veracity serve` flags. The run config the server starts from (model, sources,
default method) is an ordinary run YAML (`veracity.core.config.RunConfig`); callers choose
among what it offers and cannot add to it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from veracity.core.bounds import Bytes, Items, Seconds
from veracity.core.netguard import ANY_HOST, split_host
from veracity.runtime.environment import environment
from veracity.server.retention import RetentionPolicy


class ServerSettings(BaseSettings):
    """How the server runs.

    Attributes:
        host: interface to bind (loopback by default; a public bind needs a token).
        port: TCP port.
        data_dir: jobs, events and verdicts (SQLite, WAL); default
            ``$VERACITY_HOME/server``.
        run_config: a run YAML the server starts from (llm, sources, method, labels).
        token: a bearer token every API call must carry (None: no auth).
        workers: checks that run at once.
        queue_size: checks that may wait; a submission beyond it gets 429.
        rate_per_minute: requests per minute per client (0: no limit).
        rate_burst: requests a client may make at once before the rate applies.
        max_body_bytes: largest request body accepted.
        cors_origins: origins allowed to call the API from a browser (none by default).
        allowed_hosts: host names the server answers to besides localhost, IP addresses
            and the bind address (``name`` or ``name:port``; ``*`` for any). Other
            ``Host`` headers get 421 (DNS rebinding). From the environment as a comma-
            separated list or a JSON list.
        allowed_models: models a caller may choose instead of the configured one.
        allow_method_config: whether callers may pass ``method_config`` overrides.
        max_document_sentences: the most sentences a document check may read (a request's
            ``extraction.max_sentences`` above it is refused with 422).
        history_limit: the most jobs one history page lists.
        retention_days: finished checks older than this are deleted (0: kept forever).
        retention_mb: the job database's data is kept under this many megabytes by
            deleting the oldest finished checks (0: no limit).
        retention_interval_s: how often the server prunes (it also prunes at start).
    """

    model_config = SettingsConfigDict(env_prefix="VERACITY_SERVER_", extra="ignore")

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    data_dir: Path | None = None
    run_config: Path | None = None
    token: SecretStr | None = None
    workers: int = Field(default=2, ge=1, le=64)
    queue_size: int = Field(default=32, ge=1, le=10_000)
    rate_per_minute: int = Field(default=120, ge=0, le=1_000_000)
    rate_burst: int = Field(default=30, ge=1, le=1_000_000)
    max_body_bytes: Bytes = Field(default=1_000_000, ge=1_024)
    cors_origins: list[str] = Field(default_factory=list)
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    allowed_models: list[str] = Field(default_factory=list)
    allow_method_config: bool = False
    max_document_sentences: int = Field(default=100, ge=1, le=1000)
    history_limit: Items = Field(default=200, ge=1)
    retention_days: float = Field(default=30.0, ge=0, le=36_500)  # 100 years
    retention_mb: float = Field(default=1000.0, ge=0, le=100_000_000)  # 100 TB
    retention_interval_s: Seconds = Field(default=600.0, ge=1)

    @field_validator("token")
    @classmethod
    def _token(cls, v: SecretStr | None) -> SecretStr | None:
        if v is not None and not v.get_secret_value().strip():
            return None  # an empty variable means no token, not an empty one
        return v

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _hosts(cls, v: Any) -> Any:
        if isinstance(v, str):  # from the environment
            text = v.strip()
            v = json.loads(text) if text.startswith("[") else text.replace(",", " ").split()
        if isinstance(v, list):
            for entry in v:
                named = isinstance(entry, str) and entry.strip() not in ("", ANY_HOST)
                if named and split_host(entry) is None:
                    raise ValueError(f"{entry!r} is not a host name (name or name:port)")
        return v

    @property
    def database(self) -> Path:
        """The SQLite file holding jobs, events and verdicts."""
        base = self.data_dir or environment().home / "server"
        return base / "jobs.sqlite"

    @property
    def retention(self) -> RetentionPolicy:
        """What the job database keeps (`veracity.server.retention`)."""
        return RetentionPolicy(max_age_days=self.retention_days, max_mb=self.retention_mb)

    @property
    def auth(self) -> bool:
        return self.token is not None
