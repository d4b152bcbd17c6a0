"""The evidence layer served as MCP tools (``veracity mcp tools``).

Every tool of `veracity.tools.evidence_tools` over the configured sources — searches,
Wikipedia browsing, page fetch — with its JSON input schema and description. A call's
result carries the observation as text and, as structured content, the observation
(text, documents, error) plus the searches the call made (so a client can account for
them) — see `veracity.tools.mcp_client`, which applies the evaluation guards and the
bound claim a call sends in its ``_meta``.

Sources are built through `veracity.runtime.managed_sources`, from a `ToolServerSpec`.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from pathlib import Path
from typing import Any

import mcp_types as types
from pydantic import Field, ValidationError

from veracity.core import context
from veracity.core.errors import ConfigError, SourceAuthError, SourceError
from veracity.retrieval.base import Source
from veracity.runtime import CachePaths, managed_sources
from veracity.tools.base import Observation, Tool, failure
from veracity.tools.evidence import evidence_tools
from veracity.tools.launch import SERVER_NAME, ToolServerSpec
from veracity.tools.mcp_client import applied_meta

log = logging.getLogger("veracity.mcp")


class ToolResult(Observation):
    """Structured content of a tool result."""

    searches: list[dict[str, Any]] = Field(default_factory=list)
    errors: list[dict[str, Any]] = Field(default_factory=list)


def sources_from_spec(spec: ToolServerSpec) -> dict[str, Source]:
    """The sources a spec names, built by the composition root.

    Raises:
        ConfigError: a source cannot be built.
    """
    caches = CachePaths(http=Path(spec.http_cache)) if spec.http_cache else None
    return managed_sources(spec.sources, caches, cache_mode=spec.cache_mode)


def tools_from_spec(spec: ToolServerSpec, sources: dict[str, Source] | None = None) -> list[Tool]:
    """The tools a spec describes (over `sources`, else the sources it names).

    Raises:
        ConfigError: a source cannot be built.
    """
    sources = sources_from_spec(spec) if sources is None else sources
    return evidence_tools(
        sources,
        top_k=spec.top_k,
        max_chars=spec.max_chars,
        page_chars=spec.page_chars,
        fetch_pages=spec.fetch_pages,
    )


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


async def run_tool(tool: Tool, arguments: dict[str, Any], meta: Any = None) -> ToolResult:
    """Call `tool` as one check and collect the searches and errors it recorded.

    Raises:
        ValidationError: the arguments do not fit the tool.
        SourceAuthError: a source rejected its credentials.
    """
    args = tool.input_model.model_validate(arguments)
    check = context.CheckContext()
    with context.check_context(check), applied_meta(meta):
        try:
            observation = await tool.call(args)
        except SourceAuthError:
            raise
        except SourceError as exc:
            observation = failure(exc, tool.name)
    return ToolResult(
        **observation.model_dump(),
        searches=[{"name": e.name, **e.data} for e in check.trace.of_kind("search")],
        errors=[{"name": e.name, **e.data} for e in check.trace.of_kind("error")],
    )


def build_tool_server(tools: list[Tool], name: str = SERVER_NAME) -> Any:
    """A low-level MCP `Server` offering `tools`."""
    from mcp.server import Server

    by_name = {t.name: t for t in tools}
    output_schema = ToolResult.model_json_schema()
    listed = [
        types.Tool(
            name=t.name,
            description=t.description,
            input_schema=t.input_model.model_json_schema(),
            output_schema=output_schema,
        )
        for t in tools
    ]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            return _error_result(f"unknown tool {params.name!r}; tools: {', '.join(by_name)}")
        try:
            result = await run_tool(tool, dict(params.arguments or {}), ctx.meta)
        except ValidationError as exc:
            return _error_result(f"bad arguments for {tool.name}: {_brief(exc)}")
        except SourceAuthError as exc:
            return _error_result(f"{tool.name}: credentials rejected: {exc}")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)],
            structured_content=result.model_dump(mode="json"),
        )

    def schema_of(tool_name: str) -> dict[str, Any] | None:
        tool = by_name.get(tool_name)
        return tool.input_model.model_json_schema() if tool else None

    return Server(
        name,
        version=_version(),
        instructions="Evidence tools of veracity: searches, Wikipedia browsing, page fetch.",
        get_tool_input_schema=schema_of,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _brief(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e['loc']) or '(arguments)'}: {e['msg']}"
        for e in exc.errors()[:5]
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("veracity")
    except PackageNotFoundError:
        return "0"


def load_spec(text: str | None, sources: dict[str, dict[str, Any]] | None) -> ToolServerSpec:
    """A spec from ``--spec`` JSON, or from ``--source`` options.

    Raises:
        ConfigError: the JSON does not fit, or no sources are given.
    """
    try:
        spec = ToolServerSpec.model_validate_json(text) if text else ToolServerSpec()
    except (ValidationError, ValueError) as exc:
        raise ConfigError(f"--spec: {exc}") from exc
    if sources:
        spec = spec.model_copy(update={"sources": {**spec.sources, **sources}})
    if not spec.sources:
        raise ConfigError("the tool server needs sources: give --source NAME=TYPE or --spec")
    return spec


def load_in_background(sources: dict[str, Source]) -> threading.Thread:
    """Load now, in a daemon thread, what the sources would load on their first search:
    a local index, and the embedding model of one searched with embeddings. The server
    answers meanwhile; a search that comes first waits for the same load (the index's own
    lock), so nothing is loaded twice. A failure is left for that search to report."""

    def load() -> None:
        for source in sources.values():
            inner = getattr(source, "inner", source)
            loader = getattr(inner, "load", None)
            if not callable(loader):
                continue
            try:
                index = loader()
                mode = getattr(getattr(inner, "config", None), "mode", None)
                if (mode or index.manifest.default_mode) != "bm25":
                    index.embedder().embed(["a first query"])  # loads the model
            except Exception as exc:  # the first search reports it, with its context
                log.debug("loading %s ahead of its first search: %s", source.name, exc)

    thread = threading.Thread(target=load, name="veracity-source-load", daemon=True)
    thread.start()
    return thread


def main(argv: list[str] | None = None) -> int:
    """``python -m veracity.mcp.tool_server --spec JSON``: serve the tools over stdio.

    What agents launch (`veracity.methods.mermaid.executor.tool_server_config`): the same
    server as ``veracity mcp tools --spec``, without the command line's imports, so it is
    up sooner. A spec that does not fit is one line on stderr and exit status 2.
    """
    import argparse
    import asyncio
    import sys

    parser = argparse.ArgumentParser(prog="python -m veracity.mcp.tool_server")
    parser.add_argument("--spec", required=True, help="a tool-server spec as JSON")
    args = parser.parse_args(argv)
    try:
        spec = load_spec(args.spec, None)
        sources = sources_from_spec(spec)
        built = tools_from_spec(spec, sources)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    load_in_background(sources)
    from veracity.mcp.transport import serve_stdio

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve_stdio(build_tool_server(built)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
