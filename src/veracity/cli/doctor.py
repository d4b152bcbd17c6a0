"""`veracity doctor`."""

from __future__ import annotations

from pathlib import Path

import typer

from veracity.cli.app import app, fail, out
from veracity.core.errors import ConfigError


@app.command()
def doctor(
    config: Path = typer.Option(None, help="check the model and sources of this run config"),
    network: bool = typer.Option(
        True, "--network/--offline", help="probe endpoints and sources over the network"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the findings as JSON"),
) -> None:
    """Check the environment (model, caches, disk, keys, a test search of each web engine
    and source, the default index) and say what to fix."""
    from veracity.cli.plain_listing import finding_lines, width_of
    from veracity.doctor import diagnose
    from veracity.runtime import layered_config

    try:
        cfg = layered_config(config)
    except ConfigError as exc:
        fail(str(exc))
    findings = diagnose(cfg, network=network)
    if as_json:
        out.print_json(data=[f.model_dump() for f in findings])
    else:
        for line in finding_lines(findings, width_of(out)):
            out.print(line, soft_wrap=True)
    if any(f.status == "fail" for f in findings):
        raise typer.Exit(1)
