"""`veracity mcp`: veracity as an MCP server; `veracity mcp tools`: the evidence tools."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import typer

from veracity.cli.app import PLAIN, app, fail
from veracity.cli.common import (
    BASE_URL_OPTION,
    MODEL_OPTION,
    PROVIDER_OPTION,
    SOURCE_OPTION,
    parse_source_options,
)
from veracity.core.errors import ConfigError

mcp_app = typer.Typer(
    help="Serve veracity over the Model Context Protocol (stdio by default).",
    invoke_without_command=True,
    no_args_is_help=False,
    **PLAIN,  # type: ignore[arg-type]
)
app.add_typer(mcp_app, name="mcp")

_HTTP = typer.Option(False, "--http", help="serve streamable HTTP (at /mcp) instead of stdio")
_HOST = typer.Option("127.0.0.1", help="address for --http (non-loopback needs a token)")
_PORT = typer.Option(8765, min=0, max=65535, help="port for --http")
_TOKEN = typer.Option(
    "VERACITY_MCP_TOKEN",
    "--token-env",
    help="environment variable holding the bearer token --http requires (unset: no token)",
)
_ALLOW_HOST = typer.Option(
    None,
    "--allow-host",
    help="a host name --http answers to besides localhost and IP addresses (repeatable)",
)
_PUBLIC = typer.Option(
    False,
    "--allow-public-without-token",
    help="--http on a non-loopback address with no token: anyone who reaches it can use it",
)


def _serve(
    server: object,
    http: bool,
    host: str,
    port: int,
    token_env: str,
    allow_host: list[str] | None = None,
    allow_public: bool = False,
) -> None:
    from veracity.mcp.transport import serve_http, serve_stdio

    try:
        if http:
            token = os.environ.get(token_env) or None
            asyncio.run(
                serve_http(
                    server,
                    host=host,
                    port=port,
                    token=token,
                    allowed_hosts=allow_host or (),
                    allow_public=allow_public,
                    token_env=token_env,
                )
            )
        else:
            asyncio.run(serve_stdio(server))
    except ConfigError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        pass


@mcp_app.callback()
def serve(
    ctx: typer.Context,
    config: Path = typer.Option(None, help="run YAML (method, method_config, llm, sources)"),
    method: str = typer.Option(None, "--method", "-m", help="default method of `check`"),
    labels: str = typer.Option(None, help="default label space of `check`"),
    model: str = MODEL_OPTION,
    base_url: str = BASE_URL_OPTION,
    provider: str = PROVIDER_OPTION,
    source: list[str] = SOURCE_OPTION,
    http: bool = _HTTP,
    host: str = _HOST,
    port: int = _PORT,
    token_env: str = _TOKEN,
    allow_host: list[str] = _ALLOW_HOST,
    allow_public_without_token: bool = _PUBLIC,
) -> None:
    """Serve veracity's tools: check, search_evidence, list_methods, list_sources."""
    if ctx.invoked_subcommand is not None:
        return
    from veracity.mcp.server import build_server
    from veracity.runtime import layered_config

    flags = {
        "method": method,
        "labels": labels,
        "llm": {"model": model, "base_url": base_url, "provider": provider},
        "sources": parse_source_options(source or []) or None,
    }
    try:
        cfg = layered_config(config, flags=flags)
    except ConfigError as exc:
        fail(str(exc))
    _serve(build_server(cfg), http, host, port, token_env, allow_host, allow_public_without_token)


@mcp_app.command("tools")
def tools(
    spec: str = typer.Option(None, help="a tool-server spec as JSON (what agents launch)"),
    source: list[str] = SOURCE_OPTION,
    http: bool = _HTTP,
    host: str = _HOST,
    port: int = _PORT,
    token_env: str = _TOKEN,
    allow_host: list[str] = _ALLOW_HOST,
    allow_public_without_token: bool = _PUBLIC,
) -> None:
    """Serve the evidence layer as MCP tools (searches, Wikipedia browsing, page fetch)."""
    from veracity.mcp.tool_server import build_tool_server, load_spec, tools_from_spec

    try:
        options = parse_source_options(source or [])
        built = tools_from_spec(load_spec(spec, options))
    except ConfigError as exc:
        fail(str(exc))
    _serve(
        build_tool_server(built),
        http,
        host,
        port,
        token_env,
        allow_host,
        allow_public_without_token,
    )
