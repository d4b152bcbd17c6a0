"""CSV and batch input parsed strictly; paths checked before any work (issue 23, item 8).

Before: an unterminated quote swallowed the following rows into one cell (exit 0), a
UTF-8 byte-order mark hid the first column, a header naming a column twice silently took
the last one, ``-o`` naming the input overwrote it, ``-o`` naming a directory failed
after every row was checked, and a directory, ``/dev/zero`` or a named pipe as input was
reported as "not found". Each case runs the real `veracity batch` (and `check --file`)
against a fake model server on 127.0.0.1, whose request log shows that no model call
was made before the refusal.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess

import pytest
from typer.testing import CliRunner

from veracity.cli import app

from .conftest import run_cli

pytestmark = pytest.mark.server

runner = CliRunner()


def _args(server, source: str, *extra: str) -> list[str]:
    return ["batch", source, "--method", "direct", "--base-url", server.url, "--model", "m",
            "--no-progress", *extra]  # fmt: skip


def _streamed(result) -> list[dict]:
    return [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]


def _said(result) -> str:
    return " ".join(result.output.split())


def _refused(result, server, *words: str) -> str:
    said = _said(result)
    assert result.exit_code == 2, said
    assert result.exception is None or isinstance(result.exception, SystemExit), said
    for word in words:
        assert word in said, said
    assert server.requests == [], "a model was called before the refusal"
    return said


# --------------------------------------------------------------------------- quotes

OPEN_QUOTE = 'text\nrow one\n"row two, never closed\nrow three\nrow four\n'


@pytest.mark.parametrize(("suffix", "sep"), [("csv", ","), ("tsv", "\t")])
def test_a_quote_left_open_in_a_file_names_its_line_and_nothing_is_checked(
    tmp_path, fake_server, suffix, sep
):
    src = tmp_path / f"rows.{suffix}"
    src.write_text(OPEN_QUOTE.replace(",", sep))
    out = tmp_path / "out.jsonl"
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(out)))
    _refused(result, fake_server, f"rows.{suffix}: line 3: a quote opened in this row is never")
    assert not out.exists()


def test_a_quote_left_open_on_standard_input_names_its_line(tmp_path, fake_server):
    result = runner.invoke(
        app,
        _args(fake_server, "-", "--format", "csv", "--run-dir", str(tmp_path / "r")),
        input=OPEN_QUOTE,
    )
    assert result.exit_code == 2
    assert "stdin: line 3: a quote opened in this row is never closed" in _said(result)
    assert "row three" not in {r["input"] for r in _streamed(result)}


def test_a_quote_closed_by_a_later_row_names_the_row_where_it_opened(tmp_path, fake_server):
    src = tmp_path / "rows.csv"
    src.write_text('text\nrow one\n"opened here\nrow three\n"quoted" tail\n')
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(tmp_path / "o.jsonl")))
    _refused(result, fake_server, "rows.csv: line 3:", "the row runs on to line 5")


def test_text_after_a_closing_quote_is_an_error(tmp_path, fake_server):
    src = tmp_path / "rows.csv"
    src.write_text('id,text\na,"quoted"junk\n')
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(tmp_path / "o.jsonl")))
    _refused(result, fake_server, "rows.csv: line 2:")


def test_a_quoted_field_over_several_lines_is_still_read(tmp_path, fake_server):
    src = tmp_path / "rows.csv"
    src.write_text('id,text\na,"first line\nsecond line"\nb,plain\n')
    out = tmp_path / "o.jsonl"
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(out)))
    assert result.exit_code == 0, result.output
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "b"]
    assert [r["input"].split() for r in rows] == [["first", "line", "second", "line"], ["plain"]]


# --------------------------------------------------------------------------- BOM, header

BOM = "\ufeff"


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_byte_order_mark_does_not_hide_the_first_column(tmp_path, fake_server, fmt):
    sep = "," if fmt == "csv" else "\t"
    src = tmp_path / f"rows.{fmt}"
    src.write_text(f"{BOM}id{sep}text\nr1{sep}one\nr2{sep}two\n", encoding="utf-8")
    out = tmp_path / "o.jsonl"
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(out)))
    assert result.exit_code == 0, result.output
    assert [json.loads(x)["id"] for x in out.read_text().splitlines()] == ["r1", "r2"]


def test_a_byte_order_mark_on_standard_input_is_dropped(tmp_path, fake_server):
    csv_rows = f"{BOM}id,text\nr1,one\n".encode()
    jsonl_rows = (BOM + json.dumps({"id": "j1", "text": "one"}) + "\n").encode()
    for fmt, rows, want in (("csv", csv_rows, "r1"), ("jsonl", jsonl_rows, "j1")):
        args = _args(fake_server, "-", "--format", fmt, "--run-dir", str(tmp_path / fmt))
        result = runner.invoke(app, args, input=rows)
        assert result.exit_code == 0, result.output
        assert [r["id"] for r in _streamed(result)] == [want]


def test_a_byte_order_mark_in_a_json_lines_file_is_dropped(tmp_path, fake_server):
    src = tmp_path / "rows.jsonl"
    src.write_text(BOM + json.dumps({"id": "j1", "text": "one"}) + "\n", encoding="utf-8")
    out = tmp_path / "o.jsonl"
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(out)))
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["id"] == "j1"


@pytest.mark.parametrize(
    ("header", "named"),
    [("text,text", "the column 'text' twice"), ("id,text,id", "the column 'id' twice"),
     ("text,,", "more than one column without a name twice")],
)  # fmt: skip
def test_a_header_naming_a_column_twice_is_refused(tmp_path, fake_server, header, named):
    cells = ",".join(["a"] * (header.count(",") + 1))
    src = tmp_path / "rows.csv"
    src.write_text(f"{header}\n{cells}\n")
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(tmp_path / "o.jsonl")))
    _refused(result, fake_server, "rows.csv: line 1: the header names", named)
    piped = runner.invoke(
        app,
        _args(fake_server, "-", "--format", "csv", "--run-dir", str(tmp_path / "r")),
        input=f"{header}\n{cells}\n",
    )
    _refused(piped, fake_server, "stdin: line 1: the header names", named)


# --------------------------------------------------------------------------- --out


def _input(tmp_path):
    src = tmp_path / "rows.csv"
    src.write_text("text\nthe only row\n")
    return src


def test_out_naming_the_input_is_refused_however_it_is_spelled(tmp_path, fake_server):
    src = _input(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.csv").symlink_to(src)
    os.link(src, tmp_path / "hard.csv")
    for spelled in (str(src), str(tmp_path / "sub" / ".." / "rows.csv"),
                    str(tmp_path / "link.csv"), str(tmp_path / "hard.csv")):  # fmt: skip
        result = runner.invoke(app, _args(fake_server, str(src), "-o", spelled))
        _refused(result, fake_server, "is the input", "would destroy the input")
    assert src.read_text() == "text\nthe only row\n"
    assert (tmp_path / "link.csv").is_symlink()
    assert not list(tmp_path.glob("*.run"))  # refused before a run directory was made


def _fifo(folder):
    os.mkfifo(folder / "pipe.jsonl")
    return folder / "pipe.jsonl"


def _device(folder):
    # a device node of our own: never a real one such as /dev/null, which a regression
    # (results written beside it, then moved over it) would replace on a root machine
    node = folder / "null-device"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return node


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda t: (t / "outdir").mkdir() or t / "outdir", ["is a directory"]),
        (lambda t: t / "rows.csv" / "out.jsonl", ["rows.csv is a file, not a folder"]),
        (_fifo, ["pipe.jsonl is a named pipe"]),
        (_device, ["null-device is a device"]),
    ],
    ids=["directory", "under-a-file", "named-pipe", "device"],
)
def test_an_out_path_that_cannot_be_written_is_refused_before_any_check(
    tmp_path, fake_server, make, words
):
    src = _input(tmp_path)
    out = make(tmp_path)
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(out)))
    _refused(result, fake_server, "error: --out", *words)
    assert not list(tmp_path.glob("*.run"))
    assert not out.is_file()  # left as it was (a regression replaced it with the results)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in read-only folders")
def test_an_out_path_in_a_read_only_folder_is_refused(tmp_path, fake_server):
    src = _input(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(locked / "o.jsonl")))
    _refused(result, fake_server, "cannot be written in", "ermission denied")


def test_a_new_folder_for_out_is_made(tmp_path, fake_server):
    src = _input(tmp_path)
    out = tmp_path / "new" / "deeper" / "o.jsonl"
    result = runner.invoke(app, _args(fake_server, str(src), "-o", str(out)))
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["input"] == "the only row"
    assert [p.name for p in out.parent.iterdir() if p.name.endswith(".probe")] == []


# --------------------------------------------------------------------------- inputs


def _specials(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    return [
        (str(folder), "is a directory, not a regular file"),
        ("/dev/zero", "/dev/zero is a device, not a regular file"),
        (str(fifo), "is a named pipe, not a regular file; give - and redirect"),
        (str(tmp_path / "absent.csv"), "absent.csv not found"),
    ]


def test_special_inputs_are_named_for_what_they_are(tmp_path, fake_server):
    # a subprocess with a timeout: opening a named pipe without a writer would block
    home = tmp_path / "home"
    for source, words in _specials(tmp_path):
        out = str(tmp_path / "o.jsonl")
        for args in (_args(fake_server, source, "-o", out), ["check", "--file", source]):
            result = run_cli(args, home, timeout=60)
            err = " ".join(result.stderr.decode().split())
            assert result.returncode == 2, err
            assert f"error: input file {source}" in err and words in err, err
            assert "Traceback" not in err
    assert fake_server.requests == []


def test_a_named_pipe_is_never_opened(tmp_path, fake_server):
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(subprocess.TimeoutExpired):  # control: opening it blocks
        subprocess.run(["cat", str(fifo)], timeout=1)
    result = runner.invoke(app, _args(fake_server, str(fifo), "-o", str(tmp_path / "o.jsonl")))
    _refused(result, fake_server, "is a named pipe")
