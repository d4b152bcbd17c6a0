"""`veracity check`, `veracity methods`, `veracity labels`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from veracity.cli.app import app, console, fail, out, styled
from veracity.cli.common import (
    BASE_URL_OPTION,
    MODEL_OPTION,
    PROVIDER_OPTION,
    SOURCE_OPTION,
    ensure_model,
    input_message,
    parse_set_options,
    parse_source_options,
)
from veracity.cli.plugins import with_run_options
from veracity.core.errors import ConfigError, InputError, LLMAuthError, ModelNotAvailable


def _read_input(text: str | None, file: Path | None, kind: str) -> Any:
    if file is not None and text is not None:
        fail("give the text as an argument or with --file, not both")
    from veracity.core.textio import (
        MAX_RECORD_BYTES,
        MAX_TEXT_BYTES,
        decode_text,
        parse_json,
        read_file_limited,
        read_limited,
        require_decodable,
    )

    try:  # every read stops at its limit + 1 byte (an endless stream is refused at once)
        if file is not None:
            is_json = file.suffix.lower() == ".json"
            data = read_file_limited(file, MAX_RECORD_BYTES if is_json else MAX_TEXT_BYTES)
            raw = decode_text(data, str(file))
            return parse_json(raw, str(file)) if is_json else raw
        if text is None:
            fail("nothing to check: give TEXT, '-' for standard input, or --file PATH")
        if text == "-":
            data = read_limited(sys.stdin.buffer, MAX_TEXT_BYTES, "standard input")
            return decode_text(data, "standard input")
        return require_decodable(text, "the text argument")
    except InputError as exc:
        fail(str(exc))


@app.command()
def check(
    ctx: typer.Context,
    text: str = typer.Argument(None, help="the text to check, or '-' to read standard input"),
    file: Path = typer.Option(
        None,
        "--file",
        "-f",
        help="read the input from a file (.json: a claim, article or post object; its "
        "`kind` field or its fields say which)",
    ),
    method: str = typer.Option(
        None, "--method", "-m", help="see `veracity methods` (default: the config's, or direct)"
    ),
    kind: str = typer.Option(
        "claim",
        help="how to read plain text: claim, article or post (a .json file's own kind or "
        "fields decide for it)",
    ),
    labels: str = typer.Option(None, help="label space (see `veracity labels`)"),
    model: str = MODEL_OPTION,
    base_url: str = BASE_URL_OPTION,
    threads: int = typer.Option(
        None,
        "--threads",
        min=1,
        help="CPU threads of the embedded model (default: VERACITY_THREADS, else half the cores)",
    ),
    provider: str = PROVIDER_OPTION,
    config: Path = typer.Option(
        None, help="run or experiment YAML (method, method_config, llm, sources); flags win"
    ),
    variant: str = typer.Option(None, help="a variant of the --config experiment"),
    source: list[str] = SOURCE_OPTION,
    settings: list[str] = typer.Option(
        None,
        "--set",
        metavar="KEY=VALUE",
        help="a method setting KEY=VALUE, e.g. --set rounds=2 or --set corpus.index=mydocs "
        "(repeatable; the method's README lists them)",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the Verdict as JSON"),
) -> None:
    """Check a claim, article or post and print the verdict."""
    from pydantic import ValidationError

    from veracity.api import as_input
    from veracity.cli.render import tree_view, verdict_panel
    from veracity.runtime import build_run, resolve_config

    if kind not in ("claim", "article", "post"):
        fail(f"--kind must be claim, article or post, not {kind!r}")
    raw = _read_input(text, file, kind)
    try:
        item = as_input(raw, kind)  # type: ignore[arg-type]
    except (InputError, ValidationError, ValueError, TypeError) as exc:
        fail(input_message(exc))
    try:
        flags = {
            "method": method,
            "labels": labels,
            "llm": {
                "model": model,
                "base_url": base_url,
                "provider": provider,
                "n_threads": threads,
            },
            "sources": parse_source_options(source or []) or None,
            "method_config": parse_set_options(settings or []) or None,
        }
        # the options methods add (MERMAID's --memory): veracity.cli.plugins
        cfg = with_run_options(resolve_config(config, variant=variant, flags=flags), ctx)
        run = build_run(cfg)
    except ConfigError as exc:
        fail(str(exc))
    except (ModelNotAvailable, LLMAuthError) as exc:
        fail(str(exc), code=3)
    m = run.method
    for note in run.notes:
        console.print(note, style="dim", soft_wrap=True)
    ensure_model(run.config.llm)
    try:
        verdict = _run_with_progress(m, item)
    except (ModelNotAvailable, LLMAuthError) as exc:
        fail(str(exc), code=3)
    except TypeError as exc:  # the method does not take this kind of input
        kinds = ", ".join(getattr(m, "input_kinds", ()))
        fail(f"{exc} (read the input as one of these with --kind: {kinds})")
    if as_json:
        out.print_json(verdict.model_dump_json())
    else:
        out.print(verdict_panel(verdict, item.content))
        tree = tree_view(verdict)
        if tree is not None:
            out.print(tree)
    _warn_search_failures(verdict)
    if verdict.error:
        raise typer.Exit(1)


def _warn_search_failures(verdict: Any) -> None:
    """One warning line on stderr when searches failed (the count and the first error)."""
    warning = verdict.search_warning
    if warning:
        console.print(styled("[yellow]warning:[/] {}", warning), soft_wrap=True)


def _run_with_progress(method: Any, item: Any):
    """Check `item`, showing its stage, round, calls and time on standard error (with
    --json too: the verdict alone goes to standard output)."""
    import asyncio

    from veracity.cli.progress_view import check_view

    with check_view(method, console) as view, view.watching():
        return asyncio.run(method.check(item))


@app.command()
def methods() -> None:
    """List the registered methods."""
    from rich.table import Table
    from rich.text import Text

    from veracity.methods.base import method_info

    table = Table("method", "default labels", "inputs", "description")
    for row in method_info():
        if "error" in row:
            table.add_row(row["name"], "", "", Text(f"failed to load: {row['error']}", "red"))
        else:
            table.add_row(row["name"], row["labels"], row["inputs"], row["description"])
    out.print(table)


@app.command("labels")
def labels_() -> None:
    """List the label spaces and their labels."""
    from rich.table import Table

    from veracity.core.labels import LABEL_SPACES

    table = Table("label space", "labels (veracity score)")
    for space in LABEL_SPACES.values():
        table.add_row(space.name, ", ".join(f"{x} ({space.scores[x]:g})" for x in space.labels))
    out.print(table)


@app.command("sources")
def sources_() -> None:
    """List the evidence source types and which web engines have keys set."""
    from rich.table import Table

    from veracity.core import registry
    from veracity.retrieval.registry_setup import WEB_ENGINES, available_web_engines

    table = Table("source type", "notes")
    usable = set(available_web_engines())
    for name in registry.sources.names():
        note = ""
        if name in WEB_ENGINES:
            var = WEB_ENGINES[name][1]
            note = "ready" if name in usable else f"needs {var}"
        elif name == "web":
            note = f"first ready engine of {', '.join(WEB_ENGINES)}"
        elif name == "local":
            note = "a local index built with `veracity index build`"
        table.add_row(name, note)
    out.print(table)
