"""`veracity datasets`: the benchmark datasets and which are present in the data directory."""

from __future__ import annotations

from pathlib import Path

import typer

from veracity.cli.app import app, fail, out
from veracity.errors import ConfigError


@app.command("datasets")
def datasets_(
    data_dir: Path | None = typer.Option(
        None, "--data-dir", help="benchmark data directory (default: VERACITY_DATA_DIR)"
    ),
    counts: bool = typer.Option(False, "--counts", help="load every split and count examples"),
) -> None:
    """List the benchmark datasets: label space, input kind, splits, and which are present."""
    from rich.table import Table

    from veracity.config import data_dir as find_data_dir
    from veracity.datasets import list_datasets, load_dataset
    from veracity.errors import DatasetError

    try:
        root: Path | None = find_data_dir(data_dir)
    except ConfigError as exc:
        if data_dir is not None:
            fail(str(exc))
        root = None
    table = Table(title=f"data directory: {root or 'not found'}")
    table.add_column("dataset", no_wrap=True)
    for column in ("labels", "input", "splits", "corpus", "present"):
        table.add_column(column)
    for info in list_datasets():
        present = root is not None and (root / info.folder).is_dir()
        splits = ", ".join(info.splits)
        if counts and present:
            sizes = []
            for split in info.splits:
                try:
                    sizes.append(f"{split} {len(load_dataset(info.name, split, root)):,}")
                except DatasetError as exc:
                    sizes.append(f"{split} [red]error: {exc}[/]")
            splits = ", ".join(sizes)
        table.add_row(
            info.name,
            info.label_space,
            info.input_kind,
            splits,
            "yes" if info.has_corpus else "",
            "yes" if present else "[yellow]no[/]",
        )
    out.print(table)
