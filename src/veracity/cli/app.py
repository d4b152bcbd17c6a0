"""The Typer application and small shared helpers for command modules."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from veracity.redaction import strip_credentials

app = typer.Typer(
    name="veracity",
    help="Check claims, news articles and social-media posts with retrieval-grounded, "
    "multi-agent LLM reasoning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
PROCESS = {"owned": False}
"""``owned`` is set by `veracity.cli.main`: the command line is the program, so a command
may end the process at once (``os._exit``); in-process callers (tests, notebooks) leave it
unset."""

console = Console(stderr=True)  # progress and messages; results go to stdout
out = Console()


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a clear error and exit non-zero."""
    # escaped: a message quoting input ("[/INST]", "[E1]") is text, not console markup
    console.print(f"[bold red]error:[/] {escape(strip_credentials(message))}")
    raise typer.Exit(code)
