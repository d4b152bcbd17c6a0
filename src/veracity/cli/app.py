"""The Typer application and small shared helpers for command modules.

Command modules import only what declaring their options needs at the top (typer, the
standard library, this module) and the rest inside the commands, so ``veracity --help``
and every ``--help`` start without loading numpy, pydantic models, HTTP clients or the
model layer (see `tests/unit/test_cli_startup.py`).
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer
from typer.core import TyperGroup

from veracity.core.errors import StorageError

if TYPE_CHECKING:
    import click
    from rich.console import Console
    from rich.text import Text


_DISK_FAULTS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO)
_DISK_FIX = "free some disk space, or point veracity at a writable disk with room (VERACITY_HOME)"


class WrappingGroup(TyperGroup):
    """A command group whose help lists each subcommand with its whole first sentence,
    wrapped to the terminal's width (click cuts it to one line, ending in "...")."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is not None and not command.hidden:
                rows.append((name, command.get_short_help_str(limit=10_000)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; a storage fault (a damaged store, a read-only folder, a full
        disk) ends it with its one-line message and exit status 3, whatever the command."""

        try:
            return super().invoke(ctx)
        except StorageError as exc:
            fail(str(exc), code=3)
        except OSError as exc:  # raised where no store named its file
            if exc.errno not in _DISK_FAULTS:
                raise
            from veracity.core.storage import storage_error

            where = Path(str(exc.filename or ""))
            what = "folder" if where.is_dir() or not where.suffix else "file"
            fault = storage_error(exc, where, what) if exc.filename else None
            fail(str(fault) if fault else f"{exc.strerror}: {_DISK_FIX}", code=3)


class CommandLine(WrappingGroup):
    """The ``veracity`` group: the built-in commands, then those that installed packages
    add through the ``veracity.commands`` entry points (`veracity.cli.plugins`), each
    loaded when named or listed; ``check`` and ``eval`` get the packages' run options."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from veracity.cli.plugins import plugin_commands

        return sorted(set(super().list_commands(ctx)) | set(plugin_commands(self).names()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        from veracity.cli import plugins

        command = super().get_command(ctx, cmd_name)
        if command is None:
            return plugins.plugin_commands(self).get(cmd_name)
        plugins.add_run_options(command)
        return command


# Plain (click) help and errors: typer's rich formatting imports rich's markdown stack,
# which more than doubles the start-up time of every --help. Every group is a
# WrappingGroup, so that no description is cut.
PLAIN = {"rich_markup_mode": None, "cls": WrappingGroup}

app = typer.Typer(
    name="veracity",
    help="Check claims, news articles and social-media posts with retrieval-grounded, "
    "multi-agent LLM reasoning.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    **{**PLAIN, "cls": CommandLine},  # type: ignore[arg-type]
)


class _LazyConsole:
    """A `rich.console.Console` made on first use (rich takes ~50 ms to import)."""

    def __init__(self, **options: Any):
        self._options = options
        self._console: Console | None = None

    def real(self) -> Console:
        """The console itself (made now if not yet)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def forget(self) -> None:
        """Drop the console, so the next use makes one for the terminal as it is then
        (rich fixes the width when the console is made; one process running many
        commands, as a test run does, changes COLUMNS between them)."""
        self._console = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real(), name)

    def __enter__(self) -> Console:
        return self.real().__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.real().__exit__(*exc)


PROCESS = {"owned": False}
"""``owned`` is set by `veracity.cli.main`: the command line is the program, so a command
may end the process at once (``os._exit``); in-process callers (tests, notebooks) leave it
unset."""

# Neither console reads markup or emoji codes in what it prints: a string, a table cell, a
# title is shown as it is spelled, so text from outside (claims, passages, titles, model
# replies, file names) can never restyle the output, open a link or crash the renderer
# ("[/INST]"). A line styled by us goes through `styled`, which fills its fields as text.
_PLAIN_TEXT = {"markup": False, "emoji": False}
console: Console = _LazyConsole(stderr=True, **_PLAIN_TEXT)  # type: ignore[assignment]  # messages
out: Console = _LazyConsole(**_PLAIN_TEXT)  # type: ignore[assignment]  # results go to stdout


def styled(template: str, *values: object) -> Text:
    """A line styled with our own markup `template`, its ``{}`` fields filled with `values`
    as plain text: a value is never read as markup or an emoji code, however it is spelled
    (``[/INST]``, ``[link=…]``, ``:warning:``).

    Example:
        ``console.print(styled("[green]written:[/] {} results to {}", n, path))``
    """
    from rich.markup import escape
    from rich.text import Text

    filled = template.format(*(escape(str(v)) for v in values))
    return Text.from_markup(filled, emoji=False)


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


def leave_interrupted() -> NoReturn:
    """End a command after Ctrl-C, with exit status 130.

    When the command line owns the process, leave at once: model calls still running in
    worker threads are abandoned, not joined (records, sessions and caches are on disk;
    the OS frees the run lock). In-process callers get `typer.Exit` instead.
    """
    if PROCESS["owned"]:
        import os
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    raise typer.Exit(130)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print a clear error and exit non-zero."""
    from veracity.core.redaction import strip_credentials

    # a message quoting input ("[/INST]", "[E1]") is text, not console markup;
    # not wrapped, so commands in it paste whole
    console.print(styled("[bold red]error:[/] {}", strip_credentials(message)), soft_wrap=True)
    raise typer.Exit(code)
