"""Storage faults (issue 23, item 10): a damaged store, a read-only home, a full disk.

Each fault gets one clear message naming the file and the fix (exit 3 on the command
line, 503 from the server), never a traceback; a damaged cache is moved aside and rebuilt
with a notice; `veracity doctor` finds each fault; `/readyz` reports the job database's
state; nothing is left half-written.

Read-only folders and full disks are real: a small tmpfs is mounted (as root, or through
``sudo -n``), filled or remounted read-only. Where nothing can be mounted those cases skip
with the reason; `tests/unit/test_sqlite_open.py` covers the same paths without a mount.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from veracity.core.errors import StorageError
from veracity.core.infra import open_sqlite
from veracity.evidence.memory import EvidenceMemory
from veracity.evidence.memory_models import MemoryConfig
from veracity.retrieval.transport.cache import CachedResponse, HttpCache

from .conftest import cli_env, run_cli, veracity_cmd

GARBAGE = bytes(range(256)) * 32  # 8 KB that are not a SQLite database
STORES = {  # what doctor calls each store -> where it lives under VERACITY_HOME
    "LLM cache": "cache/llm.sqlite",
    "HTTP cache": "cache/http.sqlite",
    "evidence memory": "memory/evidence.sqlite",
    "job database": "server/jobs.sqlite",
}


# ------------------------------------------------------------------ mounts


def _sudo(*cmd: str) -> list[str]:
    return list(cmd) if os.geteuid() == 0 else ["sudo", "-n", *cmd]


def _mount(where: Path, size_kb: int) -> None:
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size_kb}k,uid={os.getuid()},gid={os.getgid()},mode=0755"
    done = subprocess.run(
        _sudo("mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)), capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()[:200]}")


def _umount(where: Path) -> None:
    subprocess.run(_sudo("umount", "-l", str(where)), capture_output=True)


def _fill(where: Path) -> None:
    """Fill the disk holding `where` up to the last byte."""
    with open(where / "filler", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass


@pytest.fixture
def full_dir(tmp_path) -> Iterator[Path]:
    """A folder on a 32 MB tmpfs that is full."""
    where = tmp_path / "full"
    _mount(where, 32 * 1024)
    try:
        _fill(where)
        yield where
    finally:
        _umount(where)


@pytest.fixture
def readonly_home(tmp_path) -> Iterator[Path]:
    """An empty VERACITY_HOME that cannot be written (a tmpfs remounted read-only)."""
    where = tmp_path / "ro-home"
    _mount(where, 1024)
    done = subprocess.run(_sudo("mount", "-o", "remount,ro", str(where)), capture_output=True)
    try:
        if done.returncode != 0:
            pytest.skip(f"cannot remount read-only: {done.stderr.decode().strip()[:200]}")
        yield where
    finally:
        _umount(where)


# ------------------------------------------------------------------ helpers


def check_args(url: str) -> list[str]:
    return ["check", "Rain is wet.", "--base-url", url, "--model", "fake", "--method", "direct"]


def one_clear_error(result: subprocess.CompletedProcess, *names: str) -> str:
    """The command failed with exit 3 and one ``error:`` line naming each of `names`."""
    err = result.stderr.decode()
    assert result.returncode == 3, (result.returncode, err[-2000:])
    assert "Traceback" not in err, err[-2000:]
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]


def damaged_db(path: Path) -> None:
    """A SQLite file whose header is sound but whose pages are not."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TABLE responses (key TEXT, occurrence INT, backend TEXT, request TEXT, "
        "response TEXT, created_at REAL, PRIMARY KEY (key, occurrence))"
    )
    rows = [(f"k{i}", "r" * 400) for i in range(3000)]
    conn.executemany("INSERT INTO responses VALUES (?, 0, 'b', '{}', ?, 0)", rows)
    conn.commit()
    conn.close()
    size = path.stat().st_size
    with open(path, "r+b") as f:  # every page but the first (the header and the schema)
        f.seek(4096)
        f.write((GARBAGE * (size // len(GARBAGE) + 1))[: size - 4096])


def doctor_findings(home: Path) -> dict[str, dict]:
    done = run_cli(["doctor", "--offline", "--json"], home)
    assert "Traceback" not in done.stderr.decode()
    return {f["check"]: f for f in json.loads(done.stdout)}


def serve_until_it_stops(home: Path, *extra: str, seconds: float = 60) -> tuple[int, str]:
    """`veracity serve` on a free port; its exit status and output (killed if it serves)."""
    proc = subprocess.Popen(
        veracity_cmd("serve", "--port", "0", *extra),
        env=cli_env(home, VERACITY_BASE_URL="http://127.0.0.1:9/v1", VERACITY_MODEL="fake"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        out, _ = proc.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    return proc.returncode, out.decode()


# ------------------------------------------------------------------ damaged stores


def test_a_garbage_llm_cache_is_moved_aside_and_rebuilt_with_a_notice(tmp_path, fake_server):
    home = tmp_path / "home"
    cache = home / "cache" / "llm.sqlite"
    cache.parent.mkdir(parents=True)
    cache.write_bytes(GARBAGE)
    done = run_cli(check_args(fake_server.url), home)
    err = done.stderr.decode()
    assert done.returncode == 0, err[-2000:]
    assert "Traceback" not in err
    moved = list(cache.parent.glob("llm.sqlite.corrupt-*"))
    assert len(moved) == 1 and moved[0].read_bytes() == GARBAGE  # nothing destroyed
    assert str(cache) in err and str(moved[0]) in err and "moved aside" in err
    rows = sqlite3.connect(cache).execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    assert rows == 1  # the new cache works: the reply was stored
    again = run_cli(check_args(fake_server.url), home)
    assert again.returncode == 0 and "moved aside" not in again.stderr.decode()


def test_a_garbage_http_cache_is_rebuilt(tmp_path, caplog):
    path = tmp_path / "http.sqlite"
    path.write_bytes(GARBAGE)
    cache = HttpCache(path)
    with caplog.at_level("WARNING", logger="veracity.core.storage"):
        cache.put("k", method="GET", url="https://example.org/", params=None, body=None,
                  response=CachedResponse(200, "text/plain", b"body", 1.0))  # fmt: skip
    assert cache.get("k").body == b"body"
    assert "moved aside" in caplog.text and str(path) in caplog.text
    assert [p.read_bytes() for p in tmp_path.glob("http.sqlite.corrupt-*")] == [GARBAGE]


def test_a_garbage_evidence_memory_is_refused_naming_the_file_and_kept(tmp_path):
    path = tmp_path / "memory.sqlite"
    path.write_bytes(GARBAGE)
    with pytest.raises(StorageError) as caught:
        EvidenceMemory(MemoryConfig(path=path))
    assert caught.value.kind == "corrupt" and str(path) in str(caught.value)
    assert "mv " in str(caught.value)
    assert path.read_bytes() == GARBAGE  # not a cache: the user decides


def test_a_cache_damaged_inside_stops_the_check_with_one_message(tmp_path, fake_server):
    home = tmp_path / "home"
    cache = home / "cache" / "llm.sqlite"
    damaged_db(cache)
    line = one_clear_error(run_cli(check_args(fake_server.url), home), str(cache), "damaged")
    assert "mv " in line
    assert doctor_findings(home)["LLM cache"]["status"] == "fail"


@pytest.mark.parametrize("what", list(STORES))
def test_doctor_opens_each_store_and_finds_it_damaged(tmp_path, what):
    home = tmp_path / "home"
    path = home / STORES[what]
    path.parent.mkdir(parents=True)
    path.write_bytes(GARBAGE)
    finding = doctor_findings(home)[what]
    assert finding["status"] == "fail" and str(path) in finding["detail"]
    assert finding["fix"]
    path.unlink()
    damaged_db(path)  # a sound header, damaged pages
    finding = doctor_findings(home)[what]
    assert finding["status"] == "fail" and "damaged" in finding["detail"], finding


def test_doctor_reports_sound_stores_as_ok(tmp_path):
    home = tmp_path / "home"
    for rel in STORES.values():
        open_sqlite(home / rel, "CREATE TABLE IF NOT EXISTS t (x)").close()
    found = doctor_findings(home)
    assert all(found[what]["status"] == "ok" for what in STORES), found


@pytest.mark.parametrize("damage", ["garbage", "damaged pages"])
def test_serve_on_a_damaged_job_database_stops_before_serving(tmp_path, damage):
    home = tmp_path / "home"
    jobs = home / "server" / "jobs.sqlite"
    if damage == "garbage":
        jobs.parent.mkdir(parents=True)
        jobs.write_bytes(GARBAGE)
    else:
        damaged_db(jobs)
    code, out = serve_until_it_stops(home)
    assert code == 3, out[-2000:]
    assert "serving" not in out and "Traceback" not in out, out[-2000:]
    assert str(jobs) in out and "damaged" in out and "mv " in out


# ------------------------------------------------------------------ read-only home


@pytest.mark.slow
def test_a_read_only_home_gives_one_message_in_check_serve_and_doctor(readonly_home, fake_server):
    one_clear_error(run_cli(check_args(fake_server.url), readonly_home), "read-only", "llm.sqlite")
    code, out = serve_until_it_stops(readonly_home)
    assert code == 3 and "serving" not in out and "Traceback" not in out, out[-2000:]
    assert str(readonly_home / "server") in out and "read-only" in out  # the data folder
    found = doctor_findings(readonly_home)
    assert found["home"]["status"] == "fail" and found["home"]["fix"]


# ------------------------------------------------------------------ full disk


def test_check_on_a_full_disk_says_so_naming_the_cache(full_dir, fake_server):
    line = one_clear_error(run_cli(check_args(fake_server.url), full_dir), "no space left")
    assert str(full_dir / "cache" / "llm.sqlite") in line
    assert doctor_findings(full_dir)["disk"]["status"] == "fail"


def test_batch_on_a_full_disk_leaves_no_temp_file_and_loses_no_result(
    tmp_path, full_dir, fake_server
):
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps({"text": f"Claim {i}."}) + "\n" for i in range(3)))
    out, run_dir = full_dir / "out.jsonl", tmp_path / "run"
    args = ["batch", str(rows), "-o", str(out), "--run-dir", str(run_dir), "--base-url",
            fake_server.url, "--model", "fake", "--method", "direct", "--no-progress"]  # fmt: skip
    line = one_clear_error(run_cli(args, tmp_path / "home"), "no space left", str(out))
    assert "Free some disk space" in line
    assert sorted(p.name for p in full_dir.iterdir()) == ["filler"]  # no out.jsonl.tmp
    on_full = [*args[:5], str(full_dir / "run"), *args[6:]]  # the run directory there too
    one_clear_error(run_cli(on_full, tmp_path / "home"), "no space left", str(full_dir / "run"))
    calls = len(fake_server.requests)
    (full_dir / "filler").unlink()
    again = run_cli(args, tmp_path / "home")
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert len(out.read_text().splitlines()) == 3
    assert len(fake_server.requests) == calls  # every result was kept in the run directory


@pytest.mark.server
def test_the_server_on_a_full_disk_answers_503_and_readyz_says_storage(full_dir):
    httpx = pytest.importorskip("httpx")
    server_mod = pytest.importorskip("veracity.server")
    from veracity.core.config import RunConfig
    from veracity.testing import ScriptedLLM

    (full_dir / "filler").unlink()  # room to start
    settings = server_mod.ServerSettings(data_dir=full_dir, rate_per_minute=0)
    app = server_mod.create_app(settings, run_config=RunConfig(method="direct"),
                                llm=ScriptedLLM(default='{"label": "true"}'))  # fmt: skip
    body = {"input": {"kind": "claim", "text": "Rain is wet."}}
    with (
        server_mod.BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        assert client.get("/readyz").json()["storage"] == "ok"
        _fill(full_dir)
        refused = [client.post("/v1/checks", json=body) for _ in range(3)]
        assert [r.status_code for r in refused] == [503] * 3
        assert "full" in refused[0].json()["detail"] and str(full_dir) not in refused[0].text
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["storage"] == "full"
        assert ready.json()["ready"] is False
        assert client.get("/healthz").status_code == 200
        (full_dir / "filler").unlink()
        assert client.get("/readyz").json()["storage"] == "ok"
        accepted = client.post("/v1/checks", json=body)
        assert accepted.status_code == 202, accepted.text
