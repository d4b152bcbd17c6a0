"""`veracity serve`: the REST API and web UI."""

from __future__ import annotations

from pathlib import Path

import typer

from veracity.cli.app import app, console, fail, styled
from veracity.cli.common import ensure_model, input_message
from veracity.errors import ConfigError


@app.command()
def serve(
    host: str = typer.Option(None, help="interface to bind (default 127.0.0.1)"),
    port: int = typer.Option(None, help="TCP port (default 8000)"),
    config: Path = typer.Option(
        None, help="run YAML the server offers: llm, sources, default method and labels"
    ),
    data_dir: Path = typer.Option(
        None, help="where jobs, events and verdicts are kept (default $VERACITY_HOME/server)"
    ),
    workers: int = typer.Option(None, help="checks that run at once (default 2)"),
    queue_size: int = typer.Option(None, help="checks that may wait (default 32)"),
    rate_per_minute: int = typer.Option(
        None, help="requests per minute per client, 0 for no limit (default 120)"
    ),
    allow_model: list[str] = typer.Option(
        None, "--allow-model", help="a model callers may choose (repeatable)"
    ),
    cors_origin: list[str] = typer.Option(
        None, "--cors-origin", help="an origin allowed to call the API from a browser (repeatable)"
    ),
) -> None:
    """Serve the REST API (/v1, docs at /docs) and the web UI (/).

    Set VERACITY_SERVER_TOKEN to require a bearer token; other settings also come from
    VERACITY_SERVER_* variables.
    """
    from pydantic import ValidationError  # imported here: --help stays quick

    try:
        from veracity.server import ServerSettings, create_app
        from veracity.server.runner import serve as run_server
    except ImportError as exc:
        from veracity.extras import install_command

        fail(f"the server needs its extra: {install_command('server')} ({exc})")
    given = {
        "host": host, "port": port, "run_config": config, "data_dir": data_dir,
        "workers": workers, "queue_size": queue_size, "rate_per_minute": rate_per_minute,
        "allowed_models": allow_model or None, "cors_origins": cors_origin or None,
    }  # fmt: skip
    try:
        settings = ServerSettings(**{k: v for k, v in given.items() if v is not None})
        application = create_app(settings)
    except (ConfigError, ValidationError) as exc:
        fail(input_message(exc))
    if settings.host not in ("127.0.0.1", "localhost", "::1") and not settings.auth:
        console.print(
            styled(
                "[yellow]warning:[/] serving on {} without a token; "
                "set VERACITY_SERVER_TOKEN to require one",
                settings.host,
            )
        )
    from veracity.runtime import resolve_config

    ensure_model(resolve_config(settings.run_config).llm)
    console.print(f"veracity: serving on http://{settings.host}:{settings.port}")
    run_server(application, settings.host, settings.port)
