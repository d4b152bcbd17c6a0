"""`veracity datasets` and `veracity datasets get` through the command line (no network).

The catalogue is replaced by entries whose releases a respx router serves, built here from
the miniature fixtures; the real catalogue is checked against the loaders separately.
"""

from __future__ import annotations

import shutil

import pytest
import respx
from _fetch_helpers import FIX, ReleaseServer, public_dns, sha, tar_gz
from typer.testing import CliRunner

from veracity.cli import app
from veracity.datasets import load_dataset
from veracity.datasets.catalogue import Download, Entry, Place

runner = CliRunner()
S3 = "https://scifact.example-bucket.s3.amazonaws.com/release/latest/data.tar.gz"
LIAR = "https://www.example.edu/liar_dataset.tar.gz"


def _release(folder: str, names: tuple[str, ...]) -> bytes:
    return tar_gz({f"data/{n}": (FIX / folder / n).read_bytes() for n in names})


SCIFACT = _release("scifact", ("corpus.jsonl", "claims_train.jsonl"))
LIAR_TAR = _release("liar", ("train.tsv", "valid.tsv"))


def _entry(folder: str, url: str, data: bytes, names: tuple[str, ...]) -> Entry:
    return Entry(
        folder, f"{folder} (test release)", "CC BY 4.0 (test)", "about 1 KB", url,
        downloads=(Download(url, "release.tar.gz", sha(data), "test pin"),),
        files=tuple(Place(n, "release.tar.gz", f"data/{n}") for n in names),
    )  # fmt: skip


TEST_ENTRIES = (
    _entry("scifact", S3, SCIFACT, ("corpus.jsonl", "claims_train.jsonl")),
    _entry("liar", LIAR, LIAR_TAR, ("train.tsv", "valid.tsv")),
    Entry("gossipcop_text_subset", "GossipCop", "not stated", "2.6 MB", "",
          manual="Fetch the texts by hand. Put them in {path}."),
    Entry("advfact", "AdvFact", "research only", "built", "", build="veracity advfact build"),
)  # fmt: skip


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setattr("veracity.datasets.releases.ENTRIES", TEST_ENTRIES)
    monkeypatch.delenv("VERACITY_OFFLINE", raising=False)
    monkeypatch.setattr("veracity.datasets.fetch.Fetcher.backoff_s", 0.0, raising=False)
    monkeypatch.setattr("veracity.datasets.fetch.RESOLVER", public_dns)
    with respx.mock(assert_all_called=False) as router:
        yield ReleaseServer(router)


def _get(data_dir, *args):
    return runner.invoke(app, ["datasets", "get", *args, "--data-dir", str(data_dir)])


def test_listing_fits_80_columns_and_says_how_to_get_each_set(tmp_path):
    shutil.copytree(FIX / "scifact", tmp_path / "scifact")
    result = runner.invoke(
        app, ["datasets", "--data-dir", str(tmp_path), "--counts"], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.output.splitlines() if line.strip()}
    n = len(load_dataset("scifact", "train", tmp_path))
    assert f"train {n:,}" in rows["scifact"] and rows["scifact"].rstrip().endswith("present")
    assert rows["liar"].rstrip().endswith("fetchable") and "10," not in rows["liar"]
    assert rows["gossipcop"].rstrip().endswith("by hand")
    assert rows["advfact"].rstrip().endswith("build")
    assert "veracity datasets get NAME" in result.output
    lines = [ln for ln in result.output.splitlines() if not ln.startswith("data directory:")]
    assert all(len(line) <= 80 for line in lines), max(lines, key=len)
    plain = runner.invoke(app, ["datasets", "--data-dir", str(tmp_path)], env={"COLUMNS": "80"})
    for name, status in (("averitec", "fetchable"), ("advfact", "build"), ("scifact", "present")):
        row = next(ln for ln in plain.output.splitlines() if ln.startswith(name + " "))
        assert row.rstrip().endswith(status), row  # whole, not cut to fit
    assert "poisonedrag," in plain.output  # a split name is never broken inside

    missing = runner.invoke(app, ["datasets", "--data-dir", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "VERACITY_DATA_DIR" in missing.output


def test_get_shows_licence_and_size_first_then_installs(server, tmp_path):
    server.add(S3, SCIFACT)
    result = _get(tmp_path, "scifact")
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.index("licence: CC BY 4.0 (test)") < text.index("size: about 1 KB")
    assert text.index("size: about 1 KB") < text.index("installed:")
    assert f"from: {S3} (sha256 pinned: test pin)" in text
    assert "scifact: release.tar.gz: " in text and " done" in text  # plain progress lines
    assert len(load_dataset("scifact", "train", data_dir=tmp_path)) == 3

    again = _get(tmp_path, "scifact")
    assert again.exit_code == 0 and "already present" in again.output
    assert len(server.requests) == 1
    forced = _get(tmp_path, "scifact", "--force")
    assert forced.exit_code == 0 and "installed:" in forced.output and len(server.requests) == 2


def test_a_loader_name_stands_for_its_folder(server, tmp_path):
    server.add(LIAR, LIAR_TAR)
    result = _get(tmp_path, "liar", "liar")  # named twice: fetched once
    assert result.exit_code == 0, result.output
    assert len(server.requests) == 1 and result.output.count("installed:") == 1
    other = tmp_path / "other"  # the group's --data-dir counts for `get` too
    before = runner.invoke(app, ["datasets", "--data-dir", str(other), "get", "liar"])
    assert before.exit_code == 0, before.output
    assert (other / "liar" / "valid.tsv").is_file()


def test_offline_says_what_to_download_and_where(server, tmp_path, monkeypatch):
    monkeypatch.setenv("VERACITY_OFFLINE", "1")
    result = _get(tmp_path, "scifact")
    assert result.exit_code == 1
    where = tmp_path / "downloads" / "scifact" / "release.tar.gz"  # a visible folder per set
    flat = " ".join(result.output.split())
    assert f"download {S3} by hand and put it at {where}" in flat
    assert server.requests == [] and not (tmp_path / "scifact").exists()


def test_no_answer_from_the_server_is_a_manual_download(server, tmp_path):
    server.refuse(S3)
    result = _get(tmp_path, "scifact")
    assert result.exit_code == 1
    assert "by hand and put it at" in result.output and "ConnectError" in result.output


def test_all_goes_on_past_a_failing_set_and_names_it(server, tmp_path):
    server.missing(S3)
    server.add(LIAR, LIAR_TAR)
    result = _get(tmp_path, "--all")
    assert result.exit_code == 1
    flat = " ".join(result.output.split())
    assert "HTTP 404" in flat and "1 of 2 sets not installed: scifact" in flat
    assert "not downloaded by --all (2): gossipcop_text_subset, advfact" in flat
    assert len(load_dataset("liar", "valid", data_dir=tmp_path)) == 3
    assert not (tmp_path / "scifact").exists()


def test_a_checksum_mismatch_exits_1_unless_no_verify(server, tmp_path):
    server.add(S3, _release("scifact", ("claims_train.jsonl", "corpus.jsonl")) + b"tampered")
    result = _get(tmp_path, "scifact")
    flat = " ".join(result.output.split())
    assert result.exit_code == 1 and "checksum mismatch" in flat and sha(SCIFACT) in flat
    assert not (tmp_path / "scifact").exists()
    loose = _get(tmp_path, "scifact", "--no-verify")
    assert "NOT checked (--no-verify)" in " ".join(loose.output.split())


def test_bad_names_exit_2_and_manual_sets_explain(server, tmp_path):
    unknown = _get(tmp_path, "no-such-set")
    assert unknown.exit_code == 2 and "unknown dataset 'no-such-set'" in unknown.output
    both = _get(tmp_path, "scifact", "--all")
    assert both.exit_code == 2 and "not both" in both.output
    neither = _get(tmp_path)
    assert neither.exit_code == 2 and "--all" in neither.output
    manual = _get(tmp_path, "gossipcop")
    flat = " ".join(manual.output.split())
    assert manual.exit_code == 1
    assert f"Put them in {tmp_path / 'gossipcop_text_subset'}" in flat
    built = _get(tmp_path, "advfact")
    assert built.exit_code == 1 and "veracity advfact build" in built.output
    (tmp_path / "a-file").write_text("")
    not_a_folder = _get(tmp_path / "a-file", "scifact")
    assert not_a_folder.exit_code == 2 and "is a file, not a folder" in not_a_folder.output


def test_errors_that_need_a_dataset_print_the_get_command(tmp_path):
    from veracity.datasets import DatasetError

    with pytest.raises(DatasetError, match=r"get it with `veracity datasets get liar --data-dir "):
        load_dataset("liar", data_dir=tmp_path)
    with pytest.raises(DatasetError, match=r"get it with `veracity datasets get liar`"):
        load_dataset("liar")  # the default data directory, not created yet
    (tmp_path / "scifact").mkdir()
    with pytest.raises(DatasetError, match=r"claims_train\.jsonl not found; get it with"):
        load_dataset("scifact", data_dir=tmp_path)
    index = runner.invoke(app, ["index", "build", "--dataset", "scifact", "--name", "d"])
    assert index.exit_code == 2
    assert "veracity datasets get scifact" in " ".join(index.output.split())


def test_eval_on_a_missing_dataset_prints_the_get_command(tmp_path, monkeypatch):
    monkeypatch.setattr("veracity.cli.eval.ensure_model", lambda cfg: None)
    args = ["eval", "--method", "direct", "--dataset", "scifact", "--no-progress"]
    result = runner.invoke(app, [*args, "--data-dir", str(tmp_path), "--out", str(tmp_path / "r")])
    assert result.exit_code == 2, result.output
    assert "veracity datasets get scifact" in " ".join(result.output.split())


def test_recorded_source_without_traces_prints_the_get_command():
    from veracity.retrieval.base import SourceUnreachable
    from veracity.retrieval.recorded.source import RecordedSource

    with pytest.raises(SourceUnreachable, match="veracity datasets get mermaid_eval_sets"):
        RecordedSource()


def test_doctor_reports_the_data_directory_and_the_sets_present(tmp_path):
    from veracity.core.config import RunConfig
    from veracity.datasets.catalogue import entries
    from veracity.doctor import _data

    empty = _data(RunConfig(data_dir=str(tmp_path / "none")))
    assert empty.status == "warn" and "veracity datasets get NAME" in empty.fix
    shutil.copytree(FIX / "scifact", tmp_path / "scifact")
    found = _data(RunConfig(data_dir=str(tmp_path)))
    assert found.status == "ok" and "1 of 19 sets present; present: scifact" in found.detail
    assert "veracity datasets get" in found.fix
    for e in entries():
        (tmp_path / e.folder).mkdir(exist_ok=True)
    shutil.rmtree(tmp_path / "liar")
    most = _data(RunConfig(data_dir=str(tmp_path)))
    assert "18 of 19 sets present; absent: liar" in most.detail and "datasets get" in most.fix
