"""`veracity.datasets.fetch`: downloads against recorded release servers, then the loaders.

No network: every request goes to a respx router (`_fetch_helpers.ReleaseServer`), and the
releases are archives built here from the miniature fixtures.
"""

from __future__ import annotations

import json
import shutil

import httpx
import pytest
import respx
from _fetch_helpers import FIX, ReleaseServer, public_dns, sha, tar_gz, zip_bytes

from veracity.datasets import load_dataset
from veracity.datasets.catalogue import Download, Entry, Place
from veracity.datasets.convert import CONVERTERS
from veracity.datasets.fetch import (
    LOCK_FILE,
    MANIFEST,
    ChecksumMismatch,
    Fetcher,
    FetchError,
    NeedsManualStep,
    download_path,
    is_installed,
)

S3 = "https://scifact.example-bucket.s3.amazonaws.com/release/latest/data.tar.gz"
RAW = "https://raw.githubusercontent.com/owner/repo/0123456789abcdef0123456789abcdef01234567"


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr("veracity.datasets.fetch.RESOLVER", public_dns)
    with respx.mock(assert_all_called=False) as router:
        yield ReleaseServer(router)


@pytest.fixture
def said() -> list[str]:
    return []


@pytest.fixture
def fetcher(tmp_path, said):
    f = Fetcher(tmp_path / "data", client=httpx.Client(), say=said.append)
    f.backoff_s = 0.0
    return f


def scifact_release() -> bytes:
    files = {
        f"data/{n}": (FIX / "scifact" / n).read_bytes()
        for n in ("corpus.jsonl", "claims_train.jsonl")
    }
    files["._data"] = b"\x00AppleDouble"  # what the real archive carries beside data/
    return tar_gz(files)


def scifact_entry(data: bytes, url: str = S3, pin: str | None = "sha") -> Entry:
    return Entry(
        "scifact", "SciFact", "CC BY 4.0", "1 KB", "https://example.org",
        downloads=(Download(url, "data.tar.gz", sha(data) if pin == "sha" else pin, "test"),),
        files=(
            Place("corpus.jsonl", "data.tar.gz", "data/corpus.jsonl"),
            Place("claims_train.jsonl", "data.tar.gz", "data/claims_train.jsonl"),
        ),
    )  # fmt: skip


def test_a_tarball_release_installs_and_the_loader_reads_it(server, fetcher):
    data = scifact_release()
    server.add(S3, data)
    folder = fetcher.install(scifact_entry(data))
    assert folder == fetcher.root / "scifact"
    got = load_dataset("scifact", "train", data_dir=fetcher.root)
    want = load_dataset("scifact", "train", data_dir=FIX)
    assert [e.model_dump() for e in got] == [e.model_dump() for e in want] and len(got) == 3
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["sources"] == [{"url": S3, "sha256": sha(data), "pinned": True}]
    assert set(manifest["files"]) == {"corpus.jsonl", "claims_train.jsonl"}
    assert not download_path(fetcher.root, "scifact", "data.tar.gz").exists()  # cleaned up
    assert server.ranges(S3) == [None]


def test_a_zip_release_installs_members_found_under_a_wrapping_folder(server, fetcher):
    files = {
        f"liar_dataset/{n}": (FIX / "liar" / n).read_bytes() for n in ("train.tsv", "valid.tsv")
    }
    url = server.add("https://www.example.edu/liar_dataset.zip", zip_bytes(files))
    entry = Entry(
        "liar", "LIAR", "research use only", "1 KB", url,
        downloads=(Download(url, "liar.zip", sha(zip_bytes(files))),),
        files=tuple(Place(n, "liar.zip", n) for n in ("train.tsv", "valid.tsv")),
    )  # fmt: skip
    fetcher.install(entry)
    assert len(load_dataset("liar", "valid", data_dir=fetcher.root)) == len(
        load_dataset("liar", "valid", data_dir=FIX)
    )


def test_a_body_broken_half_way_resumes_with_a_range_request(server, fetcher):
    data = scifact_release()
    server.add(S3, data, break_at=[len(data) // 2])
    fetcher.install(scifact_entry(data))
    assert server.ranges(S3) == [None, f"bytes={len(data) // 2}-"]
    assert len(load_dataset("scifact", "train", data_dir=fetcher.root)) == 3


def test_a_server_that_ignores_range_restarts_the_file_cleanly(server, fetcher):
    data = scifact_release()
    server.add(S3, data, break_at=[100])
    server.ignore_range.add(S3)  # answers 200 with the whole file to the Range request
    fetcher.install(scifact_entry(data))  # the pinned checksum proves no bytes doubled
    assert server.ranges(S3) == [None, "bytes=100-"]


def test_a_partial_file_left_by_an_earlier_run_is_resumed(server, fetcher):
    data = scifact_release()
    server.add(S3, data)
    part = download_path(fetcher.root, "scifact", "data.tar.gz.part")
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:500])
    fetcher.install(scifact_entry(data))
    assert server.ranges(S3) == ["bytes=500-"]


def test_a_404_fails_clearly_and_installs_nothing(server, fetcher):
    server.missing(S3)
    with pytest.raises(FetchError, match=r"answered HTTP 404; nothing was installed"):
        fetcher.install(scifact_entry(b"x"))
    assert not (fetcher.root / "scifact").exists()
    assert not list(fetcher.root.glob(".scifact*"))


def test_no_answer_says_what_to_download_by_hand_and_where(server, fetcher, tmp_path):
    server.refuse(S3)
    with pytest.raises(NeedsManualStep) as caught:
        fetcher.install(scifact_entry(scifact_release()))
    where = download_path(fetcher.root, "scifact", "data.tar.gz")
    msg = str(caught.value)
    assert f"download {S3} by hand and put it at {where}" in msg
    assert "ConnectError" in msg and "veracity datasets get scifact" in msg
    assert len(server.requests) == fetcher.attempts and not (fetcher.root / "scifact").exists()
    # done by hand: the next run, offline, installs from that file
    where.write_bytes(scifact_release())
    offline = Fetcher(fetcher.root, offline=True, client=httpx.Client())
    offline.install(scifact_entry(scifact_release()))
    assert len(load_dataset("scifact", "train", data_dir=fetcher.root)) == 3
    assert len(server.requests) == fetcher.attempts  # no request made offline


def test_downloads_live_in_a_visible_folder_per_set_and_old_ones_are_taken_over(tmp_path):
    # issue 41: a file to place by hand went to a hidden `.downloads/` under a generic name
    # shared by every set (two releases both call theirs dev.json)
    data = scifact_release()
    assert download_path(tmp_path, "scifact", "data.tar.gz") == (
        tmp_path / "downloads" / "scifact" / "data.tar.gz"
    )
    assert download_path(tmp_path, "a", "dev.json") != download_path(tmp_path, "b", "dev.json")
    legacy = tmp_path / ".downloads" / "data.tar.gz"
    legacy.parent.mkdir()
    legacy.write_bytes(data)  # where an earlier version kept it, matching the pin
    said: list[str] = []
    Fetcher(tmp_path, offline=True, client=httpx.Client(), say=said.append).install(
        scifact_entry(data)
    )
    assert not legacy.exists() and any("moved" in line for line in said)
    assert len(load_dataset("scifact", "train", data_dir=tmp_path)) == 3


def test_an_old_download_of_another_set_is_not_taken_over(tmp_path):
    legacy = tmp_path / ".downloads" / "data.tar.gz"
    legacy.parent.mkdir()
    legacy.write_bytes(b"another set's file of the same name")
    with pytest.raises(NeedsManualStep):
        Fetcher(tmp_path, offline=True, client=httpx.Client()).install(
            scifact_entry(scifact_release())
        )
    assert legacy.is_file()  # left alone


def test_offline_makes_no_request(server, tmp_path):
    server.add(S3, b"never sent")
    offline = Fetcher(tmp_path, offline=True, client=httpx.Client())
    with pytest.raises(NeedsManualStep, match=r"offline \(VERACITY_OFFLINE=1\); download "):
        offline.install(scifact_entry(b"never sent"))
    assert server.requests == []


def test_a_checksum_mismatch_refuses_with_both_hashes(server, fetcher):
    data = scifact_release()
    server.add(S3, data)
    wrong = "0" * 64
    with pytest.raises(ChecksumMismatch) as caught:
        fetcher.install(scifact_entry(data, pin=wrong))
    assert f"expected sha256 {wrong} (pinned (test)), got {sha(data)}" in str(caught.value)
    assert "--no-verify" in str(caught.value)
    assert not (fetcher.root / "scifact").exists()
    # the bad file is gone
    assert not download_path(fetcher.root, "scifact", "data.tar.gz").exists()


def test_no_verify_installs_a_mismatching_file_and_says_so(server, tmp_path, said):
    data = scifact_release()
    server.add(S3, data)
    loose = Fetcher(tmp_path, verify=False, client=httpx.Client(), say=said.append)
    loose.install(scifact_entry(data, pin="0" * 64))
    assert is_installed(tmp_path, scifact_entry(data))
    assert any("NOT checked (--no-verify)" in line and sha(data) in line for line in said)


def test_an_unpinned_download_is_recorded_then_held_to(server, fetcher, said):
    data = scifact_release()
    server.add(S3, data)
    fetcher.install(scifact_entry(data, pin=None))
    assert any(line.startswith("WARNING") and "no published checksum" in line for line in said)
    lock = json.loads((fetcher.root / LOCK_FILE).read_text())
    assert lock["urls"][S3]["sha256"] == sha(data)
    # the release changes under the same URL: a later download is refused
    changed = tar_gz({"data/corpus.jsonl": b"{}\n", "data/claims_train.jsonl": b"{}\n"})
    server.files[S3] = changed
    again = Fetcher(fetcher.root, client=httpx.Client(), say=said.append)
    with pytest.raises(
        ChecksumMismatch, match=r"recorded on its first download in .*datasets\.lock\.json"
    ):
        again.install(scifact_entry(changed, pin=None))
    assert len(load_dataset("scifact", "train", data_dir=fetcher.root)) == 3  # old copy intact


def test_a_failing_conversion_leaves_nothing_and_keeps_the_old_copy(server, fetcher):
    data = scifact_release()
    server.add(S3, data)
    fetcher.install(scifact_entry(data))
    broken = Entry(
        "scifact", "SciFact", "", "", "",
        downloads=scifact_entry(data).downloads,
        files=(Place("corpus.jsonl", "data.tar.gz", "data/no_such_member.jsonl"),),
    )  # fmt: skip
    with pytest.raises(
        FetchError, match=r"converting the release failed .*no_such_member.*nothing"
    ):
        fetcher.install(broken)
    assert not list(fetcher.root.glob(".scifact*"))
    assert len(load_dataset("scifact", "train", data_dir=fetcher.root)) == 3
    (fetcher.root / "scifact").rename(fetcher.root / "gone")
    with pytest.raises(FetchError):
        fetcher.install(broken)
    assert not (fetcher.root / "scifact").exists()


def test_redirects_are_followed_only_to_https(server, fetcher):
    data = scifact_release()
    server.add(S3, data)
    moved = "https://www.example.edu/old/data.tar.gz"
    server.redirect(moved, S3)
    fetcher.install(scifact_entry(data, url=moved))
    server.redirect("https://www.example.edu/plain", "http://insecure.example.edu/data.tar.gz")
    with pytest.raises(FetchError, match="not an https URL"):
        fetcher.install(scifact_entry(data, url="https://www.example.edu/plain"))


def test_a_raw_file_release_and_a_copy_from_another_set(server, fetcher, said):
    shutil.copytree(FIX / "fire_claimsets", fetcher.root / "fire_claimsets")
    hop2 = (FIX / "mermaid_eval_sets/sets/HoVerDev_two_hop_df_new.jsonl").read_bytes()
    url = server.add(f"{RAW}/dataset/HoVerDev/processed/two_hop_df_new.jsonl", hop2)
    bing = (FIX / "fire_claimsets/bingcheck/data.jsonl").read_bytes()
    from veracity.datasets.catalogue import Copy

    entry = Entry(
        "mermaid_eval_sets", "MERMAID", "not stated", "1 KB", RAW,
        downloads=(Download(url, "hop2", sha(hop2)),),
        files=(Place("sets/HoVerDev_two_hop_df_new.jsonl", "hop2"),),
        copies=(
            Copy("sets/bingcheck_data.jsonl", "fire_claimsets", "bingcheck/data.jsonl", sha(bing)),
            Copy("sets/factcheckbench_data.jsonl", "absent_set", "x.jsonl", "0" * 64),
        ),
    )  # fmt: skip
    fetcher.install(entry)
    assert len(load_dataset("mermaid_hover_2hop", data_dir=fetcher.root)) == 1
    assert len(load_dataset("mermaid_bingcheck", data_dir=fetcher.root)) == len(
        load_dataset("fire_bingcheck", data_dir=FIX)
    )
    assert any("get absent_set first" in line for line in said)
    assert not is_installed(fetcher.root, entry)  # one file still missing


def test_manual_and_built_sets_say_what_to_do(fetcher):
    manual = Entry("gossipcop_text_subset", "G", "", "", "", manual="fetch it; put it in {path}")
    with pytest.raises(NeedsManualStep, match=r"put it in .*gossipcop_text_subset$"):
        fetcher.install(manual)
    built = Entry("advfact", "A", "", "", "", build="veracity advfact build")
    with pytest.raises(NeedsManualStep, match="run `veracity advfact build`"):
        fetcher.install(built)


def test_an_interrupted_conversion_leaves_no_half_built_folder(server, fetcher, monkeypatch):
    data = b"pickled articles"
    url = server.add(f"{RAW}/data/news_articles/politifact_train.pkl", data)

    def interrupted(downloads, out, limits):
        (out / "politifact_train.jsonl").write_text("{}\n")
        raise KeyboardInterrupt

    monkeypatch.setitem(CONVERTERS, "sheepdog_articles", interrupted)
    entry = Entry(
        "sheepdog_politifact", "SheepDog", "", "", "",
        downloads=(Download(url, "politifact_train.pkl", sha(data)),),
        convert="sheepdog_articles", outputs=("politifact_train.jsonl",),
    )  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        fetcher.install(entry)
    assert not list(fetcher.root.glob("*sheepdog*")) and not list(fetcher.root.glob(".sheep*"))
