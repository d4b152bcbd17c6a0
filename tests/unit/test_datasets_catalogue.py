"""The catalogue covers every folder the loaders read; the converters make the loaders' layout.

The RumourEval and SheepDog conversions run on releases rebuilt here, in the upstream
formats, from the miniature fixtures; the loaders must read the result exactly as they
read the fixtures.
"""

from __future__ import annotations

import json
import pickle
import re

import numpy as np
import pytest
from _fetch_helpers import FIX, tar_gz

from veracity.datasets import get_dataset, list_datasets, load_dataset
from veracity.datasets.catalogue import entries, entry, folder_of
from veracity.datasets.convert import (
    ConversionError,
    plain_unpickle,
    rumoureval_threads,
    sheepdog_articles,
)

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def test_every_folder_the_loaders_read_has_an_entry():
    folders = {info.folder for info in list_datasets(installed_only=True)}
    assert folders == {e.folder for e in entries()}
    for folder in folders:
        e = entry(folder)
        assert e is not None and e.licence and e.size and e.title
        if e.kind == "download":
            assert all(d.url.startswith("https://") for d in e.downloads)
            assert len({d.name for d in e.downloads}) == len(e.downloads)
            assert all(d.sha256 is None or HEX64.match(d.sha256) for d in e.downloads)
            assert all(d.pin for d in e.downloads if d.sha256)  # every pin says where from
            assert {p.source for p in e.files} <= {d.name for d in e.downloads}
        elif e.kind == "manual":
            assert "{path}" in e.manual and "https://" in e.manual
        else:
            assert e.build.startswith("veracity ")


FETCHABLE = [i for i in list_datasets(installed_only=True) if entry(i.folder).kind == "download"]


@pytest.mark.parametrize("info", FETCHABLE, ids=lambda i: i.name)
def test_an_installed_entry_holds_every_file_its_loaders_read(info):
    e = entry(info.folder)
    ds = get_dataset(info.name)
    for split in info.splits:
        for name in ds.split_files[split]:
            full = getattr(ds, "full_files", {}).get(name)
            assert name in e.targets or full in e.targets, (info.name, split, name)
    extra = [getattr(ds, "corpus_file", None), getattr(ds, "_STANCE_FILE", None)]
    assert all(f in e.targets for f in extra if f)


def test_names_resolve_to_folders():
    assert folder_of("mermaid_factool_qa") == "mermaid_eval_sets"
    assert folder_of("fire_felm_wk") == "fire_claimsets"
    assert folder_of("mermaid_eval_sets") == "mermaid_eval_sets"
    assert folder_of("no_such_set") is None


def test_the_full_upstream_file_is_read_instead_of_its_subset(tmp_path):
    (tmp_path / "averitec").mkdir()
    records = json.loads((FIX / "averitec/dev_first250.json").read_text())
    (tmp_path / "averitec/dev.json").write_text(json.dumps(records + records[:1]))
    (tmp_path / "averitec/dev_first250.json").write_text(json.dumps(records[:1]))
    assert len(load_dataset("averitec", data_dir=tmp_path)) == len(records) + 1
    (tmp_path / "averitec/dev.json").unlink()
    assert len(load_dataset("averitec", data_dir=tmp_path)) == 1


# --------------------------------------------------------------------------- RumourEval


def _tweet(tid: str, text: str, created: str, parent: str | None = None) -> bytes:
    tweet = {"id": int(tid), "id_str": tid, "text": text, "created_at": created}
    tweet["in_reply_to_status_id_str"] = parent
    return json.dumps(tweet).encode()


def semeval_archive(threads: list[dict]) -> bytes:
    """SemEval-2017 Task 8's archive layout, rebuilt from threads in the loader's format."""
    root = "semeval2017-task8-dataset"
    files, labels, stance = {}, {"train": {}, "dev": {}}, {"train": {}, "dev": {}}
    for t in threads:
        base = f"{root}/rumoureval-data/{t['event']}/{t['thread_id']}"
        files[f"{base}/source-tweet/{t['thread_id']}.json"] = _tweet(
            t["thread_id"], t["source_text"], t["source_created_at"]
        )
        labels[t["split"]][t["thread_id"]] = t["veracity"]
        stance[t["split"]][t["thread_id"]] = t["source_stance"]
        for r in t["replies"]:
            files[f"{base}/replies/{r['id']}.json"] = _tweet(
                r["id"], r["text"], r["created_at"], r["parent"]
            )
            stance[t["split"]][r["id"]] = r["stance"]
        files[f"{base}/structure.json"] = b"{}"
    for split in ("train", "dev"):
        keys = f"{root}/traindev/rumoureval-subtask{{}}-{split}.json"
        files[keys.format("B")] = json.dumps(labels[split]).encode()
        files[keys.format("A")] = json.dumps(stance[split]).encode()
    return tar_gz(files, mode="w:bz2")


def test_rumoureval_threads_convert_to_the_loaders_layout(tmp_path):
    lines = (FIX / "rumoureval2017/threads_train_dev.jsonl").read_text().splitlines()
    archive = tmp_path / "semeval2017-task8-dataset.tar.bz2"
    archive.write_bytes(semeval_archive([json.loads(line) for line in lines]))
    out = tmp_path / "data" / "rumoureval2017"
    out.mkdir(parents=True)
    rumoureval_threads({archive.name: archive}, out)
    for split in ("train", "dev"):
        got = load_dataset("rumoureval2017", split, data_dir=tmp_path / "data")
        want = load_dataset("rumoureval2017", split, data_dir=FIX)
        assert [e.model_dump() for e in got] == [e.model_dump() for e in want]


def test_rumoureval_refuses_a_labelled_thread_without_tweets(tmp_path):
    archive = tmp_path / "semeval2017-task8-dataset.tar.bz2"
    files = {
        "d/traindev/rumoureval-subtaskB-train.json": b'{"42": "true"}',
        "d/traindev/rumoureval-subtaskB-dev.json": b"{}",
        "d/traindev/rumoureval-subtaskA-train.json": b"{}",
        "d/traindev/rumoureval-subtaskA-dev.json": b"{}",
    }
    archive.write_bytes(tar_gz(files, mode="w:bz2"))
    with pytest.raises(ConversionError, match=r"1 labelled threads have no tweets, e\.g\. 42"):
        rumoureval_threads({archive.name: archive}, tmp_path)


# --------------------------------------------------------------------------- SheepDog


def test_sheepdog_pickle_converts_to_the_loaders_layout(tmp_path):
    rows = [
        json.loads(line)
        for line in (FIX / "sheepdog_politifact/politifact_train.jsonl").read_text().splitlines()
    ]
    news, labels = [r["text"] for r in rows], [r["label"] for r in rows]
    release = {"news": np.array(news), "labels": np.array(labels)}
    pkl = tmp_path / "politifact_train.pkl"
    pkl.write_bytes(pickle.dumps(release))
    out = tmp_path / "data" / "sheepdog_politifact"
    out.mkdir(parents=True)
    sheepdog_articles({pkl.name: pkl}, out)
    got = load_dataset("sheepdog_politifact", data_dir=tmp_path / "data")
    want = load_dataset("sheepdog_politifact", data_dir=FIX)
    assert [e.model_dump() for e in got] == [e.model_dump() for e in want]


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned",))


def test_a_pickle_that_would_run_code_is_refused(tmp_path):
    with pytest.raises(ConversionError, match=r"asks for (posix|os|nt)\.system, which is not data"):
        plain_unpickle(pickle.dumps({"news": [_Evil()], "labels": [0]}))
    with pytest.raises(ConversionError, match="not a readable pickle"):
        plain_unpickle(b"<html>not found</html>")
    assert plain_unpickle(pickle.dumps({"a": [1, "x"]})) == {"a": [1, "x"]}


@pytest.mark.data
def test_pins_taken_from_the_reference_copy_match_it(benchmark_data_dir):
    """Every pin said to be the reference copy's SHA-256 is the hash of that file."""
    from veracity.datasets.catalogue import SAME
    from veracity.datasets.fetch import sha256_file

    checked = 0
    for e in entries():
        by_name = {p.source: p.target for p in e.files if p.member is None}
        for d in e.downloads:
            if d.pin == SAME and (benchmark_data_dir / e.folder).is_dir():
                target = benchmark_data_dir / e.folder / by_name[d.name]
                assert sha256_file(target) == d.sha256, target
                checked += 1
        for c in e.copies:
            src = benchmark_data_dir / c.folder / c.file
            if src.is_file():
                assert sha256_file(src) == c.sha256, src
    assert checked == 25  # every such pin (the reference copy holds every pinned folder)
