"""Issue 38 item 5: dataset downloads go through the page fetcher's public-address guard,
never trust bytes nothing can check, and never destroy a file a user put in place.

Recorded HTTP only (respx): the guard resolves names through a table (its test seam,
`table_resolver`), the release server answers like S3, and the redirects point where an
attacker would point them (loopback, the cloud metadata address, a name that resolves
to a private address).
"""

from __future__ import annotations

import hashlib
import io
import json
import shlex
import subprocess
import tarfile

import httpx
import pytest
import respx

from veracity.datasets.catalogue import Download, Entry, Place
from veracity.datasets.fetch import (
    LOCK_FILE,
    ChecksumMismatch,
    Fetcher,
    FetchError,
    NeedsManualStep,
    download_path,
)
from veracity.testing.sources import table_resolver

PUBLIC = "93.184.215.14"
HOST = "releases.example.org"
URL = f"https://{HOST}/data.tar.gz"
DNS = {HOST: [PUBLIC], "mirror.example.org": [PUBLIC], "intranet.example.org": ["10.0.0.7"]}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def release(text: bytes = b'{"id": 1}\n') -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("data/claims.jsonl")
        info.size = len(text)
        tf.addfile(info, io.BytesIO(text))
    return buf.getvalue()


def entry(url: str = URL, pin: str | None = None) -> Entry:
    return Entry(
        "scifact", "SciFact (test)", "CC BY 4.0", "1 KB", "https://example.org",
        downloads=(Download(url, "data.tar.gz", pin, "test" if pin else ""),),
        files=(Place("claims.jsonl", "data.tar.gz", "data/claims.jsonl"),),
    )  # fmt: skip


@pytest.fixture
def said() -> list[str]:
    return []


@pytest.fixture
def fetcher(tmp_path, said):
    f = Fetcher(tmp_path, client=httpx.Client(), say=said.append, resolver=table_resolver(DNS))
    f.backoff_s = 0.0
    return f


# --------------------------------------------------------------------------- redirects

INTERNAL = [
    "https://127.0.0.1/data.tar.gz",
    "https://169.254.169.254/latest/meta-data/iam/security-credentials/",
    "https://[::1]/data.tar.gz",
    "https://intranet.example.org/data.tar.gz",  # a name that resolves to 10.0.0.7
]


@pytest.mark.parametrize("target", INTERNAL)
@respx.mock
def test_a_redirect_to_an_internal_address_is_refused(fetcher, target):
    first = respx.get(f"https://{PUBLIC}/data.tar.gz").mock(
        return_value=httpx.Response(302, headers={"location": target})
    )
    internal = respx.route(host__in=("127.0.0.1", "169.254.169.254", "::1", "10.0.0.7")).mock(
        return_value=httpx.Response(200, content=release())
    )
    with pytest.raises(FetchError, match=r"refusing to download .*non-public"):
        fetcher.install(entry())
    assert first.called and first.calls[0].request.headers["host"] == HOST
    assert not internal.called  # nothing was sent there
    assert not (fetcher.root / "scifact").exists()


@respx.mock
def test_the_first_request_is_guarded_too_and_hops_to_public_hosts_are_followed(fetcher):
    with pytest.raises(FetchError, match=r"refusing to download https://127\.0\.0\.1/x"):
        fetcher.install(entry("https://127.0.0.1/x"))
    data = release()
    respx.get(f"https://{PUBLIC}/data.tar.gz").mock(
        side_effect=lambda r: httpx.Response(302, headers={"location": "https://mirror.example.org/d"})
        if r.headers["host"] == HOST
        else httpx.Response(404)
    )  # fmt: skip
    final = respx.get(f"https://{PUBLIC}/d").mock(return_value=httpx.Response(200, content=data))
    fetcher.install(entry(pin=sha(data)))
    sent = final.calls[0].request
    assert sent.headers["host"] == "mirror.example.org"  # to the checked address, by name
    assert sent.extensions["sni_hostname"] == "mirror.example.org"


# --------------------------------------------------------------------------- .part files


@respx.mock
def test_a_part_file_of_an_unpinned_download_is_discarded_not_resumed(fetcher, said):
    genuine = release()
    served = respx.get(f"https://{PUBLIC}/data.tar.gz").mock(
        return_value=httpx.Response(200, content=genuine)
    )
    part = download_path(fetcher.root, "scifact", "data.tar.gz.part")
    part.parent.mkdir(parents=True)
    tampered = release(b'{"id": "planted"}\n')
    part.write_bytes(tampered[:-40])  # a prefix someone left to be completed
    fetcher.install(entry(pin=None))
    assert served.calls[0].request.headers.get("range") is None  # fetched from the start
    lock = json.loads((fetcher.root / LOCK_FILE).read_text())
    assert lock["urls"][URL]["sha256"] == sha(genuine)  # the first seen is the real file
    assert (fetcher.root / "scifact" / "claims.jsonl").read_bytes() == b'{"id": 1}\n'
    assert any("data.tar.gz.part" in line and "from the start" in line for line in said)


@respx.mock
def test_a_part_file_of_a_pinned_download_still_resumes(fetcher):
    data = release()
    served = respx.get(f"https://{PUBLIC}/data.tar.gz").mock(
        side_effect=lambda r: httpx.Response(
            206,
            content=data[100:],
            headers={"content-range": f"bytes 100-{len(data) - 1}/{len(data)}"},
        )
    )
    part = download_path(fetcher.root, "scifact", "data.tar.gz.part")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:100])
    fetcher.install(entry(pin=sha(data)))  # the pin checks the joined file
    assert served.calls[0].request.headers["range"] == "bytes=100-"


# --------------------------------------------------------------------------- by hand


def test_a_mismatching_file_put_in_place_by_hand_is_kept_and_the_advice_works(tmp_path):
    genuine, other = release(), release(b'{"id": 2}\n')
    by_hand = download_path(tmp_path, "scifact", "data.tar.gz")
    by_hand.parent.mkdir(parents=True)
    by_hand.write_bytes(other)
    with pytest.raises(ChecksumMismatch) as caught:
        Fetcher(tmp_path, offline=True).install(entry(pin=sha(genuine)))
    kept = by_hand.with_name(f"data.tar.gz.mismatch-{sha(other)[:8]}")
    assert kept.read_bytes() == other and not by_hand.exists()
    msg = str(caught.value)
    assert f"expected sha256 {sha(genuine)}" in msg and f"got {sha(other)}" in msg
    assert f"moved to {kept}" in msg
    # the advice is two commands: put it back, then install it unchecked
    move = msg.split("To use that file anyway: `")[1].split("`")[0]
    subprocess.run(shlex.split(move), check=True)
    assert by_hand.read_bytes() == other
    command = msg.split(" then `")[1].split("`")[0]
    assert command == f"veracity datasets get scifact --data-dir {tmp_path} --no-verify"
    Fetcher(tmp_path, offline=True, verify=False, say=lambda line: None).install(
        entry(pin=sha(genuine))
    )
    assert (tmp_path / "scifact" / "claims.jsonl").read_bytes() == b'{"id": 2}\n'


def test_the_manual_step_names_the_exact_path(tmp_path):
    with pytest.raises(NeedsManualStep) as caught:
        Fetcher(tmp_path, offline=True).install(entry(pin=sha(release())))
    where = download_path(tmp_path, "scifact", "data.tar.gz")
    assert f"download {URL} by hand and put it at {where}" in str(caught.value)
    assert "/downloads/scifact/data.tar.gz" in str(caught.value)  # visible, named by its set


def test_sets_fetched_by_hand_name_the_path_of_every_file_their_loaders_read(tmp_path):
    from veracity.datasets import get_dataset, list_datasets
    from veracity.datasets.catalogue import entry as entry_of

    checked = 0
    for info in list_datasets(installed_only=True):
        e = entry_of(info.folder)
        if e.kind != "manual":
            continue
        with pytest.raises(NeedsManualStep) as caught:
            Fetcher(tmp_path, offline=True).install(e)
        for split in info.splits:
            for name in get_dataset(info.name).split_files[split]:
                assert str(tmp_path / info.folder / name) in str(caught.value), (info.name, name)
                checked += 1
    assert checked >= 9
