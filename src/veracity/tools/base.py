"""Tools an agent can call: the protocol, observations, and tools over evidence sources.

A tool has a name, a description a model can use, a pydantic model of its arguments
(whose JSON schema is what a model, or an MCP client, sees) and an async ``call``
returning an `Observation`: the text shown to the model, the documents behind it and,
when the call failed, the error. A failing tool never raises into the agent loop: the
failure is an observation the model can react to (and an ``error`` in the trace).

The same tool objects are called in-process or served over MCP (`veracity.mcp`), and
`Observation` is the structured content of an MCP tool result, so both paths give the
model the same text.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.types import Document
from veracity.prompting import truncate_chars
from veracity.retrieval.base import Query, Source, SourceAuthError, SourceError
from veracity.retrieval.guards import guard_query

TOOL_NAME_CHARS = "letters, digits and underscores"


class Observation(BaseModel):
    """What a tool returned: text for the model, the documents behind it, any error."""

    model_config = ConfigDict(extra="forbid")

    text: str
    documents: list[Document] = Field(default_factory=list)
    error: str | None = None


@runtime_checkable
class Tool(Protocol):
    """A callable tool (see the module docstring)."""

    name: str
    description: str
    input_model: type[BaseModel]

    async def call(self, arguments: BaseModel) -> Observation: ...


class SearchInput(BaseModel):
    """Arguments of a search tool."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=300, description="a short keyword query")


def render_documents(docs: Sequence[Document], max_chars: int = 500) -> str:
    """Documents as observation text: ``[id] title: text`` lines (each text cut)."""
    if not docs:
        return "(no results)"
    return "\n".join(
        f"[{d.id}] {d.title + ': ' if d.title else ''}{truncate_chars(d.text, max_chars)}"
        for d in docs
    )


def failure(exc: BaseException, what: str = "call") -> Observation:
    """The observation of a failed tool call (the model sees the reason)."""
    return Observation(text=f"({what} failed: {exc})", error=f"{type(exc).__name__}: {exc}")


class SourceTool:
    """A search tool over an evidence source.

    Args:
        source: the source.
        name: tool name shown to the model (letters, digits, underscores).
        description: what the tool is good for.
        top_k: results per search.
        max_chars: each result's text is cut to this length in the observation.
        before: evidence cutoff applied to every search (the claim's date).
    """

    input_model = SearchInput

    def __init__(
        self,
        source: Source,
        name: str,
        description: str,
        *,
        top_k: int = 3,
        max_chars: int = 500,
        before: _dt.date | None = None,
    ):
        self.source = source
        self.name = name
        self.description = description
        self.top_k = top_k
        self.max_chars = max_chars
        self.before = before

    async def call(self, arguments: BaseModel) -> Observation:
        return await self.run(str(getattr(arguments, "query", "")))

    async def run(self, tool_input: str) -> Observation:
        """Search for `tool_input` (the plain-string form used by the ReAct baseline)."""
        if not tool_input.strip():
            return Observation(text="(empty search query)", error="empty query")
        query = guard_query(Query(text=tool_input, top_k=self.top_k, before=self.before))
        try:
            docs = await self.source.search(query)
        except SourceAuthError:
            raise
        except SourceError as exc:  # the model sees the failure and may try another tool
            return Observation(text=f"(search failed: {exc})", error=str(exc))
        return Observation(text=render_documents(docs, self.max_chars), documents=docs)


def tool_spec(tool: Tool) -> dict[str, Any]:
    """Name, description and JSON input schema of a tool (what a model is shown)."""
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": tool.input_model.model_json_schema(),
    }


def primary_argument(tool: Tool) -> str | None:
    """The tool's single required string argument, if it has exactly one (e.g. ``query``)."""
    fields = tool.input_model.model_fields
    required = [n for n, f in fields.items() if f.is_required()]
    if len(required) == 1 and fields[required[0]].annotation is str:
        return required[0]
    return None
