"""`veracity batch` takes an input's ``id`` column for the row ids by itself (issue 27,
part 7); ``--id`` still chooses another."""

from __future__ import annotations

import json

import pytest
from _eval_fixtures import echo_llm_for_batch
from typer.testing import CliRunner

from veracity.cli import app

runner = CliRunner()
BASE = ["--method", "direct", "--labels", "supported_refuted", "--no-progress"]
NOTICE = "row ids come from the input's 'id' column"


@pytest.fixture
def llm(monkeypatch):
    """Every model the CLI builds is one echoing scripted model, cached in the run dir."""
    return echo_llm_for_batch(monkeypatch)


def _rows(n: int, **extra) -> str:
    rows = [{"id": f"c-{i}", "ref": f"ref{i}", "text": f"claim {i} say:SUPPORTED", **extra}
            for i in range(n)]  # fmt: skip
    return "".join(json.dumps(r) + "\n" for r in rows)


def _ids(path) -> list[str]:
    return [json.loads(line)["id"] for line in path.read_text().splitlines()]


def test_an_id_column_names_the_results_by_itself_and_says_so_once(tmp_path, llm):
    src, out = tmp_path / "claims.jsonl", tmp_path / "out.jsonl"
    src.write_text(_rows(3))
    result = runner.invoke(app, ["batch", str(src), "-o", str(out), *BASE])
    assert result.exit_code == 0, result.output
    assert _ids(out) == ["c-0", "c-1", "c-2"]
    assert result.stderr.count(NOTICE) == 1 and "--id COLUMN" in result.stderr


def test_a_csv_id_column_is_taken_too(tmp_path, llm):
    src, out = tmp_path / "claims.csv", tmp_path / "out.jsonl"
    src.write_text("text,id\nfirst say:SUPPORTED,A7\nsecond say:REFUTED,B9\n")
    result = runner.invoke(app, ["batch", str(src), "-o", str(out), *BASE])
    assert result.exit_code == 0, result.output
    assert _ids(out) == ["A7", "B9"] and NOTICE in result.stderr


def test_standard_input_takes_its_id_column(tmp_path, llm):
    args = ["batch", "-", "--run-dir", str(tmp_path / "stream"), *BASE]
    result = runner.invoke(app, args, input=_rows(2))
    assert result.exit_code == 0, result.output
    assert sorted(json.loads(line)["id"] for line in result.stdout.splitlines()) == ["c-0", "c-1"]
    assert result.stderr.count(NOTICE) == 1


def test_the_id_option_still_chooses_the_column(tmp_path, llm):
    src, out = tmp_path / "claims.jsonl", tmp_path / "out.jsonl"
    src.write_text(_rows(3))
    result = runner.invoke(app, ["batch", str(src), "-o", str(out), *BASE, "--id", "ref"])
    assert result.exit_code == 0, result.output
    assert _ids(out) == ["ref0", "ref1", "ref2"] and NOTICE not in result.stderr


def test_without_an_id_column_rows_are_named_by_their_line(tmp_path, llm):
    src, out = tmp_path / "claims.jsonl", tmp_path / "out.jsonl"
    src.write_text("".join(json.dumps({"text": f"c{i} say:SUPPORTED"}) + "\n" for i in range(2)))
    result = runner.invoke(app, ["batch", str(src), "-o", str(out), *BASE])
    assert result.exit_code == 0, result.output
    assert _ids(out) == ["claims:1", "claims:2"] and NOTICE not in result.stderr


def test_a_repeated_id_in_the_id_column_stops_the_batch_naming_the_line(tmp_path, llm):
    src, out = tmp_path / "claims.jsonl", tmp_path / "out.jsonl"
    src.write_text(_rows(2) + json.dumps({"id": "c-0", "text": "again say:REFUTED"}) + "\n")
    result = runner.invoke(app, ["batch", str(src), "-o", str(out), *BASE])
    assert result.exit_code == 2
    message = " ".join(result.output.split())
    assert "claims.jsonl: line 3: the id 'c-0' appears twice in the input" in message
    assert "(ids from the column 'id')" in message
    assert llm.calls == [] and not out.exists()
