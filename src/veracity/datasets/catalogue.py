"""Where each benchmark comes from, and how its release becomes the loaders' layout.

One `Entry` per dataset folder the loaders read (`DatasetInfo.folder`): the set's public
release (raw files pinned to a repository commit, or the authors' archive), its licence
and approximate size, the SHA-256 each download must have, and how the downloaded bytes
become the files under ``<data dir>/<folder>`` (taken as they are, extracted from an
archive, or converted by a function of `veracity.datasets.convert`).

How the checksums were pinned (`Download.pin`):

- `SAME`: the file at the pinned commit has the length of the copy the loaders were
  written against, so the pin is that copy's SHA-256;
- `PUBLIC`: the archive's SHA-256 (and size) as recorded, alike, by several independent
  public projects that fetch the same URL;
- no pin (``sha256=None``): no checksum could be established; `veracity datasets get`
  says so, records the hash it saw in ``datasets.lock.json`` and holds later downloads
  to it.

Sets with no confirmed public release have no downloads: `manual` says what to fetch by
hand and where to put it. AdvFact is built, not downloaded.
"""

from __future__ import annotations

from dataclasses import dataclass

GH = "https://raw.githubusercontent.com"
SAME = "the file the loaders were written against"
PUBLIC = "as recorded by independent public projects"


@dataclass(frozen=True)
class Download:
    """One file to fetch.

    Attributes:
        url: https URL of the file.
        name: file name it is saved under while installing (unique within the entry).
        sha256: the pinned SHA-256, or None when no checksum could be established.
        pin: how the pin was derived.
        size: length in bytes, when known.
    """

    url: str
    name: str
    sha256: str | None = None
    pin: str = ""
    size: int | None = None


@dataclass(frozen=True)
class Place:
    """A file of the installed folder: a download itself, or a member of a download.

    Attributes:
        target: path inside the dataset folder.
        source: `Download.name` it comes from.
        member: path inside the archive (tar or zip), or None for the download itself.
        sha256: the member's SHA-256, when pinned.
    """

    target: str
    source: str
    member: str | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class Copy:
    """A file taken from another installed set whose release holds the same bytes."""

    target: str
    folder: str
    file: str
    sha256: str


@dataclass(frozen=True)
class Entry:
    """How to obtain one dataset folder.

    Attributes:
        folder: the folder under the data directory.
        title: the set's name.
        licence: the licence the authors give (or "not stated").
        size: approximate download and installed size, as text.
        home: the release's home page or repository.
        downloads: what to fetch.
        files: the installed files taken from the downloads.
        convert: name of a converter in `veracity.datasets.convert`, for formats that
            need converting; it writes `outputs`.
        outputs: the files a converter writes (for checks and listings).
        copies: files taken from another installed set.
        manual: what to download by hand and where to put it, when nothing is fetched.
        build: the command that builds the set locally.
    """

    folder: str
    title: str
    licence: str
    size: str
    home: str
    downloads: tuple[Download, ...] = ()
    files: tuple[Place, ...] = ()
    convert: str | None = None
    outputs: tuple[str, ...] = ()
    copies: tuple[Copy, ...] = ()
    manual: str = ""
    build: str = ""

    @property
    def kind(self) -> str:
        """``download``, ``manual`` (by hand) or ``build`` (made locally)."""
        return "download" if self.downloads else "build" if self.build else "manual"

    @property
    def targets(self) -> tuple[str, ...]:
        """Every file the installed folder holds."""
        return (*(p.target for p in self.files), *self.outputs, *(c.target for c in self.copies))

    @property
    def pinned(self) -> bool:
        """Whether every download has a pinned checksum."""
        return all(d.sha256 for d in self.downloads)


def entries() -> tuple[Entry, ...]:
    """Every catalogue entry, in a stable order."""
    from veracity.datasets.releases import ENTRIES

    return ENTRIES


def entry(folder: str) -> Entry | None:
    """The entry for a dataset folder, or None when the catalogue has none."""
    return next((e for e in entries() if e.folder == folder), None)


def folder_of(name: str) -> str | None:
    """The folder a dataset name (a loader's name or a folder's own name) stands for."""
    if entry(name) is not None:
        return name
    from veracity.datasets import DatasetError, get_dataset

    try:
        return get_dataset(name).info.folder
    except DatasetError:
        return None
