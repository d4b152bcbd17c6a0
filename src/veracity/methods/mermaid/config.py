"""MERMAID's configuration (Cao et al., MERMAID: a memory-enhanced multi-agent framework
for veracity assessment).

Defaults are the paper's where it gives them, with the paper's symbol in a comment.
Ablations (no memory, no decomposer, tool subsets, in-process tools) are values of these
fields, set by the variants of ``configs/experiments/mermaid_*.yaml``; the single-agent
comparison is the ``mermaid_single`` method.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from veracity.core.bounds import MaxTokens, PromptChars, Seconds
from veracity.methods.base import MethodConfig
from veracity.methods.config import refuse_own_variant
from veracity.tools.mcp_client import McpServerConfig

MemoryMode = Literal["on", "off", "read-only"]
Retention = Literal["relevant", "all"]
_NAME = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"


class MemoryOptions(BaseModel):
    """The long-term evidence memory M.

    Attributes:
        mode: ``on`` (recall, replay, update), ``read-only`` (recall and replay, never
            store) or ``off``.
        path: the SQLite file (default: the run's state folder in an evaluation, else
            ``<VERACITY_HOME>/memory/evidence.sqlite``).
        name: a named memory, ``<VERACITY_HOME>/memory/<name>.sqlite``, shared by every
            run that names it (one model builds it, another reads it: the paper's proxy
            memory); its namespace defaults to ``default``. Reading one (``read-only``)
            that holds no evidence is a configuration error. Not with `path`.
        namespace: the memory's namespace (default: the evaluation's ``dataset/split``,
            else ``default``).
        retain: what the update step stores: ``relevant`` (the evidence the executor
            judged relevant to the claim once the check is over, section 3.3) or ``all``
            (every document every tool call returned).
        embedder: embeds entity names for similar-name recall (None: exact and
            normalised names only).
        similarity_threshold: cosine above which an entity name counts as the same.
        max_recalled: most recalled items put into P_0 (M_c).
        max_per_entity: most recalled items per entity.
        replay_searches: answer a tool call identical to a remembered one from memory.
        ttl_s: evidence older than this is not recalled (None: kept for ever).
    """

    model_config = ConfigDict(extra="forbid")

    mode: MemoryMode = "on"
    path: Path | None = None
    name: str | None = Field(default=None, pattern=_NAME)
    namespace: str | None = None
    retain: Retention = "relevant"  # "valid evidence ... retained" (§3.3)
    embedder: str | None = "all-MiniLM-L6-v2"
    similarity_threshold: float = Field(default=0.8, ge=0.0, le=1.0)
    max_recalled: int = Field(default=8, ge=1, le=100)
    max_per_entity: int = Field(default=5, ge=1, le=100)
    replay_searches: bool = True
    ttl_s: Seconds | None = Field(default=None, gt=0)

    @model_validator(mode="after")
    def _one_location(self) -> MemoryOptions:
        if self.name is not None and self.path is not None:
            raise ValueError("give the memory a path or a name, not both")
        return self


class MermaidConfig(MethodConfig):
    """Settings of MERMAID (decomposer + ReAct executor + evidence memory)."""

    request_options = (
        "decompose", "max_steps", "temperature", "history_overflow", "top_k", "top_logprobs",
        "decomposer_attempts",
    )  # fmt: skip

    # --- decomposer D
    decompose: bool = True  # False: the executor only, memory keyed by NER (Table 3)

    # --- executor
    max_steps: int = Field(default=5, ge=1, le=30)  # T_max = 5
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: MaxTokens = Field(default=512, ge=64)  # per step reply
    max_thought_chars: PromptChars = Field(default=400, ge=50)  # a step's thought
    max_history_chars: PromptChars = Field(default=6000, ge=500)  # H_t shown in P_t
    history_overflow: Literal["summarise", "drop"] = "summarise"  # oldest observations first
    max_input_chars: PromptChars = Field(default=4000, ge=200)
    top_logprobs: int = Field(default=10, ge=0, le=20)

    decomposer_attempts: int = Field(default=3, ge=1, le=6)

    # --- toolset τ
    tools: list[str] | None = None  # tool subset by name (None: all; []: no tools at all)
    tool_transport: Literal["stdio", "inprocess"] = "stdio"  # our tool server over MCP
    mcp_servers: list[McpServerConfig] = Field(default_factory=list)  # external servers
    tool_timeout_s: Seconds = Field(default=120.0, gt=0)
    top_k: int = Field(default=3, ge=1, le=20)  # results per search
    max_result_chars: PromptChars = Field(default=500, ge=50)  # each result in an observation
    page_chars: PromptChars = Field(default=3000, ge=200)  # article / page text in an observation
    fetch_pages: bool | None = None  # offer fetch_page (None: when a web source is set)

    # --- memory M
    memory: MemoryOptions = Field(default_factory=MemoryOptions)
    max_recalled_chars: PromptChars = Field(default=2500, ge=200)  # M_c shown in P_0

    @model_validator(mode="before")
    @classmethod
    def _memory_shorthand(cls, data: Any) -> Any:
        data = refuse_own_variant("mermaid", data, MOVED_VARIANTS, default="full")
        if isinstance(data, dict) and isinstance(data.get("memory"), str):
            data = {**data, "memory": {"mode": data["memory"]}}
        return data


# the names MERMAID's `variant` option took, now experiment variants (name -> file; "full",
# the default, which older runs recorded, is dropped)
MOVED_VARIANTS = {"no_memory": "mermaid_figure3", "no_decomposer": "mermaid_table3"}
