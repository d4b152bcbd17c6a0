"""The generic JSONL / JSON / CSV / TSV loader with a column mapping."""

from __future__ import annotations

import json
from datetime import date, datetime

import pytest

from veracity.core.types import Article, Claim, Post
from veracity.datasets import DatasetError, GenericDataset, GenericSpec, load_file


def test_csv_claims_with_optional_columns(tmp_path):
    f = tmp_path / "mine.csv"
    f.write_text(
        "cid,statement,verdict,when,who,where\n"
        'a1,"The dam holds 3 million litres, not 2.",true,2022-05-01,Ann Lee,a debate\n'
        "a2,The dam leaks.,false,,,\n",
        encoding="utf-8",
    )
    examples = load_file(
        path=f,
        text="statement",
        label="verdict",
        label_space="true_false",
        id="cid",
        date="when",
        speaker="who",
        context="where",
    )
    assert [e.id for e in examples] == ["a1", "a2"]
    first = examples[0].input
    assert isinstance(first, Claim)
    assert first.text == "The dam holds 3 million litres, not 2."
    assert (first.date, first.speaker, first.context) == (date(2022, 5, 1), "Ann Lee", "a debate")
    assert examples[1].input.date is None and examples[1].label == "false"


def test_jsonl_articles_with_label_table_and_date_format(tmp_path):
    f = tmp_path / "news.jsonl"
    f.write_text(
        json.dumps({"body": "Story one.", "head": "One", "y": 0, "d": "03/02/2020"})
        + "\n"
        + json.dumps({"body": "Story two.", "head": "Two", "y": 1, "d": "04/02/2020"})
        + "\n",
        encoding="utf-8",
    )
    ds = GenericDataset(
        path=f,
        text="body",
        label="y",
        label_space="real_fake",
        kind="article",
        title="head",
        date="d",
        date_format="%d/%m/%Y",
        label_table={"0": "REAL", "1": "FAKE"},
        name="my_news",
    )
    examples = ds.load()
    assert [e.label for e in examples] == ["REAL", "FAKE"]
    assert [e.id for e in examples] == ["news:1", "news:2"]  # no id column: file and line
    art = examples[0].input
    assert isinstance(art, Article) and art.title == "One"
    assert art.published_at == datetime(2020, 2, 3)
    assert ds.info.name == "my_news" and ds.info.input_kind == "article"
    assert examples[0].metadata["original_label"] == "REAL"


def test_json_array_posts_and_tsv(tmp_path):
    f = tmp_path / "posts.json"
    f.write_text(json.dumps([{"t": "A post.", "l": "rumor", "u": "@someone"}]), encoding="utf-8")
    ex = load_file(path=f, text="t", label="l", label_space="rumor", kind="post", speaker="u")[0]
    assert isinstance(ex.input, Post) and ex.input.author == "@someone"
    g = tmp_path / "c.tsv"
    g.write_text("text\tlabel\nSky is green.\tfalse\n", encoding="utf-8")
    tsv = load_file(path=g, text="text", label="label", label_space="true_false")
    assert tsv[0].label == "false" and tsv[0].input.text == "Sky is green."


def test_mapping_through_registered_map(tmp_path):
    f = tmp_path / "l.jsonl"
    f.write_text(json.dumps({"s": "x", "r": "half-true"}) + "\n", encoding="utf-8")
    ex = load_file(path=f, text="s", label="r", label_space="liar6", labels="true_uncertain_false")
    assert ex[0].label == "uncertain" and ex[0].metadata["original_label"] == "half-true"


def test_missing_csv_column_is_reported_with_the_columns(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("claim,gold\nabc,true\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"x\.csv: no column 'label'; columns: \['claim', 'go"):
        load_file(path=f, text="claim", label="label", label_space="true_false")


def test_missing_jsonl_field_names_the_line(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"c": "a", "g": "true"}\n{"c": "b"}\n', encoding="utf-8")
    with pytest.raises(DatasetError, match=r"x\.jsonl: line 2: .*missing label column 'g'"):
        load_file(path=f, text="c", label="g", label_space="true_false")


def test_label_outside_declared_space(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("c,g\na,true\nb,maybe\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"x\.csv: line 3: label 'maybe' is not in true_false"):
        load_file(path=f, text="c", label="g", label_space="true_false")


def test_bad_date_and_bad_spec(tmp_path):
    f = tmp_path / "x.csv"
    f.write_text("c,g,d\na,true,yesterday\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"line 2: .*date 'yesterday' is not in the format"):
        load_file(path=f, text="c", label="g", label_space="true_false", date="d")
    with pytest.raises(DatasetError, match="unknown label space 'vibes'"):
        GenericDataset(path=f, text="c", label="g", label_space="vibes")
    with pytest.raises(DatasetError, match="Extra inputs are not permitted"):
        GenericDataset(path=f, text="c", label="g", label_space="true_false", colour="red")
    txt = tmp_path / "x.txt"
    txt.write_text("c,g\na,true\n", encoding="utf-8")
    spec = GenericSpec(path=txt, text="c", label="g", label_space="true_false")
    with pytest.raises(DatasetError, match="cannot tell the format"):
        GenericDataset(spec).load()
    assert GenericDataset(spec.model_copy(update={"format": "csv"})).load()[0].label == "true"
