"""Turning downloaded releases into the files the loaders read, within stated bounds.

`open_archive` reads a tar (gz, bz2, xz) or zip archive one member at a time by name,
never unpacking anything else, so an archive cannot write outside the folder being built.
`CONVERTERS` holds the conversions of releases whose format differs from the layout:
SheepDog's pickled articles and RumourEval 2017's folders of tweet JSON files.
Every converter reads the downloads it is given, writes only into `out` and returns the
number of rows it wrote.

A small download can unpack or convert to a very large one (a compression bomb, a pickle
that references one string many times), so every step is bounded by `Limits`: the size of
one file taken out of an archive, of everything an archive unpacks to, of what a
conversion writes (bytes and rows), and a floor on rows (an empty or truncated release is
refused). Members are streamed through a counting reader that stops at the limit, and
sizes that an archive declares are checked before anything is unpacked. Each limit has a
flag on ``veracity datasets get`` for a release that really is that large.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import tarfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any, ClassVar

from veracity.core.errors import DatasetError

MiB = 1 << 20
GiB = 1 << 30
BLOCK = 4096  # every file of an archive counts at least this much (one disk block)
CHUNK = 1 << 20


class ConversionError(DatasetError):
    """A release does not have the shape its conversion expects."""


class OutOfBounds(ConversionError):
    """A release unpacks or converts to more, or fewer rows, than `Limits` allows; the
    message names the flag that changes the limit."""


@dataclass(frozen=True)
class Limits:
    """Bounds on one set's install (defaults far above every real release in the catalogue:
    its largest file is 8.3 MB, its converted sets 3.1 MB and 360 rows).

    Attributes:
        member_bytes: one file taken out of an archive, or a download converted in memory
            (``--max-member-bytes``; 256 MiB).
        archive_bytes: everything one archive unpacks to, each file counted at least
            `BLOCK` bytes (``--max-archive-bytes``; 1 GiB).
        output_bytes: what one conversion writes (``--max-output-bytes``; 64 MiB).
        rows: rows one conversion writes (``--max-rows``; 100,000).
        min_rows: fewer rows from a conversion, or an installed file with nothing but
            white space, is refused as an empty or truncated release (10), unless
            `allow_empty` (``--allow-empty``).
    """

    member_bytes: int = 256 * MiB
    archive_bytes: int = GiB
    output_bytes: int = 64 * MiB
    rows: int = 100_000
    min_rows: int = 10
    allow_empty: bool = False


DEFAULT_LIMITS = Limits()


def size_text(n: int) -> str:
    """`n` bytes as a short binary size (``256 MiB``)."""
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


def too_big(what: str, limit: int, kind: str, flag: str) -> OutOfBounds:
    return OutOfBounds(
        f"{what} is larger than {size_text(limit)}, the limit for {kind}; if the release "
        f"really is that large, raise the limit with {flag}"
    )


# ----------------------------------------------------------------------------- archives


class _Counted(io.RawIOBase):
    """A member's stream that counts the bytes it gives and stops at the member limit (and
    at what is left of the archive's)."""

    def __init__(self, raw: IO[bytes], what: str, archive: Archive):
        self.raw, self.what, self.archive, self.seen = raw, what, archive, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self.raw.read(len(buffer))
        n = len(data)
        self.seen += n
        self.archive.unpacked += n
        limits = self.archive.limits
        if self.seen > limits.member_bytes:
            raise too_big(self.what, limits.member_bytes, "one file", "--max-member-bytes")
        if self.archive.unpacked > limits.archive_bytes:
            raise self.archive.too_big()
        buffer[:n] = data
        return n


class Archive:
    """A zip or tar archive opened for bounded reading (see `open_archive`).

    Attributes:
        names: the archive's files (folders, links and devices left out).
        limits: the bounds it is read under.
    """

    def __init__(self, path: Path, limits: Limits):
        self.path, self.limits = path, limits
        self.unpacked = 0  # bytes given out of the archive so far
        self._zip: zipfile.ZipFile | None = None
        self._tar: tarfile.TarFile | None = None
        self._sizes: dict[str, int] = {}
        self._tar_members: dict[str, tarfile.TarInfo] = {}

    def too_big(self) -> OutOfBounds:
        return too_big(
            f"everything {self.path.name} unpacks to",
            self.limits.archive_bytes,
            f"one archive (each file counted at least {BLOCK:,} bytes)",
            "--max-archive-bytes",
        )

    def _count(self, total: int, size: int) -> int:
        total += max(size, BLOCK)
        if total > self.limits.archive_bytes:
            raise self.too_big()
        return total

    def _scan_zip(self, zf: zipfile.ZipFile) -> None:
        total = 0
        for info in zf.infolist():  # the central directory: declared sizes, nothing unpacked
            total = self._count(total, info.file_size)
            if not info.is_dir():
                self._sizes[info.filename] = info.file_size
        self._zip = zf

    def _scan_tar(self, tf: tarfile.TarFile) -> None:
        total = 0
        # header by header: a declared size over the limit stops the scan before that
        # member's data is unpacked (a tar member is exactly as long as its header says)
        for info in tf:
            total = self._count(total, info.size)
            if info.isfile():
                self._sizes[info.name] = info.size
                self._tar_members[info.name] = info
        self._tar = tf

    @property
    def names(self) -> list[str]:
        return list(self._sizes)

    @contextlib.contextmanager
    def open(self, name: str) -> Iterator[IO[bytes]]:
        """Stream one member: refused up front when its declared size is over the limit,
        and stopped by the counting reader when it turns out longer."""
        what = f"{name} in {self.path.name}"
        if self._sizes[name] > self.limits.member_bytes:
            raise too_big(what, self.limits.member_bytes, "one file", "--max-member-bytes")
        if self._zip is not None:
            raw: IO[bytes] | None = self._zip.open(name)
        else:
            assert self._tar is not None
            raw = self._tar.extractfile(self._tar_members[name])
        if raw is None:
            raise ConversionError(f"{self.path.name}: {name} cannot be read")
        with raw, io.BufferedReader(_Counted(raw, what, self), CHUNK) as counted:
            yield counted

    def read(self, name: str) -> bytes:
        """One member's bytes (for the small JSON files a conversion parses whole)."""
        with self.open(name) as f:
            return f.read()

    def copy(self, name: str, dest: Path) -> bool:
        """Stream one member into `dest`; whether it holds anything but white space."""
        content = False
        with self.open(name) as f, dest.open("wb") as out:
            while chunk := f.read(CHUNK):
                out.write(chunk)
                content = content or bool(chunk.strip())
        return content


@contextlib.contextmanager
def open_archive(archive: Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[Archive]:
    """A zip or tar archive for bounded reading; its declared sizes are checked first."""
    opened = Archive(archive, limits)
    if zipfile.is_zipfile(archive):
        try:
            zf = zipfile.ZipFile(archive)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ConversionError(f"{archive.name} is not a readable zip archive: {exc}") from None
        with zf:
            opened._scan_zip(zf)
            yield opened
        return
    try:
        tf = tarfile.open(archive, "r:*")  # noqa: SIM115  (closed by the with below)
    except tarfile.TarError as exc:
        raise ConversionError(f"{archive.name} is neither a zip nor a tar archive: {exc}") from None
    with tf:
        try:
            opened._scan_tar(tf)
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise ConversionError(f"{archive.name} is not a readable tar archive: {exc}") from None
        yield opened


def _is_junk(name: str) -> bool:
    parts = PurePosixPath(name).parts
    return "__MACOSX" in parts or any(p.startswith("._") for p in parts)


def find_member(names: list[str], member: str) -> str:
    """`member` itself, else the one name ending in ``/member`` (a wrapping folder)."""
    if member in names:
        return member
    hits = [n for n in names if n.endswith("/" + member) and not _is_junk(n)]
    if len(hits) == 1:
        return hits[0]
    found = "several files" if hits else "no file"
    raise ConversionError(f"the archive holds {found} named {member!r}")


def copy_member(archive: Path, member: str, dest: Path, limits: Limits = DEFAULT_LIMITS) -> bool:
    """Stream one file of a zip or tar archive (see `find_member`) into `dest`; whether it
    holds anything but white space."""
    with open_archive(archive, limits) as arc:
        return arc.copy(find_member(arc.names, member), dest)


def read_file(path: Path, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """A download a conversion reads whole (a pickle), refused over the member limit."""
    size = path.stat().st_size
    if size > limits.member_bytes:
        raise too_big(path.name, limits.member_bytes, "one file", "--max-member-bytes")
    return path.read_bytes()


class RowWriter:
    """Writes a conversion's JSON Lines, counting rows and bytes as they are written and
    stopping at the output limits (a small input can reference one large value many
    times, so only the output shows the real size)."""

    def __init__(self, path: Path, limits: Limits):
        self.path, self.limits = path, limits
        self.rows = self.bytes = 0
        self._file = path.open("wb")

    def write(self, row: dict[str, Any]) -> None:
        line = (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
        self.rows += 1
        self.bytes += len(line)
        if self.rows > self.limits.rows:
            raise OutOfBounds(
                f"{self.path.name} would have more than {self.limits.rows:,} rows, the limit "
                "for one converted set; if the release really is that large, raise the limit "
                "with --max-rows"
            )
        if self.bytes > self.limits.output_bytes:
            raise too_big(
                f"{self.path.name} as converted",
                self.limits.output_bytes,
                "one converted set",
                "--max-output-bytes",
            )
        self._file.write(line)

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self._file.close()


# ----------------------------------------------------------------------------- SheepDog


class _PlainUnpickler(pickle.Unpickler):
    """Unpickles plain containers, strings, numbers and NumPy arrays, nothing else.

    A pickle can run any code while loading; this one refuses every global but the few
    a pickled dict of lists or arrays needs.
    """

    ALLOWED: ClassVar[set[tuple[str, str]]] = {
        ("numpy.core.multiarray", "_reconstruct"),
        ("numpy._core.multiarray", "_reconstruct"),
        ("numpy.core.multiarray", "scalar"),
        ("numpy._core.multiarray", "scalar"),
        ("numpy", "ndarray"),
        ("numpy", "dtype"),
        ("builtins", "list"),
        ("builtins", "dict"),
        ("builtins", "str"),
        ("builtins", "int"),
        ("collections", "OrderedDict"),
    }

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.ALLOWED:
            raise ConversionError(f"the pickle asks for {module}.{name}, which is not data")
        return super().find_class(module, name)


def plain_unpickle(data: bytes) -> Any:
    """Load a pickle of plain data (see `_PlainUnpickler`)."""
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except ConversionError:
        raise
    except Exception as exc:  # a truncated or foreign pickle: report it, never trust it
        raise ConversionError(f"not a readable pickle: {type(exc).__name__}: {exc}") from None


def sheepdog_articles(
    downloads: Mapping[str, Path], out: Path, limits: Limits = DEFAULT_LIMITS
) -> int:
    """SheepDog's ``politifact_train.pkl`` ({news: [...], labels: [...]}) as JSON Lines
    ``{idx, label, label_name, text}`` (label 0 real, 1 fake); returns the rows written."""
    raw = plain_unpickle(read_file(downloads["politifact_train.pkl"], limits))
    if not isinstance(raw, dict) or "news" not in raw or "labels" not in raw:
        raise ConversionError("politifact_train.pkl: expected a dict with 'news' and 'labels'")
    news, labels = list(raw["news"]), [int(x) for x in raw["labels"]]
    if len(news) != len(labels):
        raise ConversionError(f"politifact_train.pkl: {len(news)} articles, {len(labels)} labels")
    if len(news) > limits.rows:
        raise OutOfBounds(
            f"politifact_train.pkl holds {len(news):,} articles, more than {limits.rows:,}, the "
            "limit for one converted set; if the release really is that large, raise the "
            "limit with --max-rows"
        )
    names = {0: "real", 1: "fake"}
    with RowWriter(out / "politifact_train.jsonl", limits) as rows:
        for i, (text, label) in enumerate(zip(news, labels, strict=True)):
            if label not in names:
                raise ConversionError(f"politifact_train.pkl: article {i} has label {label}")
            if not isinstance(text, str):  # str() of a container could be any size
                raise ConversionError(
                    f"politifact_train.pkl: article {i} is a {type(text).__name__}, not text"
                )
            rows.write({"idx": i, "label": label, "label_name": names[label], "text": str(text)})
    return rows.rows


# ----------------------------------------------------------------------------- RumourEval

_LABELS = "traindev/rumoureval-subtask{task}-{split}.json"
_SPLITS = ("train", "dev")


_KEPT = ("id", "id_str", "text", "created_at", "in_reply_to_status_id_str")


def _tweets(arc: Archive, wanted: set[str]) -> Iterator[tuple[str, str, str, dict]]:
    """(event, thread id, "source-tweet" or "replies", tweet) for every tweet file of a
    thread in `wanted` (others are not read), with only the fields the layout uses."""
    for name in arc.names:
        parts = PurePosixPath(name).parts
        if "rumoureval-data" not in parts or _is_junk(name) or not name.endswith(".json"):
            continue
        rest = parts[parts.index("rumoureval-data") + 1 :]
        if len(rest) == 4 and rest[2] in ("source-tweet", "replies") and rest[1] in wanted:
            tweet = json.loads(arc.read(name))
            if not isinstance(tweet, dict):
                raise ConversionError(f"{name}: a tweet file holds {type(tweet).__name__}")
            yield rest[0], rest[1], rest[2], {k: tweet[k] for k in _KEPT if k in tweet}


def _thread(event: str, tid: str, tweets: list[tuple[str, dict]], stance: Mapping) -> dict:
    """One thread in the loader's format (replies in id order, i.e. posting order)."""
    sources = [t for kind, t in tweets if kind == "source-tweet"]
    if len(sources) != 1:
        raise ConversionError(f"thread {event}/{tid}: {len(sources)} source tweets")
    src = sources[0]
    replies = sorted((t for kind, t in tweets if kind == "replies"), key=lambda t: int(t["id"]))
    known = {tid} | {str(t["id_str"]) for t in replies}
    return {
        "source_text": src["text"],
        "source_created_at": src.get("created_at"),
        "source_stance": stance.get(tid),
        "replies": [
            {
                "id": str(t["id_str"]),
                "parent": p if (p := t.get("in_reply_to_status_id_str")) in known else None,
                "created_at": t.get("created_at"),
                "text": t["text"],
                "stance": stance.get(str(t["id_str"])),
            }
            for t in replies
        ],
    }


def _labels(arc: Archive, task: str, split: str) -> dict[str, str]:
    name = find_member(arc.names, _LABELS.format(task=task, split=split))
    labels = json.loads(arc.read(name))
    if not isinstance(labels, dict):
        raise ConversionError(
            f"{name}: expected an object of tweet ids, got {type(labels).__name__}"
        )
    return labels


def _rumoureval_rows(arc: Archive, limits: Limits) -> list[dict]:
    veracity = {str(t): (s, v) for s in _SPLITS for t, v in _labels(arc, "B", s).items()}
    if len(veracity) > limits.rows:
        raise OutOfBounds(
            f"the release labels {len(veracity):,} threads, more than {limits.rows:,}, the limit "
            "for one converted set; if it really is that large, raise the limit with --max-rows"
        )
    stance = {str(t): v for s in _SPLITS for t, v in _labels(arc, "A", s).items()}
    threads: dict[tuple[str, str], list[tuple[str, dict]]] = {}
    kept = 0  # bytes of the tweets held for the output: refused before it is written
    for event, tid, kind, tweet in _tweets(arc, set(veracity)):
        kept += len(str(tweet.get("text", "")).encode("utf-8", "replace"))
        if kept > limits.output_bytes:
            raise too_big(
                "the threads' text", limits.output_bytes, "one converted set", "--max-output-bytes"
            )
        threads.setdefault((event, tid), []).append((kind, tweet))
    rows = []
    for (event, tid), tweets in threads.items():
        split, label = veracity[tid]
        head = {"thread_id": tid, "event": event, "split": split, "veracity": label}
        rows.append({**head, **_thread(event, tid, tweets, stance)})
    missing = set(veracity) - {r["thread_id"] for r in rows}
    if missing:
        raise ConversionError(
            f"{len(missing)} labelled threads have no tweets, e.g. {min(missing)}"
        )
    return rows


def rumoureval_threads(
    downloads: Mapping[str, Path], out: Path, limits: Limits = DEFAULT_LIMITS
) -> int:
    """SemEval-2017 Task 8's training/development archive as ``threads_train_dev.jsonl``:
    one thread a line with its split, veracity (task B) and each tweet's stance (task A);
    returns the rows written."""
    with open_archive(downloads["semeval2017-task8-dataset.tar.bz2"], limits) as arc:
        rows = _rumoureval_rows(arc, limits)
    order = {s: i for i, s in enumerate(_SPLITS)}
    rows.sort(key=lambda r: (order[r["split"]], r["event"], int(r["thread_id"])))
    with RowWriter(out / "threads_train_dev.jsonl", limits) as writer:
        for row in rows:
            writer.write(row)
    return writer.rows


Converter = Callable[[Mapping[str, Path], Path, Limits], int]

CONVERTERS: dict[str, Converter] = {
    "sheepdog_articles": sheepdog_articles,
    "rumoureval_threads": rumoureval_threads,
}
