"""`veracity datasets`: the benchmark datasets, which are present, and how to get the rest.

`veracity datasets get` (in `cli/datasets_get.py`) downloads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from veracity.cli.app import PLAIN, app, fail, out
from veracity.core.errors import ConfigError

datasets_app = typer.Typer(
    help="The benchmark datasets: list them (and which are present), or download them.",
    invoke_without_command=True,
    no_args_is_help=False,
    **PLAIN,  # type: ignore[arg-type]
)
app.add_typer(datasets_app, name="datasets")

DATA_DIR_HELP = "benchmark data directory (default: VERACITY_DATA_DIR, else VERACITY_HOME/datasets)"
STATUS = {"download": "fetchable", "manual": "by hand", "build": "build"}


@datasets_app.callback()
def datasets_(
    ctx: typer.Context,
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    counts: bool = typer.Option(False, "--counts", help="load every split and count examples"),
) -> None:
    """List the benchmark datasets: input kind, labels, splits, and whether each is present,
    fetchable (`veracity datasets get NAME`), to be fetched by hand, or built locally."""
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"data_dir": data_dir}  # `datasets --data-dir X get …` means X too
        return
    from veracity.runtime.environment import data_dir as find_data_dir
    from veracity.runtime.environment import default_data_dir

    root = default_data_dir() if data_dir is None else data_dir
    if data_dir is not None:
        try:
            find_data_dir(data_dir)
        except ConfigError as exc:
            fail(str(exc))
    where = "" if root.is_dir() else " (not created yet: `veracity datasets get` creates it)"
    out.print(f"data directory: {root}{where}", markup=False, highlight=False, soft_wrap=True)
    statuses = _print_table(root, counts)
    _print_footer(statuses)


def _print_table(root: Path, counts: bool) -> dict[str, list[str]]:
    from rich.table import Table
    from rich.text import Text

    from veracity.datasets import list_datasets
    from veracity.datasets.catalogue import entry

    infos = list_datasets()
    longest_split = max((len(s) + 1 for info in infos for s in info.splits), default=6)
    # no box: one space between columns keeps the five columns within 80
    table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0), header_style="bold underline")
    table.add_column("dataset", no_wrap=True)
    table.add_column("input", no_wrap=True)
    table.add_column("labels", no_wrap=True)
    # wrapped between split names, never inside one ("poisonedrag," stays whole)
    table.add_column("splits", overflow="fold", min_width=longest_split)
    table.add_column("status", no_wrap=True, min_width=len("fetchable"))
    statuses: dict[str, list[str]] = {}
    for info in infos:
        present = (root / info.folder).is_dir()
        known = entry(info.folder)
        status = "present" if present else STATUS[known.kind] if known else "absent"
        statuses.setdefault(status, []).append(info.name)
        splits = _counted(info, root) if counts and present else ", ".join(info.splits)
        style = "green" if present else "yellow"
        table.add_row(info.name, info.input_kind, info.label_space, splits, Text(status, style))
    out.print(table)
    return statuses


def _counted(info: Any, root: Path) -> Any:
    from rich.text import Text

    from veracity.datasets import DatasetError, load_dataset

    sizes = []
    for split in info.splits:
        try:
            sizes.append(Text(f"{split} {len(load_dataset(info.name, split, root)):,}"))
        except DatasetError as exc:
            sizes.append(Text(f"{split} ").append(f"error: {exc}", style="red"))
    return Text(", ").join(sizes)


def _print_footer(statuses: dict[str, list[str]]) -> None:
    lines = {
        "fetchable": "`veracity datasets get NAME …` (or --all) downloads them",
        "by hand": "`veracity datasets get NAME` says what to fetch and where",
        "build": "`veracity advfact build` makes it",
        "absent": "a plugin's sets: see its documentation",
    }
    for status, line in lines.items():
        if statuses.get(status):
            out.print(f"{status} ({len(statuses[status])}): {line}", markup=False, highlight=False,
                      soft_wrap=True)  # fmt: skip
