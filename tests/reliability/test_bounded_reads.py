"""Every reader stops at its limit + 1 byte and exits 2 (issue 23, item 5).

An endless standard input (``/dev/zero``) used to grow `veracity check -` and `batch -`
to gigabytes; JSON Lines from standard input skipped the bounded JSON parser that files
go through (a row nested 100,000 deep or a 5,000-digit number was a traceback). Here the
real command runs in a subprocess, its peak memory measured by the kernel (``wait4``),
under an address-space cap so that a regression fails the test instead of the machine;
files and standard input get the same bounds and the same messages.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from veracity.cli import app
from veracity.core.textio import (
    MAX_CONFIG_BYTES,
    MAX_DOCUMENT_FILE_BYTES,
    MAX_JSON_FILE_BYTES,
    MAX_RECORD_BYTES,
    MAX_TEXT_BYTES,
)

from .conftest import cli_env, veracity_cmd

pytestmark = pytest.mark.server  # a fake model server on 127.0.0.1 (never called here)

runner = CliRunner()
PEAK_RSS_MB = 400  # imports and a 32 MiB line read; the unbounded reads went past 3,000
DEEP = "[" * 100_000 + "]" * 100_000
LONG_NUMBER = "9" * 5_000


def _batch(server, *extra: str) -> list[str]:
    return ["batch", "-", "--method", "direct", "--base-url", server.url, "--model", "m",
            "--no-progress", *extra]  # fmt: skip


# The command is started by a small launcher, not by this process: the kernel's peak RSS of
# a process keeps the peak of the memory it was forked from (exec records the old one), so
# a command forked straight from a test run holding a gigabyte would report a gigabyte.
_LAUNCHER = """
import json, os, resource, sys
pid = os.fork()
if pid == 0:  # a regression raises MemoryError here, not on the whole machine
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as fh:
    json.dump([os.waitstatus_to_exitcode(status), usage.ru_maxrss], fh)
"""


def _run_measured(args: list[str], tmp_path, stdin) -> tuple[int, str, int]:
    """Exit status, standard error and peak RSS (MiB) of the real command."""
    err, measured = tmp_path / "stderr.txt", tmp_path / "measured.json"
    launcher = [sys.executable, "-S", "-c", _LAUNCHER, str(measured)]
    with err.open("wb") as err_fh:
        subprocess.run(
            [*launcher, *veracity_cmd(*args)], stdin=stdin, stdout=subprocess.DEVNULL,
            stderr=err_fh, env=cli_env(tmp_path / "home"), cwd=tmp_path, check=False,
        )  # fmt: skip
    code, peak_kb = json.loads(measured.read_text())
    return code, err.read_text(), peak_kb // 1024


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (None, "standard input holds more than 800,000 bytes"),
        ((), "stdin: line 1: a line longer than 33,554,432 bytes"),
        (("--format", "csv"), "stdin: line 1: a line longer than"),
        (("--format", "tsv"), "stdin: line 1: a line longer than"),
    ],
    ids=["check", "batch-jsonl", "batch-csv", "batch-tsv"],
)
def test_an_endless_standard_input_is_refused_in_bounded_memory(
    tmp_path, fake_server, extra, message
):
    args = (
        ["check", "-", "--base-url", fake_server.url]
        if extra is None
        else _batch(fake_server, "--run-dir", str(tmp_path / "run"), *extra)
    )
    with open("/dev/zero", "rb") as zero:
        code, err, peak_mb = _run_measured(args, tmp_path, zero)
    assert code == 2, err
    assert message in " ".join(err.split()) and "Traceback" not in err
    assert peak_mb < PEAK_RSS_MB, f"peak RSS {peak_mb} MiB"
    assert fake_server.requests == []


def test_standard_input_within_the_byte_limit_is_read_whole(fake_server):
    # 200,000 four-byte characters: the byte bound never cuts a text the character limit allows
    text = "\U0001f600" * (MAX_TEXT_BYTES // 4)
    result = runner.invoke(
        app, ["check", "-", "--base-url", fake_server.url, "--json"], input=text.encode()
    )
    assert result.exit_code == 0, result.output
    assert len(fake_server.requests) == 1


def test_one_byte_over_the_text_limit_is_refused(fake_server):
    result = runner.invoke(app, ["check", "-"], input=b"a" * (MAX_TEXT_BYTES + 1))
    assert result.exit_code == 2
    assert "more than 800,000 bytes, the limit" in " ".join(result.output.split())


def _sparse(path, size: int, head: bytes = b""):
    """A file of `size` bytes that takes no disk (zeros after `head`)."""
    with path.open("wb") as fh:
        fh.write(head)
        fh.truncate(size)
    return path


@pytest.mark.parametrize(
    ("name", "size", "limit"),
    [("huge.txt", 2**30, MAX_TEXT_BYTES), ("huge.json", MAX_RECORD_BYTES + 1, MAX_RECORD_BYTES)],
)
def test_check_refuses_a_file_over_its_limit_before_reading_it(tmp_path, name, size, limit):
    path = _sparse(tmp_path / name, size)
    result = runner.invoke(app, ["check", "--file", str(path)])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert f"has {size:,} bytes; the limit is {limit:,}" in said


def test_batch_refuses_a_json_file_over_its_limit(tmp_path, fake_server):
    path = _sparse(tmp_path / "rows.json", MAX_JSON_FILE_BYTES + 1, b"[")
    result = runner.invoke(app, _batch_file(fake_server, path, tmp_path))
    assert result.exit_code == 2
    assert f"the limit is {MAX_JSON_FILE_BYTES:,}" in " ".join(result.output.split())
    assert fake_server.requests == []


def _batch_file(server, path, tmp_path, *extra: str) -> list[str]:
    return ["batch", str(path), "-o", str(tmp_path / "out.jsonl"), "--method", "direct",
            "--base-url", server.url, "--model", "m", "--no-progress", *extra]  # fmt: skip


def test_a_file_line_over_the_record_limit_is_refused(tmp_path, fake_server):
    path = _sparse(tmp_path / "rows.jsonl", MAX_RECORD_BYTES + 10, b'{"text": "')
    result = runner.invoke(app, _batch_file(fake_server, path, tmp_path))
    assert result.exit_code == 2
    assert "rows.jsonl: line 1: a line longer than 33,554,432 bytes" in " ".join(
        result.output.split()
    )
    assert fake_server.requests == []


def test_a_csv_row_running_over_the_record_limit_names_its_first_line(tmp_path, fake_server):
    path = tmp_path / "rows.csv"
    with path.open("wb") as fh:  # a quote opened on line 3 swallows ~34 MB of short lines
        fh.write(b'text\nfine row\n"open quote\n' + b"x\n" * (MAX_RECORD_BYTES // 2 + 10))
    result = runner.invoke(app, _batch_file(fake_server, path, tmp_path))
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "rows.csv: line 3: a row (from this line) longer than" in said
    assert "is a quote left open?" in said
    assert fake_server.requests == []


BAD_ROWS = [
    ('{"text": ' + DEEP + "}", "line 1: JSON nested too deeply (the limit is 64)"),
    ('{"text": "x", "n": ' + LONG_NUMBER + "}", "line 1: JSON value cannot be read: a number"),
    ('{"text": "ok"}\n{"text": ', "line 2: not valid JSON"),
    ('{"text": "ok"}\n[1, 2]', "line 2: expected an object, found list"),
]


@pytest.mark.parametrize(("rows", "message"), BAD_ROWS, ids=["deep", "digits", "cut", "list"])
def test_json_lines_from_standard_input_and_files_get_the_same_clear_error(
    tmp_path, fake_server, rows, message
):
    piped = runner.invoke(
        app, _batch(fake_server, "--run-dir", str(tmp_path / "run")), input=rows + "\n"
    )
    path = tmp_path / "rows.jsonl"
    path.write_text(rows + "\n")
    filed = runner.invoke(app, _batch_file(fake_server, path, tmp_path))
    for result, where in ((piped, "stdin"), (filed, str(path))):
        assert result.exit_code == 2, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)
        said = " ".join(result.output.split())
        assert f"{where}: {message}" in said, said


def test_a_deep_replies_cell_in_csv_is_refused(tmp_path, fake_server):
    rows = 'text,replies\nthe post,"' + DEEP + '"\n'
    result = runner.invoke(
        app,
        _batch(fake_server, "--run-dir", str(tmp_path / "run"), "--format", "csv",
               "--kind", "post", "--replies", "replies"),
        input=rows,
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "stdin: line 2: the replies column: JSON nested too deeply" in " ".join(
        result.output.split()
    )


def test_standard_input_that_is_not_utf8_names_the_line(tmp_path, fake_server):
    rows = json.dumps({"text": "fine"}).encode() + b'\n{"text": "caf\xe9"}\n'
    result = runner.invoke(app, _batch(fake_server, "--run-dir", str(tmp_path / "r")), input=rows)
    assert result.exit_code == 2
    assert "stdin: line 2: not UTF-8 text (byte 0xe9" in " ".join(result.output.split())


def test_a_config_file_over_its_limit_or_not_a_file_is_refused(tmp_path):
    big = _sparse(tmp_path / "run.yaml", MAX_CONFIG_BYTES + 1, b"method: direct\n")
    result = runner.invoke(app, ["check", "--config", str(big), "x"])
    assert result.exit_code == 2
    assert f"the limit is {MAX_CONFIG_BYTES:,}" in result.output
    for special, kind in ((tmp_path, "a directory"), ("/dev/zero", "a device")):
        result = runner.invoke(app, ["check", "--config", str(special), "x"])
        assert result.exit_code == 2 and kind in result.output, result.output


def test_index_build_refuses_a_corpus_file_over_its_limit(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("The Eiffel Tower is in Paris.")
    _sparse(corpus / "b.txt", MAX_DOCUMENT_FILE_BYTES + 1, b"A very long book.\n")
    result = runner.invoke(app, ["index", "build", str(corpus), "--name", "t", "--mode", "bm25"])
    assert result.exit_code == 2, result.output
    assert "b.txt" in result.output and f"the limit is {MAX_DOCUMENT_FILE_BYTES:,}" in result.output
