"""What veracity's own evidence tool server is started with, and how to start it.

An agent whose tools speak MCP launches ``veracity mcp tools --spec <json>`` over stdio
(`server_config`). The spec names the sources to build in that process — each one's
config entry, as `veracity.runtime` recorded it on the source (`ManagedSource.spec`) —
the HTTP cache they share with the run, and how tool observations are cut.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.bounds import PromptChars
from veracity.core.errors import MethodConfigError
from veracity.retrieval.base import Source
from veracity.tools.mcp_client import McpServerConfig

SERVER_NAME = "evidence"


class ToolServerSpec(BaseModel):
    """Everything the evidence tool server builds its tools from."""

    model_config = ConfigDict(extra="forbid")

    sources: dict[str, dict[str, Any]] = Field(default_factory=dict)
    http_cache: str | None = None
    cache_mode: str = "auto"
    top_k: int = Field(default=3, ge=1, le=50)
    max_chars: PromptChars = Field(default=500, ge=50)
    page_chars: PromptChars = Field(default=3000, ge=200)
    fetch_pages: bool | None = None

    @classmethod
    def from_sources(cls, sources: Mapping[str, Source], **options: Any) -> ToolServerSpec:
        """The spec rebuilding `sources` in the server process.

        Raises:
            MethodConfigError: a source was made in code, not from config, so another
                process cannot build it (use in-process tools for it).
        """
        entries: dict[str, dict[str, Any]] = {}
        cache, mode = None, "auto"
        for name, source in sources.items():
            spec = getattr(source, "spec", None)
            if not spec:
                raise MethodConfigError(
                    f"source {name!r} was not built from a config, so the MCP tool server "
                    "cannot build it; use `tool_transport: inprocess` for such sources"
                )
            entries[name] = dict(spec["options"])
            cache = cache or spec.get("http_cache")
            mode = spec.get("cache_mode") or mode
        return cls(sources=entries, http_cache=cache, cache_mode=mode, **options)

    def server_config(self, *, timeout_s: float = 120.0) -> McpServerConfig:
        """The stdio launch of ``veracity mcp tools`` with this spec (plain tool names)."""
        return McpServerConfig(
            name=SERVER_NAME,
            command=sys.executable,
            args=["-m", "veracity", "mcp", "tools", "--spec", json.dumps(self.model_dump())],
            prefix="",
            inherit_env=True,
            timeout_s=timeout_s,
        )
