"""Download a benchmark's public release, check it, and install it in the loaders' layout.

`Fetcher.install(entry)` fetches each `Download` of a catalogue entry into
``<data dir>/downloads/<set>/`` (a ``.part`` file that a broken download resumes with an HTTP
Range request; a server that ignores Range starts it again cleanly), checks its SHA-256
against the pin (or, for an unpinned file, against the hash recorded on its first download
in ``<data dir>/datasets.lock.json``), builds the folder in a temporary directory beside
the data, and renames it into place only when everything succeeded: a failed download or
conversion leaves nothing half-installed. A ``.part`` of an unpinned file with no recorded
hash is discarded, not resumed: its first recorded hash must be of one whole download.
A file that does not match its checksum is kept beside, as ``NAME.mismatch-<sha8>``, and
the message says how to use it anyway.

Every request and every redirect hop goes through the public-address guard of the page
fetcher (`veracity.retrieval.transport.netsafe.check_public_url`): https only, a host
whose every address is public, and the connection made to the address that was checked.
Every request has connect and read time limits and every download a wall-clock limit.
What an archive may unpack to and a conversion may write is bounded by `Limits`
(`veracity.datasets.convert`).

When the network does not answer (or ``VERACITY_OFFLINE=1``), `NeedsManualStep` says which
URL to download by hand and where to put it; the next `install` picks the file up there.

Why not pooch: its HTTP downloader (requests) follows redirects inside the library, so a
hop to a private address could not be refused before it is fetched, nor the connection
pinned to the address that was checked; it does not resume a broken download with Range;
a file without a known hash is taken as it is (no hash recorded on the first download and
held to afterwards); and a file whose hash does not match is deleted, not kept beside
with the way to use it anyway. Unpacking and conversion are bounded by our own `Limits`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import shutil
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx

from veracity.core.errors import DatasetError
from veracity.datasets.catalogue import Download, Entry
from veracity.datasets.convert import (
    CONVERTERS,
    DEFAULT_LIMITS,
    Limits,
    OutOfBounds,
    copy_member,
)
from veracity.retrieval.base import SourceUnreachable
from veracity.retrieval.transport.http import pinned
from veracity.retrieval.transport.netsafe import Resolver, UnsafeURL, check_public_url

T = TypeVar("T")

LOCK_FILE = "datasets.lock.json"
# Where downloads go: ``<data dir>/downloads/<set>/<file>``, a visible folder per set (a
# file fetched by hand is put there, and two sets' files of one name never meet: two
# releases both call theirs ``dev.json``). Earlier versions kept every file in a hidden
# ``.downloads/``; a file found there that matches its pinned checksum is taken over.
DOWNLOADS = "downloads"
LEGACY_DOWNLOADS = ".downloads"


def download_path(root: Path, folder: str | None, name: str) -> Path:
    """Where download `name` of set `folder` is kept under data directory `root`."""
    return root / DOWNLOADS / (folder or "shared") / name


MANIFEST = ".veracity-dataset.json"
RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504}
TIMEOUT = httpx.Timeout(connect=20.0, read=60.0, write=60.0, pool=20.0)
RESOLVER: Resolver | None = None  # the guard's resolver when none is given (None: the system's)


class FetchError(DatasetError):
    """A set could not be installed; nothing of it was left half-installed."""


class ChecksumMismatch(FetchError):
    """A download's SHA-256 is not the pinned (or first recorded) one."""


class NeedsManualStep(FetchError):
    """Nothing can be fetched now: the message says what to download and where to put it."""


class Progress(Protocol):
    """Receives a download's progress (bytes)."""

    def start(self, total: int | None, done: int) -> None: ...

    def advance(self, n: int) -> None: ...

    def finish(self) -> None: ...


class _Silent:
    def start(self, total: int | None, done: int) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def finish(self) -> None:
        pass


def sha256_file(path: Path) -> str:
    """The SHA-256 of a file's bytes, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


class Lock:
    """``datasets.lock.json``: the SHA-256 first seen for each unpinned URL."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.data: dict[str, dict] = json.loads(path.read_text(encoding="utf-8"))["urls"]
        except FileNotFoundError:
            self.data = {}
        except (ValueError, KeyError, TypeError) as exc:
            raise FetchError(f"{path} is not a datasets lock file ({exc}); move it away") from None

    def get(self, url: str) -> str | None:
        return (self.data.get(url) or {}).get("sha256")

    def record(self, url: str, sha: str, size: int) -> None:
        when = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.data[url] = {"sha256": sha, "bytes": size, "first_seen": when}

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"urls": self.data}, indent=2, sort_keys=True) + "\n")
        tmp.replace(self.path)


class Fetcher:
    """Installs catalogue entries under one data directory.

    Args:
        root: the data directory (created when missing).
        verify: check checksums (``--no-verify`` turns it off, loudly).
        offline: never use the network; only files already put in place are used.
        client: the httpx client (tests pass their own; default: one with time limits).
        progress: makes a `Progress` for a download, given its label.
        say: prints a line for the user (warnings and notes).
        attempts: tries per download (each resumes where the last one stopped).
        max_seconds: wall-clock limit for one download.
        limits: what an archive may unpack to and a conversion may write.
        resolver: host resolver for the public-address guard (tests; default: `RESOLVER`,
            else the system's).
    """

    def __init__(
        self,
        root: Path,
        *,
        verify: bool = True,
        offline: bool = False,
        client: httpx.Client | None = None,
        progress: Callable[[str], Progress] | None = None,
        say: Callable[[str], None] = print,
        attempts: int = 4,
        max_seconds: float = 3600.0,
        limits: Limits = DEFAULT_LIMITS,
        resolver: Resolver | None = None,
    ):
        self.root = Path(root)
        self.verify, self.offline, self.say = verify, offline, say
        self.client = client or httpx.Client(timeout=TIMEOUT, follow_redirects=False)
        self.progress = progress or (lambda label: _Silent())
        self.attempts, self.max_seconds = attempts, max_seconds
        self.limits, self.resolver = limits, resolver or RESOLVER
        self.lock = Lock(self.root / LOCK_FILE)
        self.backoff_s = 1.0

    # ------------------------------------------------------------------ installing

    def install(self, entry: Entry) -> Path:
        """Fetch, check and install `entry`; returns its folder.

        Raises:
            NeedsManualStep: the set has no release to fetch, or the network does not
                answer (the message says what to download and where to put it).
            ChecksumMismatch: a download is not the pinned file.
            FetchError: the server refused, or the conversion failed.
        """
        target = self.root / entry.folder
        if entry.kind == "build":
            raise NeedsManualStep(f"{entry.folder} is built, not downloaded: run `{entry.build}`")
        if entry.kind == "manual":
            raise NeedsManualStep(entry.manual.format(path=target))
        self.root.mkdir(parents=True, exist_ok=True)
        paths = self._fetch_all(entry)
        staging = self.root / f".{entry.folder}.installing"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        try:
            self._build(entry, paths, staging)
            _swap(staging, target)
        except BaseException as exc:  # Ctrl-C included: never leave a half-built folder
            shutil.rmtree(staging, ignore_errors=True)
            if isinstance(exc, FetchError) or not isinstance(exc, Exception):
                raise
            if isinstance(exc, OutOfBounds):
                raise FetchError(f"{entry.folder}: {exc}; nothing was installed") from exc
            raise FetchError(
                f"{entry.folder}: converting the release failed ({type(exc).__name__}: {exc}); "
                "nothing was installed"
            ) from exc
        self.lock.save()
        for path in paths.values():
            path.unlink(missing_ok=True)
        return target

    def _fetch_all(self, entry: Entry) -> dict[str, Path]:
        paths, manual = {}, []
        for dl in entry.downloads:
            try:
                paths[dl.name] = self.fetch(dl, f"{entry.folder}: {dl.name}", entry.folder)
            except NeedsManualStep as exc:
                manual.append(str(exc))
        if manual:
            raise NeedsManualStep("; ".join(manual) + f"; then run `veracity datasets get "
                                  f"{entry.folder}` again")  # fmt: skip
        return paths

    def _build(self, entry: Entry, paths: dict[str, Path], out: Path) -> None:
        for place in entry.files:
            dest = out / place.target
            dest.parent.mkdir(parents=True, exist_ok=True)
            if place.member is None:
                shutil.copyfile(paths[place.source], dest)
                content = _has_content(dest)
            else:
                content = copy_member(paths[place.source], place.member, dest, self.limits)
            if place.sha256 and self.verify:
                _expect(dest, place.sha256, f"{place.member} of {place.source}")
            if not content and not self.limits.allow_empty:
                raise OutOfBounds(
                    f"{place.target} is empty (nothing but white space) in the release; it "
                    "looks broken or truncated. If it is meant to be empty, run again with "
                    "--allow-empty"
                )
        if entry.convert:
            rows = CONVERTERS[entry.convert](paths, out, self.limits)
            least = self.limits.min_rows
            if rows < least and not self.limits.allow_empty:
                raise OutOfBounds(
                    f"the conversion gave {rows} rows, fewer than {least} (the release of "
                    f"{entry.folder} has hundreds): it looks empty or truncated. If it is "
                    "meant to be that small, run again with --allow-empty"
                )
        for copy in entry.copies:
            self._copy(entry, copy, out)
        files = {
            str(p.relative_to(out)): sha256_file(p) for p in sorted(out.rglob("*")) if p.is_file()
        }
        sources = [
            {"url": d.url, "sha256": sha256_file(paths[d.name]), "pinned": bool(d.sha256)}
            for d in entry.downloads
        ]
        manifest = {"folder": entry.folder, "licence": entry.licence, "sources": sources}
        (out / MANIFEST).write_text(json.dumps({**manifest, "files": files}, indent=2) + "\n")

    def _copy(self, entry: Entry, copy, out: Path) -> None:
        src = self.root / copy.folder / copy.file
        if not src.is_file():
            self.say(
                f"note: {entry.folder}/{copy.target} is the same file as {copy.folder}/"
                f"{copy.file}, which is not here; get {copy.folder} first (`veracity datasets "
                f"get {copy.folder}`), then run `veracity datasets get {entry.folder} --force`"
            )
            return
        dest = out / copy.target
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
        if self.verify:
            _expect(dest, copy.sha256, f"{copy.folder}/{copy.file}")

    # ------------------------------------------------------------------ downloading

    def fetch(self, dl: Download, label: str, folder: str | None = None) -> Path:
        """The checked download `dl` under ``downloads/<folder>/`` (fetched unless already
        there); `folder` is the set it is for (named in the commands a message suggests)."""
        dest = download_path(self.root, folder, dl.name)
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.is_file():
            self._adopt_legacy(dl, dest)
        if not dest.is_file():
            if self.offline:
                raise NeedsManualStep(_by_hand(dl, dest, "offline (VERACITY_OFFLINE=1)"))
            self._download(dl, dest, self.progress(label))
        self._check(dl, dest, folder)
        return dest

    def _adopt_legacy(self, dl: Download, dest: Path) -> None:
        """Take over a pinned file an earlier version left in ``.downloads/`` (only when it
        matches the pin: a name there may be another set's file of the same name)."""
        old = self.root / LEGACY_DOWNLOADS / dl.name
        if dl.sha256 and old.is_file() and sha256_file(old) == dl.sha256:
            old.replace(dest)
            self.say(f"note: moved {old} to {dest} (downloads now live in a folder per set)")

    def _download(self, dl: Download, dest: Path, progress: Progress) -> None:
        part = dest.with_name(dest.name + ".part")
        expected = dl.sha256 or self.lock.get(dl.url)
        if part.exists() and expected is None:
            # bytes nothing can check: the hash recorded on a first download must be of one
            # whole download, not of what someone left in the folder
            part.unlink()
            self.say(
                f"note: {part} was left by an earlier try; {dl.name} has no checksum to "
                "check a resumed file against, so it is downloaded again from the start"
            )
        started, last = time.monotonic(), "no answer"
        for attempt in range(self.attempts):
            if time.monotonic() - started > self.max_seconds:
                break
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                if self._stream(dl.url, part, progress, started):
                    part.replace(dest)
                    progress.finish()
                    return
                last = "the server asked to try again later"
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        progress.finish()
        again = "a new try resumes" if expected else "a new try starts again (no checksum)"
        kept = f" ({part.stat().st_size:,} bytes kept; {again})" if part.exists() else ""
        raise NeedsManualStep(_by_hand(dl, dest, f"the download did not complete: {last}{kept}"))

    def _stream(self, url: str, part: Path, progress: Progress, started: float) -> bool:
        """One try: False when the server said to retry; True when `part` is complete."""
        have = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        with self._open(url, headers) as resp:
            if resp.status_code == 416 and have:  # nothing after `have`: start again
                part.unlink()
                return False
            if resp.status_code in RETRY_STATUS:
                return False
            if resp.status_code not in (200, 206):
                raise FetchError(f"{url} answered HTTP {resp.status_code}; nothing was installed")
            resumed = resp.status_code == 206 and have > 0
            total = _total(resp, have if resumed else 0)
            progress.start(total, have if resumed else 0)
            with part.open("ab" if resumed else "wb") as f:
                for chunk in resp.iter_bytes():  # as received: a break loses nothing
                    f.write(chunk)
                    progress.advance(len(chunk))
                    if time.monotonic() - started > self.max_seconds:
                        raise httpx.ReadTimeout(f"over the {self.max_seconds:.0f} s limit")
        size = part.stat().st_size
        if total is not None and size != total:
            raise httpx.RemoteProtocolError(f"got {size:,} of {total:,} bytes")
        return True

    @contextmanager
    def _open(self, url: str, headers: dict[str, str]) -> Iterator[httpx.Response]:
        """GET `url`, following up to 5 redirects; each hop must be an https URL that the
        public-address guard accepts, and is sent to the address the guard checked."""
        for _ in range(6):
            if not url.startswith("https://"):
                raise FetchError(f"refusing to download from {url}: not an https URL")
            request = self.client.build_request("GET", url, headers=headers)
            request = pinned(self.client, request, self._public_address(url))  # type: ignore[arg-type]
            resp = self.client.send(request, stream=True)
            if resp.is_redirect and "location" in resp.headers:
                url = str(httpx.URL(url).join(resp.headers["location"]))
                resp.close()
                continue
            try:
                yield resp
            finally:
                resp.close()
            return
        raise FetchError(f"{url}: too many redirects")

    def _public_address(self, url: str) -> str:
        """The address to connect to for `url`, once the guard has accepted every address
        its host has (a name that does not resolve counts as no answer: tried again)."""
        try:
            return _run(check_public_url(url, source="datasets", resolver=self.resolver))[0]
        except UnsafeURL as exc:
            message = str(exc).removeprefix("datasets: ").replace("refusing to fetch", "", 1)
            raise FetchError(
                f"refusing to download {message.strip()}; nothing was installed"
            ) from None
        except SourceUnreachable as exc:
            raise httpx.ConnectError(str(exc).removeprefix("datasets: ")) from None

    def _check(self, dl: Download, path: Path, folder: str | None = None) -> None:
        seen = sha256_file(path)
        if not self.verify:
            self.say(f"WARNING: {dl.name} was NOT checked (--no-verify); its sha256 is {seen}")
            return
        expected, how = dl.sha256, f"pinned ({dl.pin})" if dl.pin else "pinned"
        if expected is None and (expected := self.lock.get(dl.url)) is not None:
            how = f"recorded on its first download in {self.lock.path}"
        if expected is None:
            self.say(
                f"WARNING: {dl.name} has no published checksum to verify against; its sha256 "
                f"{seen} is recorded in {self.lock.path} and later downloads must match it"
            )
            self.lock.record(dl.url, seen, path.stat().st_size)
        elif seen != expected:
            kept = path.with_name(f"{path.name}.mismatch-{seen[:8]}")
            path.replace(kept)  # kept, not deleted: it may be a file put there by hand
            command = f"veracity datasets get {folder or '<set>'} --data-dir {self.root}"
            raise ChecksumMismatch(
                f"checksum mismatch for {dl.url}: expected sha256 {expected} ({how}), got "
                f"{seen}; nothing was installed and the file was moved to {kept}. "
                f"To download it again: `{command}`. To use that file anyway: "
                f"`mv {kept} {path}` then `{command} --no-verify`"
            )


def _expect(path: Path, sha: str, what: str) -> None:
    seen = sha256_file(path)
    if seen != sha:
        raise ChecksumMismatch(
            f"checksum mismatch for {what}: expected sha256 {sha}, got {seen}; refusing to "
            "install it (run again with --no-verify to accept it)"
        )


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine of the async guard from this synchronous code (in a thread of its
    own when the caller already runs an event loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def _has_content(path: Path) -> bool:
    """Whether a file holds anything but white space (read until the first such byte)."""
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            if chunk.strip():
                return True
    return False


def _total(resp: httpx.Response, offset: int) -> int | None:
    """The full length of the file from Content-Range or Content-Length, when given."""
    if resp.status_code == 206 and "/" in resp.headers.get("content-range", ""):
        whole = resp.headers["content-range"].rsplit("/", 1)[1]
        return int(whole) if whole.isdigit() else None
    length = resp.headers.get("content-length")
    return offset + int(length) if length and length.isdigit() else None


def _by_hand(dl: Download, dest: Path, why: str) -> str:
    return f"{why}; download {dl.url} by hand and put it at {dest}"


def _swap(staging: Path, target: Path) -> None:
    """Move the built folder into place; an old copy is replaced only once it is built."""
    if target.exists():
        old = target.with_name(f".{target.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        target.rename(old)
        staging.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        staging.rename(target)


def is_installed(root: Path, entry: Entry) -> bool:
    """Whether every file of `entry` is in its folder under `root`."""
    folder = root / entry.folder
    return folder.is_dir() and all((folder / t).is_file() for t in entry.targets)
