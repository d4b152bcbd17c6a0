"""Error paths of the loaders: every problem names the file and line, nothing is skipped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from veracity.datasets import DatasetError, get_dataset, load_dataset

FIX = Path(__file__).resolve().parents[1] / "data" / "datasets"


def jsonl(path: Path, *records: object) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_unknown_dataset_split_and_bad_limit():
    with pytest.raises(DatasetError, match="unknown dataset 'nope'"):
        load_dataset("nope")
    with pytest.raises(DatasetError, match=r"liar has no split 'test'; splits: train, valid"):
        load_dataset("liar", "test", data_dir=FIX)
    with pytest.raises(DatasetError, match="limit must be a positive number"):
        load_dataset("liar", "train", data_dir=FIX, limit=0)


def test_missing_folder_and_missing_file(tmp_path):
    with pytest.raises(DatasetError, match=r"folder .*liar not found"):
        load_dataset("liar", data_dir=tmp_path)
    (tmp_path / "liar").mkdir()
    with pytest.raises(DatasetError, match=r"liar train: file .*train\.tsv not found"):
        load_dataset("liar", data_dir=tmp_path)
    with pytest.raises(DatasetError, match=r"file .*absent\.jsonl not found"):
        load_dataset("scifact", path=tmp_path / "absent.jsonl")


def test_bad_json_line_names_file_and_line(tmp_path):
    f = tmp_path / "claims.jsonl"
    f.write_text('{"id": "1", "claim": "ok", "label": "TRUE"}\n{"id": 2,\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"claims\.jsonl: line 2: not valid JSON"):
        load_dataset("politifact_hidden", path=f)


def test_label_outside_the_space_names_file_and_line(tmp_path):
    f = jsonl(
        tmp_path / "claims.jsonl",
        {"id": "1", "claim": "fine", "label": "TRUE"},
        {"id": "2", "claim": "odd", "label": "MOSTLY-TRUE"},
    )
    with pytest.raises(DatasetError, match=r"claims\.jsonl: line 2: label 'MOSTLY-TRUE' is not in"):
        load_dataset("politifact_hidden", path=f)


def test_missing_field_and_empty_text(tmp_path):
    f = jsonl(tmp_path / "a.jsonl", {"id": "1", "label": "TRUE"})
    with pytest.raises(DatasetError, match=r"a\.jsonl: line 1: .*missing field 'claim'"):
        load_dataset("politifact_hidden", path=f)
    g = jsonl(tmp_path / "b.jsonl", {"id": "1", "claim": "  ", "label": "TRUE"})
    with pytest.raises(DatasetError, match=r"b\.jsonl: line 1: .*'claim' is empty"):
        load_dataset("politifact_hidden", path=g)


def test_liar_column_count(tmp_path):
    f = tmp_path / "bad.tsv"
    f.write_text("1.json\ttrue\tonly three columns\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"bad\.tsv: line 1: 3 tab-separated columns"):
        load_dataset("liar", path=f)


def test_averitec_malformed_date(tmp_path):
    rec = json.loads((FIX / "averitec" / "dev_first250.json").read_text())[0]
    rec["claim_date"] = "2021/03/05"
    f = tmp_path / "dev.json"
    f.write_text(json.dumps([rec]), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"dev\.json: record 1: .*does not match the format"):
        load_dataset("averitec", path=f)


def test_rumoureval_reply_with_unknown_parent(tmp_path):
    line = (FIX / "rumoureval2017" / "threads_train_dev.jsonl").read_text().splitlines()[0]
    thread = json.loads(line)
    thread["replies"][1]["parent"] = "999"
    f = jsonl(tmp_path / "threads.jsonl", thread)
    with pytest.raises(DatasetError, match=r"line 1: .*answers 999, which is not in the thread"):
        load_dataset("rumoureval2017", path=f)


def test_sheepdog_label_codes_must_agree(tmp_path):
    f = jsonl(tmp_path / "t.jsonl", {"idx": 0, "label": 1, "label_name": "real", "text": "x"})
    with pytest.raises(DatasetError, match="label 1 and label_name 'real' disagree"):
        load_dataset("sheepdog_politifact", path=f)


def test_csv_row_with_wrong_column_count(tmp_path):
    f = tmp_path / "g.csv"
    f.write_text('id,title,content,label\n1,"t","body",real\n2,"t","body"\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"g\.csv: line 3: 3 columns, the header has 4"):
        load_dataset("gossipcop", path=f)


def test_scifact_claim_whose_evidence_doc_is_missing(tmp_path):
    shutil.copy(FIX / "scifact" / "corpus.jsonl", tmp_path / "corpus.jsonl")
    f = jsonl(
        tmp_path / "claims.jsonl",
        {"id": 5, "claim": "c", "evidence": {"42": [{"sentences": [0], "label": "SUPPORT"}]}},
    )
    with pytest.raises(DatasetError, match=r"line 1: evidence doc_id 42 is not in"):
        load_dataset("scifact", path=f)


def test_scifact_claim_with_mixed_labels_is_malformed(tmp_path):
    shutil.copy(FIX / "scifact" / "corpus.jsonl", tmp_path / "corpus.jsonl")
    sets = [{"sentences": [0], "label": "SUPPORT"}, {"sentences": [1], "label": "CONTRADICT"}]
    ev = {"13734012": sets}
    f = jsonl(tmp_path / "claims.jsonl", {"id": 5, "claim": "c", "evidence": ev})
    with pytest.raises(DatasetError, match="conflicting evidence labels"):
        load_dataset("scifact", path=f)


def test_label_mapping_errors():
    with pytest.raises(DatasetError, match="unknown label space 'nonsense'"):
        load_dataset("liar", "valid", data_dir=FIX, labels="nonsense")
    with pytest.raises(DatasetError, match=r"no label map from 'climate_fever' to 'true_false'"):
        load_dataset("climate_fever", data_dir=FIX, labels="true_false")


def test_no_records_are_dropped_silently(tmp_path):
    # the only drops are declared per set and counted; a normal file has none
    examples = get_dataset("politifact_hidden").load(data_dir=FIX)
    assert examples.skipped == {}
    lines = (FIX / "politifact_hidden" / "test_claims_first1000.jsonl").read_text().splitlines()
    assert len(examples) == len(lines) == 3


class _PluginDataset:
    """A third-party dataset implementing only the protocol (no BaseDataset)."""

    def __init__(self) -> None:
        from veracity.datasets import DatasetInfo

        self.info = DatasetInfo(
            name="plugin_demo",
            label_space="true_false",
            splits=("test",),
            input_kind="claim",
            folder="plugin_demo",
        )

    def load(self, split=None, data_dir=None):
        from veracity.core.types import Claim
        from veracity.datasets import Example

        return [
            Example(id=str(i), input=Claim(text=f"c{i}"), label="true", label_space="true_false")
            for i in range(3)
        ]

    def corpus(self, data_dir=None):
        raise DatasetError("none")


def test_plugin_dataset_through_the_registry(monkeypatch):
    from veracity.core import registry

    # registered for this test only (a class is accepted as well as an object)
    monkeypatch.setitem(registry.datasets._items, "plugin_demo", _PluginDataset)
    examples = load_dataset("plugin_demo", limit=2)
    assert [e.id for e in examples] == ["0", "1"]
    with pytest.raises(DatasetError, match="does not take labels= or path="):
        load_dataset("plugin_demo", labels="real_fake")
