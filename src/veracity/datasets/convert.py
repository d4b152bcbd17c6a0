"""Turning downloaded releases into the files the loaders read.

`read_member` takes one file out of a tar (gz, bz2, xz) or zip archive by name, never
unpacking anything else, so an archive cannot write outside the folder being built.
`CONVERTERS` holds the conversions of releases whose format differs from the layout:
SheepDog's pickled articles and RumourEval 2017's folders of tweet JSON files.
Every converter reads the downloads it is given and writes only into `out`.
"""

from __future__ import annotations

import contextlib
import io
import json
import pickle
import tarfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

from veracity.core.errors import DatasetError

Reader = Callable[[str], bytes]


class ConversionError(DatasetError):
    """A release does not have the shape its conversion expects."""


# ----------------------------------------------------------------------------- archives


@contextlib.contextmanager
def open_archive(archive: Path) -> Iterator[tuple[list[str], Reader]]:
    """The file names of a zip or tar archive and a reader for one of them."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            yield [i.filename for i in zf.infolist() if not i.is_dir()], zf.read
        return
    try:
        tf = tarfile.open(archive, "r:*")  # noqa: SIM115  (closed by the with below)
    except tarfile.TarError as exc:
        raise ConversionError(f"{archive.name} is neither a zip nor a tar archive: {exc}") from None
    with tf:
        files = {m.name: m for m in tf.getmembers() if m.isfile()}

        def read(name: str) -> bytes:
            handle = tf.extractfile(files[name])
            if handle is None:
                raise ConversionError(f"{archive.name}: {name} cannot be read")
            return handle.read()

        yield list(files), read


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


def read_member(archive: Path, member: str) -> bytes:
    """The bytes of one file of a zip or tar archive (see `find_member`)."""
    with open_archive(archive) as (names, read):
        return read(find_member(names, member))


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


def sheepdog_articles(downloads: Mapping[str, Path], out: Path) -> None:
    """SheepDog's ``politifact_train.pkl`` ({news: [...], labels: [...]}) as JSON Lines
    ``{idx, label, label_name, text}`` (label 0 real, 1 fake)."""
    raw = plain_unpickle(downloads["politifact_train.pkl"].read_bytes())
    if not isinstance(raw, dict) or "news" not in raw or "labels" not in raw:
        raise ConversionError("politifact_train.pkl: expected a dict with 'news' and 'labels'")
    news, labels = list(raw["news"]), [int(x) for x in raw["labels"]]
    if len(news) != len(labels):
        raise ConversionError(f"politifact_train.pkl: {len(news)} articles, {len(labels)} labels")
    names = {0: "real", 1: "fake"}
    with (out / "politifact_train.jsonl").open("w", encoding="utf-8") as f:
        for i, (text, label) in enumerate(zip(news, labels, strict=True)):
            if label not in names:
                raise ConversionError(f"politifact_train.pkl: article {i} has label {label}")
            row = {"idx": i, "label": label, "label_name": names[label], "text": str(text)}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


# ----------------------------------------------------------------------------- RumourEval

_LABELS = "traindev/rumoureval-subtask{task}-{split}.json"
_SPLITS = ("train", "dev")


def _tweets(names: list[str], read: Reader) -> Iterator[tuple[str, str, str, dict]]:
    """(event, thread id, "source-tweet" or "replies", tweet) for every tweet file."""
    for name in names:
        parts = PurePosixPath(name).parts
        if "rumoureval-data" not in parts or _is_junk(name) or not name.endswith(".json"):
            continue
        rest = parts[parts.index("rumoureval-data") + 1 :]
        if len(rest) == 4 and rest[2] in ("source-tweet", "replies"):
            yield rest[0], rest[1], rest[2], json.loads(read(name))


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


def _labels(names: list[str], read: Reader, task: str, split: str) -> dict[str, str]:
    return json.loads(read(find_member(names, _LABELS.format(task=task, split=split))))


def _rumoureval_rows(names: list[str], read: Reader) -> list[dict]:
    veracity = {str(t): (s, v) for s in _SPLITS for t, v in _labels(names, read, "B", s).items()}
    stance = {str(t): v for s in _SPLITS for t, v in _labels(names, read, "A", s).items()}
    threads: dict[tuple[str, str], list[tuple[str, dict]]] = {}
    for event, tid, kind, tweet in _tweets(names, read):
        threads.setdefault((event, tid), []).append((kind, tweet))
    rows = []
    for (event, tid), tweets in threads.items():
        if tid in veracity:
            split, label = veracity[tid]
            head = {"thread_id": tid, "event": event, "split": split, "veracity": label}
            rows.append({**head, **_thread(event, tid, tweets, stance)})
    missing = set(veracity) - {r["thread_id"] for r in rows}
    if missing:
        raise ConversionError(
            f"{len(missing)} labelled threads have no tweets, e.g. {min(missing)}"
        )
    return rows


def rumoureval_threads(downloads: Mapping[str, Path], out: Path) -> None:
    """SemEval-2017 Task 8's training/development archive as ``threads_train_dev.jsonl``:
    one thread a line with its split, veracity (task B) and each tweet's stance (task A)."""
    with open_archive(downloads["semeval2017-task8-dataset.tar.bz2"]) as (names, read):
        rows = _rumoureval_rows(names, read)
    order = {s: i for i, s in enumerate(_SPLITS)}
    rows.sort(key=lambda r: (order[r["split"]], r["event"], int(r["thread_id"])))
    with (out / "threads_train_dev.jsonl").open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


CONVERTERS: dict[str, Callable[[Mapping[str, Path], Path], None]] = {
    "sheepdog_articles": sheepdog_articles,
    "rumoureval_threads": rumoureval_threads,
}
