"""`veracity serve`: the REST API and web UI."""

from __future__ import annotations

from pathlib import Path

import typer

from veracity.cli.app import app, console, fail
from veracity.cli.common import ensure_model
from veracity.core.errors import ConfigError, DirLocked


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
    retention_days: float = typer.Option(
        None, help="delete finished checks older than this many days, 0 to keep (default 30)"
    ),
    retention_mb: float = typer.Option(
        None,
        help="keep the job database under this many MB, oldest checks going first; "
        "0 for no limit (default 1000)",
    ),
    allow_host: list[str] = typer.Option(
        None,
        "--allow-host",
        help="a host name the server answers to besides localhost and IP addresses, e.g. "
        "its public name behind a proxy (repeatable; * for any)",
    ),
    allow_public_without_token: bool = typer.Option(
        False,
        "--allow-public-without-token",
        help="serve on a non-loopback address with no token: anyone who reaches it can "
        "use the server",
    ),
) -> None:
    """Serve the REST API (/v1, docs at /docs) and the web UI (/).

    Set VERACITY_SERVER_TOKEN to require a bearer token (a non-loopback --host needs
    one); other settings also come from VERACITY_SERVER_* variables.
    """
    from pydantic import ValidationError  # imported here: --help stays quick

    try:
        from veracity.server import ServerSettings, create_app
        from veracity.server.runner import check_public_bind
        from veracity.server.runner import serve as run_server
        from veracity.server.store import data_dir_lock
    except ImportError as exc:
        from veracity.core.extras import install_command

        fail(f"the server needs its extra: {install_command('server')} ({exc})")
    given = {
        "host": host, "port": port, "run_config": config, "data_dir": data_dir,
        "workers": workers, "queue_size": queue_size, "rate_per_minute": rate_per_minute,
        "allowed_models": allow_model or None, "cors_origins": cors_origin or None,
        "retention_days": retention_days, "retention_mb": retention_mb,
        "allowed_hosts": allow_host or None,
    }  # fmt: skip
    from veracity.runtime import layered_config, resolve_llm
    from veracity.runtime.service import error_text

    try:
        settings = ServerSettings(**{k: v for k, v in given.items() if v is not None})
        public = check_public_bind(settings, allow_public_without_token)
        data_dir_lock(settings.database).ensure_free()  # before anything says "serving"
        run_config = layered_config(settings.run_config)  # the YAML is read here, once
        application = create_app(settings, run_config=run_config)
        model = resolve_llm(run_config.llm)  # pulled below, before the server loads it
    except (ConfigError, ValidationError, DirLocked) as exc:
        fail(error_text(exc))
    if public:
        from veracity.core.netguard import public_warning

        console.print(public_warning(settings.host, settings.port), style="bold red")
    ensure_model(model)
    console.print(f"veracity: serving on http://{settings.host}:{settings.port}")
    run_server(
        application, settings.host, settings.port,
        allow_public_without_token=allow_public_without_token,
    )  # fmt: skip
