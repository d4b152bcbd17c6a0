"""Issue 38 item 4: what a release may unpack to and a conversion may write is bounded.

Each probe is a small release built here and put where a hand download goes
(``<data dir>/downloads/SET/NAME``), installed offline through `Fetcher` or the command line:
a tar.bz2 whose label file unpacks far beyond its size, a zip bomb taken with
``--no-verify``, a SheepDog pickle that references one string many times, label files
with nothing in them. The limits are set low through the same parameters the flags set,
so the archives stay small; one subprocess checks that peak memory stays bounded under
the default limits.
"""

from __future__ import annotations

import io
import json
import pickle
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.datasets.catalogue import Download, Entry, Place
from veracity.datasets.convert import DEFAULT_LIMITS, Limits, MiB
from veracity.datasets.fetch import Fetcher, FetchError, download_path

RUMOUR = "semeval2017-task8-dataset.tar.bz2"
ROOT = "semeval2017-task8-dataset"


class _Spaces(io.RawIOBase):
    """`head` followed by `n` spaces, produced as read (never held whole)."""

    def __init__(self, head: bytes, n: int):
        self.head, self.left = head, n

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.head:
            k = min(len(b), len(self.head))
            b[:k], self.head = self.head[:k], self.head[k:]
            return k
        k = min(len(b), self.left)
        b[:k] = b" " * k
        self.left -= k
        return k


def _tweet(tid: str, text: str, parent: str | None = None) -> bytes:
    return json.dumps(
        {"id": int(tid), "id_str": tid, "text": text, "created_at": "Mon Jan 05 10:00:00 2015",
         "in_reply_to_status_id_str": parent}
    ).encode()  # fmt: skip


def semeval(threads: int = 12, pad: int = 0, labels: bool = True, fast: bool = False) -> bytes:
    """SemEval-2017 Task 8's layout: `threads` threads, the task B training labels padded
    with `pad` spaces (still valid JSON), or every label file ``{}``; bz2 as released, or
    (`fast`) gzip at level 1, quicker to build for a large pad (read alike: ``r:*``)."""
    buf = io.BytesIO()
    how = {"mode": "w:gz", "compresslevel": 1} if fast else {"mode": "w:bz2"}
    with tarfile.open(fileobj=buf, **how) as tf:

        def add(name: str, data: bytes, pad: int = 0) -> None:
            info = tarfile.TarInfo(f"{ROOT}/{name}")
            info.size = len(data) + pad
            tf.addfile(info, io.BufferedReader(_Spaces(data, pad), 1 << 20))

        ids = [str(700000 + i) for i in range(threads)]
        for t in ids:
            add(f"rumoureval-data/ev/{t}/source-tweet/{t}.json", _tweet(t, f"claim {t}"))
            reply = str(int(t) + 5000)
            add(f"rumoureval-data/ev/{t}/replies/{reply}.json", _tweet(reply, "really?", t))
        veracity = {t: "true" for t in ids} if labels else {}
        stance = {t: "support" for t in ids} if labels else {}
        add("traindev/rumoureval-subtaskB-train.json", json.dumps(veracity).encode(), pad)
        add("traindev/rumoureval-subtaskA-train.json", json.dumps(stance).encode())
        for task in "AB":
            add(f"traindev/rumoureval-subtask{task}-dev.json", b"{}")
    return buf.getvalue()


RUMOUR_ENTRY = Entry(
    "rumoureval2017", "RumourEval (test)", "CC BY 4.0", "small", "https://example.org",
    downloads=(Download("https://example.org/" + RUMOUR, RUMOUR),),
    convert="rumoureval_threads", outputs=("threads_train_dev.jsonl",),
)  # fmt: skip
SHEEPDOG_ENTRY = Entry(
    "sheepdog_politifact", "SheepDog (test)", "", "small", "https://example.org",
    downloads=(Download("https://example.org/politifact_train.pkl", "politifact_train.pkl"),),
    convert="sheepdog_articles", outputs=("politifact_train.jsonl",),
)  # fmt: skip


def liar_entry(data: bytes | None = None) -> Entry:
    """LIAR from a zip; pinned to something else than `data` (taken with --no-verify)."""
    return Entry(
        "liar", "LIAR (test)", "research", "small", "https://example.org",
        downloads=(Download("https://example.org/liar.zip", "liar.zip", "0" * 64, "test"),),
        files=tuple(Place(n, "liar.zip", n) for n in ("train.tsv", "valid.tsv")),
    )  # fmt: skip


def placed(root: Path, name: str, data: bytes) -> Path:
    """`data` put where a download made by hand goes."""
    folder = {RUMOUR: "rumoureval2017", "liar.zip": "liar"}.get(name, "sheepdog_politifact")
    path = download_path(root, folder, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def offline(root: Path, **limits) -> Fetcher:
    return Fetcher(
        root, offline=True, verify=False, say=lambda line: None,
        limits=replace(DEFAULT_LIMITS, **limits),
    )  # fmt: skip


def nothing_installed(root: Path, folder: str) -> bool:
    return not (root / folder).exists() and not list(root.glob(f".{folder}*"))


TSV = b"1.json\tfalse\tSays the moon is cheese.\tspace\tsomeone\t\t\t\t0\t0\t0\t0\t0\ta speech\n"


def zip_bomb(train_bytes: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("liar_dataset/train.tsv", "w") as f:
            f.write(TSV)
            for _ in range(train_bytes // MiB):
                f.write(b"\0" * MiB)
        zf.writestr("liar_dataset/valid.tsv", TSV * 3)
    return buf.getvalue()


# --------------------------------------------------------------------------- bombs


def test_a_bz2_label_file_past_the_member_limit_is_refused_before_it_is_read(tmp_path):
    bomb = semeval(pad=8 * MiB)
    assert len(bomb) < 4096  # 8 MiB of label file in a few KB
    placed(tmp_path, RUMOUR, bomb)
    with pytest.raises(FetchError) as caught:
        offline(tmp_path, member_bytes=2 * MiB).install(RUMOUR_ENTRY)
    msg = str(caught.value)
    assert "rumoureval-subtaskB-train.json in semeval2017-task8-dataset.tar.bz2" in msg
    assert "larger than 2 MiB" in msg and "--max-member-bytes" in msg
    assert "nothing was installed" in msg and nothing_installed(tmp_path, "rumoureval2017")


def test_an_archive_past_the_total_limit_is_refused_as_its_headers_are_read(tmp_path):
    placed(tmp_path, RUMOUR, semeval(pad=8 * MiB))
    with pytest.raises(FetchError, match=r"everything semeval.* unpacks to is larger than 4 MiB"):
        offline(tmp_path, archive_bytes=4 * MiB).install(RUMOUR_ENTRY)
    assert nothing_installed(tmp_path, "rumoureval2017")


def test_the_flag_lets_a_legitimately_large_member_through(tmp_path):
    runner = CliRunner()
    placed(tmp_path, RUMOUR, semeval(pad=3 * MiB))
    env = {"VERACITY_OFFLINE": "1"}
    base = ["datasets", "get", "rumoureval2017", "--data-dir", str(tmp_path)]
    small = runner.invoke(app, [*base, "--max-member-bytes", "1M"], env=env)
    assert small.exit_code == 1 and "--max-member-bytes" in " ".join(small.output.split())
    assert nothing_installed(tmp_path, "rumoureval2017")
    big = runner.invoke(app, [*base, "--max-member-bytes", "4M"], env=env)
    assert big.exit_code == 0, big.output
    rows = (tmp_path / "rumoureval2017" / "threads_train_dev.jsonl").read_text().splitlines()
    assert len(rows) == 12
    bad = runner.invoke(app, [*base, "--max-member-bytes", "lots"], env=env)
    assert bad.exit_code == 2 and "--max-member-bytes takes a size" in bad.output


def test_a_zip_bomb_taken_with_no_verify_is_still_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr("veracity.datasets.releases.ENTRIES", (liar_entry(),))
    bomb = zip_bomb(6 * MiB)
    assert len(bomb) < 64 * 1024
    placed(tmp_path, "liar.zip", bomb)
    result = CliRunner().invoke(
        app,
        ["datasets", "get", "liar", "--data-dir", str(tmp_path), "--no-verify",
         "--max-member-bytes", "2M"],
        env={"VERACITY_OFFLINE": "1"},
    )  # fmt: skip
    flat = " ".join(result.output.split())
    assert result.exit_code == 1, flat
    assert "train.tsv in liar.zip is larger than 2 MiB" in flat and "--max-member-bytes" in flat
    assert nothing_installed(tmp_path, "liar")
    with pytest.raises(FetchError, match=r"everything liar\.zip unpacks to .* --max-archive"):
        offline(tmp_path, archive_bytes=4 * MiB).install(liar_entry())


# --------------------------------------------------------------------------- pickles


def test_a_pickle_that_repeats_one_string_cannot_write_without_bound(tmp_path):
    text = "x" * 10_000
    pkl = pickle.dumps({"news": [text] * 500, "labels": [0] * 500})
    assert len(pkl) < 13_000  # 5 MB of articles in 12 KB
    placed(tmp_path, "politifact_train.pkl", pkl)
    with pytest.raises(FetchError) as caught:
        offline(tmp_path, output_bytes=MiB).install(SHEEPDOG_ENTRY)
    msg = str(caught.value)
    assert "politifact_train.jsonl as converted is larger than 1 MiB" in msg
    assert "--max-output-bytes" in msg and nothing_installed(tmp_path, "sheepdog_politifact")
    with pytest.raises(FetchError, match=r"500 articles, more than 100.* --max-rows"):
        offline(tmp_path, rows=100).install(SHEEPDOG_ENTRY)
    offline(tmp_path, output_bytes=8 * MiB).install(SHEEPDOG_ENTRY)  # the flag's way through
    lines = (tmp_path / "sheepdog_politifact" / "politifact_train.jsonl").read_text()
    assert lines.count("\n") == 500


def test_an_article_that_is_not_text_is_refused(tmp_path):
    """str() of a list that repeats one string would build the whole amplified text."""
    pkl = pickle.dumps({"news": [["x" * 1000] * 1000] * 20, "labels": [0] * 20})
    placed(tmp_path, "politifact_train.pkl", pkl)
    with pytest.raises(FetchError, match=r"article 0 is a list, not text"):
        offline(tmp_path).install(SHEEPDOG_ENTRY)


# --------------------------------------------------------------------------- empty releases


def test_empty_label_files_install_nothing(tmp_path):
    placed(tmp_path, RUMOUR, semeval(labels=False))
    with pytest.raises(FetchError) as caught:
        offline(tmp_path).install(RUMOUR_ENTRY)
    msg = str(caught.value)
    assert "the conversion gave 0 rows, fewer than 10" in msg and "--allow-empty" in msg
    assert nothing_installed(tmp_path, "rumoureval2017")
    placed(tmp_path, RUMOUR, semeval(threads=3))
    with pytest.raises(FetchError, match=r"gave 3 rows, fewer than 10"):
        offline(tmp_path).install(RUMOUR_ENTRY)
    offline(tmp_path, allow_empty=True).install(RUMOUR_ENTRY)  # the user says it is meant
    assert (tmp_path / "rumoureval2017" / "threads_train_dev.jsonl").read_text().count("\n") == 3


def test_an_empty_file_taken_from_an_archive_is_refused(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("liar_dataset/train.tsv", b" \n\n")
        zf.writestr("liar_dataset/valid.tsv", TSV)
    placed(tmp_path, "liar.zip", buf.getvalue())
    with pytest.raises(FetchError, match=r"train\.tsv is empty .* --allow-empty"):
        offline(tmp_path).install(liar_entry())
    assert nothing_installed(tmp_path, "liar")


# --------------------------------------------------------------------------- memory

_PEAK = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from test_archive_bounds import RUMOUR_ENTRY
    from veracity.datasets.fetch import Fetcher, FetchError
    try:
        Fetcher(Path(sys.argv[1]), offline=True, say=lambda line: None).install(RUMOUR_ENTRY)
        print("installed")
    except FetchError as exc:
        print("refused:", exc)
    # VmHWM is this process's own peak: ru_maxrss keeps the parent's peak across fork and
    # exec, so a pytest worker that had grown to 480 MiB made every child report it
    hwm = next(l for l in Path("/proc/self/status").read_text().splitlines()
               if l.startswith("VmHWM:"))
    print(int(hwm.split()[1]) // 1024)
    """
)


def test_peak_memory_stays_bounded_under_the_default_limits(tmp_path):
    """A 300 MiB label file (1.4 MB of gzip) under the default limits: refused, and the
    process never holds it (the code before read it whole and decoded it: about 3× its
    size in memory)."""
    assert Limits() == DEFAULT_LIMITS
    placed(tmp_path, RUMOUR, semeval(pad=300 * MiB, fast=True))
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(tmp_path), str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    verdict, peak_mib = done.stdout.strip().splitlines()
    assert verdict.startswith("refused:") and "larger than 256 MiB" in verdict, verdict
    assert int(peak_mib) < 200, f"peak RSS {peak_mib} MiB"
