"""The Typer application and small shared helpers for command modules."""

from __future__ import annotations

from typing import NoReturn

import typer
from rich.console import Console
from typer.core import TyperOption

_type_column = TyperOption.display_type_rich


def _flag_type_column(self: TyperOption, ctx):  # type: ignore[no-untyped-def]
    """The help's type column, left empty for on/off flags (Typer prints ``<bool>``)."""
    return None if self.is_flag else _type_column(self, ctx)


TyperOption.display_type_rich = _flag_type_column  # type: ignore[method-assign]

app = typer.Typer(
    name="veracity",
    help="Check claims, news articles and social-media posts with retrieval-grounded, "
    "multi-agent LLM reasoning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
console = Console(stderr=True)  # progress and messages; results go to stdout
out = Console()


def _version(show: bool) -> None:
    if show:
        from importlib.metadata import version

        out.print(f"veracity {version('veracity')}")
        raise typer.Exit()


@app.callback()
def _main(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="print the version and exit"
    ),
) -> None:
    """Check claims, news articles and social-media posts with retrieval-grounded,
    multi-agent LLM reasoning."""


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a clear error and exit non-zero."""
    console.print(f"[bold red]error:[/] {message}", soft_wrap=True)  # commands stay whole
    raise typer.Exit(code)
