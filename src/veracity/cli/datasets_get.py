"""`veracity datasets get NAME … | --all`: download benchmarks into the data directory.

Each set's licence and size come first, then a progress bar per download (on a terminal;
otherwise a plain line every few seconds). Exit status: 2 for names that are not datasets,
1 when a set could not be installed (the network did not answer, a checksum did not match,
the set is fetched by hand); `--all` goes on past a failing set and names it at the end.

What a release may unpack to and a conversion may write is bounded (`convert.Limits`); the
`--max-*` flags and `--allow-empty` change a bound for a release that really needs it.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from veracity.cli.app import console, fail, out, styled
from veracity.cli.datasets import DATA_DIR_HELP, datasets_app
from veracity.core.bounds import MAX_EXAMPLES

if TYPE_CHECKING:
    from veracity.datasets.catalogue import Entry
    from veracity.datasets.convert import Limits
    from veracity.datasets.fetch import Fetcher

_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?", re.IGNORECASE)
_SCALE = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
SIZE_HELP = "; SIZE: bytes, or K, M, G for KiB, MiB, GiB)"


def parse_size(text: str, flag: str) -> int:
    """``512M`` → bytes (binary units); exits 2 with the reason on anything else."""
    found = _SIZE.fullmatch(text.strip())
    size = int(float(found[1]) * _SCALE[found[2].lower()]) if found else 0
    if size < 1:
        fail(f"{flag} takes a size such as 300M or 2G (at least 1 byte), not {text!r}")
    return size


def _limits(
    member: str | None, archive: str | None, output: str | None, rows: int | None, empty: bool
) -> Limits:
    """The bounds for this run: the defaults, with what the flags change."""
    from dataclasses import replace

    from veracity.datasets.convert import DEFAULT_LIMITS

    changed: dict[str, int | bool] = {"allow_empty": empty}
    for value, flag, field in (
        (member, "--max-member-bytes", "member_bytes"),
        (archive, "--max-archive-bytes", "archive_bytes"),
        (output, "--max-output-bytes", "output_bytes"),
    ):
        if value is not None:
            changed[field] = parse_size(value, flag)
    if rows is not None:
        changed["rows"] = rows
    return replace(DEFAULT_LIMITS, **changed)  # type: ignore[arg-type]


class PlainProgress:
    """Progress as a plain line every `every_s` seconds and at the end (no terminal)."""

    def __init__(self, label: str, every_s: float = 5.0):
        self.label, self.every_s = label, every_s
        self.total: int | None = None
        self.done = 0
        self.last = 0.0

    def start(self, total: int | None, done: int) -> None:
        self.total, self.done, self.last = total, done, time.monotonic()
        if done:
            self._line(f"resuming at {_mb(done)}")

    def advance(self, n: int) -> None:
        self.done += n
        if time.monotonic() - self.last >= self.every_s:
            self.last = time.monotonic()
            self._line(self._amount())

    def finish(self) -> None:
        self._line(self._amount() + " done")

    def _amount(self) -> str:
        if self.total:
            return f"{_mb(self.done)} of {_mb(self.total)} ({100 * self.done // self.total}%)"
        return _mb(self.done)

    def _line(self, text: str) -> None:
        console.print(f"  {self.label}: {text}", markup=False, highlight=False)


class BarProgress:
    """A rich progress bar for one download (on a terminal)."""

    def __init__(self, label: str):
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.bar = Progress(
            "  {task.description}",
            BarColumn(bar_width=24),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(compact=True),
            console=console.real(),  # type: ignore[attr-defined]
            transient=False,
        )
        self.label = label
        self.task = None

    def start(self, total: int | None, done: int) -> None:
        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task(self.label, total=total, completed=done)
        else:
            self.bar.update(self.task, total=total, completed=done)

    def advance(self, n: int) -> None:
        if self.task is not None:
            self.bar.advance(self.task, n)

    def finish(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.task = None


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _progress(label: str) -> PlainProgress | BarProgress:
    return BarProgress(label) if console.is_terminal else PlainProgress(label)


def _say(line: str) -> None:
    from rich.text import Text

    style = "bold yellow" if line.startswith("WARNING") else "dim"
    console.print(Text(line, style=style), soft_wrap=True)


def _describe(e: Entry) -> None:
    """The set's licence, size and source, before anything is downloaded."""
    out.print(f"{e.folder} · {e.title}", markup=False, highlight=False, style="bold")
    out.print(f"  licence: {e.licence} · size: {e.size}", markup=False, highlight=False,
              soft_wrap=True)  # fmt: skip
    if len(e.downloads) == 1:
        d = e.downloads[0]
        pin = f"sha256 pinned: {d.pin}" if d.sha256 else "no published checksum"
        out.print(f"  from: {d.url} ({pin})", markup=False, highlight=False, soft_wrap=True)
    elif e.downloads:
        unpinned = sum(1 for d in e.downloads if not d.sha256)
        pins = "all sha256-pinned" if not unpinned else f"{unpinned} without a checksum"
        out.print(
            f"  from: {e.home} ({len(e.downloads)} files at pinned commits, {pins})",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _resolve(names: list[str], all_: bool) -> list[Entry]:
    from veracity.datasets.catalogue import entries, entry, folder_of

    if all_ and names:
        fail("give dataset names or --all, not both")
    if all_:
        return list(entries())
    if not names:
        fail("name the datasets to get (`veracity datasets` lists them), or give --all")
    chosen: list[Entry] = []
    for name in names:
        folder = folder_of(name)
        found = entry(folder) if folder else None
        if found is None:
            fail(f"unknown dataset {name!r}; `veracity datasets` lists them")
        if found not in chosen:
            chosen.append(found)
    return chosen


def _install_one(fetcher: Fetcher, e: Entry, force: bool) -> str | None:
    """Install one set; returns why it failed, or None."""
    from veracity.datasets.fetch import FetchError, NeedsManualStep, is_installed

    _describe(e)
    if is_installed(fetcher.root, e) and not force:
        out.print(f"  already present in {fetcher.root / e.folder} (--force fetches it again)",
                  markup=False, highlight=False)  # fmt: skip
        return None
    try:
        folder = fetcher.install(e)
    except NeedsManualStep as exc:
        console.print(styled("  [yellow]not installed:[/] {}", exc), soft_wrap=True)
        return str(exc)
    except (FetchError, OSError) as exc:  # OSError: a disk full or a folder not writable
        console.print(styled("  [bold red]failed:[/] {}", exc), soft_wrap=True)
        return str(exc)
    files = sum(1 for p in folder.rglob("*") if p.is_file()) - 1  # less the manifest
    out.print(f"  installed: {folder} ({files} files)", markup=False, highlight=False)
    return None


@datasets_app.command("get")
def get(
    ctx: typer.Context,
    names: list[str] = typer.Argument(
        None, metavar="[NAME]...", help="datasets (or data folders) to download"
    ),
    all_: bool = typer.Option(False, "--all", help="every set that can be downloaded"),
    data_dir: Path | None = typer.Option(None, "--data-dir", help=DATA_DIR_HELP),
    force: bool = typer.Option(False, "--force", help="download and install again"),
    no_verify: bool = typer.Option(
        False, "--no-verify", help="install even when a checksum does not match (not advised)"
    ),
    max_member_bytes: str | None = typer.Option(
        None,
        "--max-member-bytes",
        metavar="SIZE",
        help="largest file taken out of an archive or converted whole (default 256M" + SIZE_HELP,
    ),
    max_archive_bytes: str | None = typer.Option(
        None,
        "--max-archive-bytes",
        metavar="SIZE",
        help="most an archive may unpack to, all its files together (default 1G" + SIZE_HELP,
    ),
    max_output_bytes: str | None = typer.Option(
        None,
        "--max-output-bytes",
        metavar="SIZE",
        help="most a converted set may write (default 64M" + SIZE_HELP,
    ),
    max_rows: int | None = typer.Option(
        None,
        "--max-rows",
        min=1,
        max=MAX_EXAMPLES,
        metavar="N",
        help="most rows a converted set may write (default 100000)",
    ),
    allow_empty: bool = typer.Option(
        False,
        "--allow-empty",
        help="install a set even when a file is empty or a conversion gives under 10 rows",
    ),
) -> None:
    """Download benchmarks from their public releases into the data directory: checksum
    checked, converted to the loaders' layout, installed only when complete."""
    from veracity.datasets.fetch import Fetcher, FetchError
    from veracity.runtime.environment import default_data_dir, environment

    chosen = _resolve(list(names or []), all_)
    limits = _limits(max_member_bytes, max_archive_bytes, max_output_bytes, max_rows, allow_empty)
    data_dir = data_dir or (ctx.obj or {}).get("data_dir")
    root = Path(data_dir) if data_dir is not None else default_data_dir()
    if root.exists() and not root.is_dir():
        fail(f"the data directory {root} is a file, not a folder")
    try:
        fetcher = Fetcher(
            root,
            verify=not no_verify,
            offline=environment().offline,  # VERACITY_OFFLINE
            progress=_progress,
            say=_say,
            limits=limits,
        )
    except FetchError as exc:
        fail(str(exc), code=1)
    if no_verify:
        _say("WARNING: --no-verify: checksums are computed and shown but not enforced")
    failed: dict[str, str] = {}
    skipped: list[Entry] = []
    for e in chosen:
        if all_ and e.kind != "download":
            skipped.append(e)
            continue
        why = _install_one(fetcher, e, force)
        if why is not None:
            failed[e.folder] = why
    _finish(chosen, failed, skipped)


def _finish(chosen: list[Entry], failed: dict[str, str], skipped: list[Entry]) -> None:
    if skipped:
        names = ", ".join(e.folder for e in skipped)
        out.print(
            f"not downloaded by --all ({len(skipped)}): {names}; `veracity datasets get NAME` "
            "says how to get each",
            markup=False,
            highlight=False,
        )
    if not failed:
        return
    if len(chosen) == 1:
        raise typer.Exit(1)  # the reason is printed above
    fail(f"{len(failed)} of {len(chosen) - len(skipped)} sets not installed: {', '.join(failed)}",
         code=1)  # fmt: skip
