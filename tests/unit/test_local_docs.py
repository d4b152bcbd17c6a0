"""Reading documents for local corpora (veracity.retrieval.local.docs)."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from veracity.retrieval.local.docs import (
    CorpusInputError,
    FieldMap,
    html_to_text,
    parse_date_at,
    read_documents,
    read_scifact_corpus,
)


def _jsonl(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def test_folder_of_mixed_files(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.txt").write_text("Plain text body.")
    (tmp_path / "sub" / "b.md").write_text("# Title B\n\nMarkdown body.")
    (tmp_path / "c.html").write_text("<title>C page</title><p>Visible</p><script>hidden()</script>")
    _jsonl(tmp_path / "d.jsonl", [{"id": "j1", "text": "From JSONL."}])
    (tmp_path / "e.csv").write_text("doc_id,body,headline\nc1,From CSV.,Head\n")
    (tmp_path / "ignored.pdf").write_bytes(b"%PDF")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.txt").write_text("not a document")
    docs = {d.id: d for d in read_documents(tmp_path)}
    assert set(docs) == {"a.txt", "sub/b.md", "c.html", "j1", "c1"}
    assert docs["sub/b.md"].title == "Title B" and docs["a.txt"].title == "a"
    assert docs["c.html"].title == "C page" and docs["c.html"].text == "Visible"
    assert docs["c1"].title == "Head" and docs["c1"].text == "From CSV."


def test_jsonl_field_mapping_metadata_and_list_text(tmp_path):
    path = _jsonl(
        tmp_path / "x.jsonl",
        [
            {"uid": "a", "body": ["One.", "Two."], "when": "2020-05-01", "lang": "en"},
            {"uid": "b", "body": "Three.", "link": "https://ex.org/b"},
        ],
    )
    fields = FieldMap.parse("id=uid, text=body, date=when")
    docs = list(read_documents(path, fields))
    assert [d.id for d in docs] == ["a", "b"]
    assert docs[0].text == "One. Two." and docs[0].metadata == {"lang": "en"}
    assert docs[0].published_at == dt.datetime(2020, 5, 1)
    assert docs[1].url == "https://ex.org/b"


def test_rows_without_id_get_a_positional_id(tmp_path):
    path = _jsonl(tmp_path / "x.jsonl", [{"text": "a"}, "", {"text": "b"}])
    assert [d.id for d in read_documents(path)] == ["x:1", "x:3"]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (["{bad json"], "x.jsonl: line 1: not valid JSON"),
        (["[1, 2]"], "expected a JSON object"),
        ([{"id": "a", "title": "no text"}], "x.jsonl: line 1: no text"),
        ([{"id": "a", "text": "t", "date": "last spring"}], "cannot read date"),
    ],
)
def test_malformed_records_name_file_and_line(tmp_path, rows, message):
    path = _jsonl(tmp_path / "x.jsonl", rows)
    with pytest.raises(CorpusInputError, match=message):
        list(read_documents(path))


def test_missing_paths_and_empty_folders(tmp_path):
    with pytest.raises(CorpusInputError, match="no such file"):
        list(read_documents(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusInputError, match="no readable files"):
        list(read_documents(tmp_path / "empty"))
    (tmp_path / "blank.txt").write_text("   ")
    with pytest.raises(CorpusInputError, match="no text"):
        list(read_documents(tmp_path / "blank.txt"))
    (tmp_path / "bin.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(CorpusInputError, match="not UTF-8"):
        list(read_documents(tmp_path / "bin.txt"))
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(CorpusInputError, match="header"):
        list(read_documents(tmp_path / "empty.csv"))


def test_field_map_parse_errors():
    with pytest.raises(CorpusInputError, match="FIELD=COLUMN"):
        FieldMap.parse("text")
    with pytest.raises(CorpusInputError, match="fields are"):
        FieldMap.parse("body=text")


def test_parse_date_forms():
    assert parse_date_at("2019", "w") == dt.datetime(2019, 1, 1)
    assert parse_date_at("2019-03-04T05:06:07Z", "w").tzinfo is not None
    assert parse_date_at(0, "w") == dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    assert parse_date_at("", "w") is None
    with pytest.raises(CorpusInputError):
        parse_date_at(True, "w")


def test_html_to_text_keeps_blocks_apart():
    body, title = html_to_text(
        "<html><head><title> A  page </title><style>x{}</style></head>"
        "<body><h1>Head</h1><p>One &amp; two</p><noscript>no</noscript><p>Three</p></body></html>"
    )
    assert title == "A page"
    assert body.split("\n") == ["Head", "", "One & two", "", "Three"]


def test_scifact_reader(tmp_path):
    path = _jsonl(
        tmp_path / "corpus.jsonl",
        [
            {
                "doc_id": 4983,
                "title": "A title",
                "abstract": ["First sentence.", "Second one."],
                "structured": False,
            }
        ],
    )
    (doc,) = read_scifact_corpus(path)
    assert doc.id == "4983" and doc.title == "A title"
    assert doc.text == "First sentence. Second one."
    assert doc.metadata == {"structured": False}
