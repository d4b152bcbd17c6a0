"""`veracity check`, `veracity methods`, `veracity labels`."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from rich.table import Table

from veracity import context
from veracity.api import as_input
from veracity.cli.app import app, console, fail, out
from veracity.cli.render import verdict_panel
from veracity.config import ConfigError, LLMConfig, load_run_config, settings
from veracity.labels import LABEL_SPACES, LabelError
from veracity.llm.base import LLMAuthError, ModelNotAvailable
from veracity.methods.base import MethodConfigError, load_method, method_info
from veracity.registry import RegistryError
from veracity.retrieval.registry_setup import build_sources
from veracity.types import InputError, TraceEvent


def _read_input(text: str | None, file: Path | None, kind: str) -> Any:
    if file is not None and text is not None:
        fail("give the text as an argument or with --file, not both")
    if file is not None:
        if not file.is_file():
            fail(f"input file not found: {file}")
        raw = file.read_text(encoding="utf-8", errors="replace")
        if file.suffix.lower() == ".json":
            try:
                return json.loads(raw)
            except json.JSONDecodeError as exc:
                fail(f"{file}: not valid JSON: {exc}")
        return raw
    if text is None:
        fail("nothing to check: give TEXT, '-' for standard input, or --file PATH")
    if text == "-":
        return sys.stdin.read()
    return text


def _llm_config(
    model: str | None, base_url: str | None, provider: str | None, cfg_llm: LLMConfig | None
) -> LLMConfig:
    base = cfg_llm or LLMConfig.from_settings()
    overrides = {"model": model, "base_url": base_url, "provider": provider}
    data = base.model_dump()
    data.update({k: v for k, v in overrides.items() if v is not None})
    if (base_url or provider) and cfg_llm is None:
        data["backend"] = "openai"
    return LLMConfig.model_validate(data)


def _describe(event: TraceEvent) -> str | None:
    if event.kind == "llm_call":
        return f"LLM · {event.name}"
    if event.kind == "search":
        return f"searching · {event.name}"
    if event.kind in ("stage", "agent_turn"):
        step = event.data.get("step") or event.data.get("phase") or ""
        return f"{event.name} {step}".strip()
    return None


@app.command()
def check(
    text: str = typer.Argument(None, help="the text to check, or '-' to read standard input"),
    file: Path = typer.Option(
        None, "--file", "-f", help="read the input from a file (.json: a Claim/Article/Post object)"
    ),
    method: str = typer.Option("direct", "--method", "-m", help="see `veracity methods`"),
    kind: str = typer.Option("claim", help="how to read plain text: claim, article or post"),
    labels: str = typer.Option(None, help="label space (see `veracity labels`)"),
    model: str = typer.Option(
        None, help="model: catalog name or GGUF path (embedded), or the endpoint's model id"
    ),
    base_url: str = typer.Option(None, help="OpenAI-compatible endpoint URL"),
    provider: str = typer.Option(
        None, help="endpoint preset: openai, deepseek, vllm, ollama, llamacpp, lmstudio"
    ),
    config: Path = typer.Option(None, help="run YAML (method, method_config, llm, sources)"),
    source: list[str] = typer.Option(
        None,
        "--source",
        "-s",
        help="evidence source NAME=TYPE, e.g. web=duckduckgo, web=local:INDEX, "
        "web=web:brave, wikipedia (repeatable; see `veracity sources`)",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the Verdict as JSON"),
) -> None:
    """Check a claim, article or post and print the verdict."""
    if kind not in ("claim", "article", "post"):
        fail(f"--kind must be claim, article or post, not {kind!r}")
    raw = _read_input(text, file, kind)
    try:
        item = as_input(raw, kind)  # type: ignore[arg-type]
    except (InputError, ValidationError, ValueError, TypeError) as exc:
        fail(_input_message(exc))
    try:
        run_cfg = load_run_config(config) if config else None
        method_name = run_cfg.method if run_cfg and method == "direct" else method
        method_cfg = dict(run_cfg.method_config) if run_cfg else {}
        if labels:
            method_cfg["labels"] = labels
        llm_cfg = _llm_config(model, base_url, provider, run_cfg.llm if run_cfg else None)
        from veracity.llm.factory import build_llm

        llm = build_llm(llm_cfg, progress=None)
        sources = build_sources(
            {**(run_cfg.sources if run_cfg else {}), **parse_source_options(source or [])}
        )
        m = load_method(method_name, llm=llm, config=method_cfg, sources=sources)
    except (ConfigError, RegistryError, MethodConfigError, LabelError, ValueError) as exc:
        fail(str(exc))
    _ensure_model(llm_cfg)
    try:
        verdict = _run_with_spinner(m, item, show=not as_json)
    except (ModelNotAvailable, LLMAuthError) as exc:
        fail(str(exc), code=3)
    except TypeError as exc:  # the method does not take this kind of input
        kinds = ", ".join(getattr(m, "input_kinds", ()))
        fail(f"{exc} (read the input as one of these with --kind: {kinds})")
    if as_json:
        out.print_json(verdict.model_dump_json())
    else:
        out.print(verdict_panel(verdict, item.content))
    if verdict.error:
        raise typer.Exit(1)


def parse_source_options(specs: list[str]) -> dict[str, dict[str, Any]]:
    """``NAME=TYPE[:ARG]`` options into a sources mapping (see `--source`).

    ``local:X`` names index X, ``web:X`` the web engine X; a bare ``NAME`` uses the
    source type of that name with its defaults.
    """
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        name, _, rest = spec.partition("=")
        name = name.strip()
        if not name:
            raise ConfigError(f"--source {spec!r}: give NAME=TYPE, e.g. web=duckduckgo")
        kind, _, arg = (rest or name).partition(":")
        options: dict[str, Any] = {"type": kind.strip()}
        if arg:
            key = {"local": "index", "web": "engine", "recorded": "path"}.get(options["type"])
            if key is None:
                raise ConfigError(f"--source {spec!r}: {options['type']!r} takes no ':' argument")
            options[key] = arg.strip()
        out[name] = options
    return out


def _input_message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
    return str(exc)


def _ensure_model(cfg: LLMConfig) -> None:
    """Pull the embedded default model up front so the user sees a progress bar."""
    if cfg.backend != "embedded":
        return
    from veracity.llm import models as catalog

    if cfg.model in catalog.CATALOG and not catalog.is_pulled(cfg.model, settings().models_dir):
        if not cfg.auto_pull:
            fail(f"model {cfg.model} is not downloaded; run `veracity models pull {cfg.model}`", 3)
        console.print(
            f"[yellow]model {cfg.model} is not downloaded yet; pulling it now "
            "(one time, about 100 MB)[/]"
        )
        from veracity.cli.models import pull_with_progress

        try:
            pull_with_progress(cfg.model)
        except ModelNotAvailable as exc:
            fail(str(exc), code=3)


def _run_with_spinner(method: Any, item: Any, show: bool):
    if not show:
        return asyncio.run(method.check(item))
    with console.status(f"{method.name}: starting…") as status:

        def update(event: TraceEvent) -> None:
            line = _describe(event)
            if line:
                status.update(f"{method.name}: {line}")

        with context.observe(update):
            return asyncio.run(method.check(item))


@app.command()
def methods() -> None:
    """List the registered methods."""
    table = Table("method", "default labels", "inputs", "description")
    for row in method_info():
        if "error" in row:
            table.add_row(row["name"], "", "", f"[red]failed to load: {row['error']}[/]")
        else:
            table.add_row(row["name"], row["labels"], row["inputs"], row["description"])
    out.print(table)


@app.command("labels")
def labels_() -> None:
    """List the label spaces and their labels."""
    table = Table("label space", "labels (veracity score)")
    for space in LABEL_SPACES.values():
        table.add_row(space.name, ", ".join(f"{x} ({space.scores[x]:g})" for x in space.labels))
    out.print(table)


@app.command("sources")
def sources_() -> None:
    """List the evidence source types and which web engines have keys set."""
    from veracity import registry
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
