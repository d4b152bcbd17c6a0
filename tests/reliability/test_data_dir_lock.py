"""Two servers on one data directory (issue 23, item 4): the server holds its data
directory with the lock run directories use (`veracity.evaluation.dirlock`), so a second server on
the same directory refuses to start and names the holder (pid, host, since) instead of
marking the first one's running checks interrupted.

Real components: `veracity serve` in subprocesses on 127.0.0.1 and, in-process, a live
server whose check is held running while a second store tries the same directory.
"""

from __future__ import annotations

import signal
import socket

import pytest

from veracity.core.errors import DirLocked
from veracity.server.store import JobStore

from .frontdoor import (
    CLAIM,
    GateLLM,
    Tally,
    free_port,
    live_server,
    run_config_file,
    start_serve,
    stop,
    wait_healthy,
    wait_status,
)

pytestmark = [pytest.mark.server]


def _refused(out: str, rc: int | None, pid: int) -> bool:
    """A clear refusal: exit 2, the directory's holder named by pid and host, a way out."""
    return (
        rc == 2
        and "in use by another veracity server" in out
        and f"pid {pid} on {socket.gethostname()}, since " in out
        and "--data-dir" in out
        and "Traceback" not in out
    )


def test_a_second_server_on_the_same_directory_is_refused(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    cfg = str(run_config_file(tmp_path))
    data = tmp_path / "data"
    first_port = free_port()
    first = start_serve(["--config", cfg, "--port", str(first_port), "--data-dir", str(data)], home)
    tally = Tally()
    try:
        assert wait_healthy(first_port, first), stop(first)
        # the same directory named four ways: the flag, the variable, a trailing slash, a
        # path through "..", and the default directory when both use the same home
        seconds = [
            ("--data-dir", ["--data-dir", str(data)], {}),
            ("VERACITY_SERVER_DATA_DIR", [], {"VERACITY_SERVER_DATA_DIR": f"{data}/"}),
            ("a path through ..", ["--data-dir", str(data / ".." / "data")], {}),
        ]
        for name, args, env in seconds:
            tally.tried += 1
            port = free_port()
            second = start_serve(["--config", cfg, "--port", str(port), *args], home, **env)
            up = wait_healthy(port, second, timeout_s=30)
            out = stop(second)
            if up:
                tally.holes.append(f"{name}: a second server started")
            elif "Traceback" in out:
                tally.crashed.append(f"{name}: {out[-300:]}")
            elif _refused(out, second.returncode, first.pid):
                tally.clear += 1
            else:
                tally.silent.append(f"{name}: exit {second.returncode}: {out[-300:]}")
        assert wait_healthy(first_port, first, timeout_s=5)  # the first one serves on
    finally:
        stop(first)
    with capsys.disabled():
        print("\n" + tally.line("serve data-directory lock"))
    tally.assert_clean()


def test_the_default_directory_is_locked_too_and_freed_on_exit(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cfg = str(run_config_file(tmp_path))
    first_port = free_port()
    first = start_serve(["--config", cfg, "--port", str(first_port)], home)
    assert wait_healthy(first_port, first), stop(first)
    second = start_serve(["--config", cfg, "--port", str(free_port())], home)
    second.wait(60)
    refused = stop(second)
    stop(first)  # Ctrl-C: the lock goes with the process
    third_port = free_port()
    third = start_serve(["--config", cfg, "--port", str(third_port)], home)
    third_up = wait_healthy(third_port, third)
    stop(third)
    assert _refused(refused, second.returncode, first.pid), refused
    assert str(home / "server") in refused
    assert third_up


def test_a_killed_servers_lock_does_not_block_the_next(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    cfg = str(run_config_file(tmp_path))
    port = free_port()
    first = start_serve(["--config", cfg, "--port", str(port)], home)
    assert wait_healthy(port, first), stop(first)
    stop(first, signal.SIGKILL)
    assert (home / "server" / ".lock").is_file()  # left behind, but no longer held
    port = free_port()
    again = start_serve(["--config", cfg, "--port", str(port)], home)
    up = wait_healthy(port, again)
    out = stop(again)
    assert up, out


def test_a_running_check_survives_a_second_store_on_its_directory(tmp_path):
    gate = GateLLM()
    with live_server(tmp_path, gate) as (_, client):
        job = client.post("/v1/checks", json=CLAIM).json()["id"]
        assert gate.waiting.wait(30)
        with pytest.raises(DirLocked, match=r"in use by another veracity server \(pid \d+ on "):
            JobStore(tmp_path / "jobs.sqlite")
        running = client.get(f"/v1/checks/{job}").json()["status"]
        gate.gate.set()
        done = wait_status(client, job, "done", "failed")
    assert running == "running"
    assert done["status"] == "done" and done["verdict"]["label"] == "false"


def test_a_store_gives_the_lock_back_when_closed_or_when_opening_fails(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    store.close()
    JobStore(tmp_path / "jobs.sqlite").close()  # free again
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "jobs.sqlite").mkdir()  # a folder where the file should be
    with pytest.raises(Exception):  # noqa: B017 - whatever the storage layer raises
        JobStore(tmp_path / "bad" / "jobs.sqlite")
    (tmp_path / "bad" / "jobs.sqlite").rmdir()
    JobStore(tmp_path / "bad" / "jobs.sqlite").close()  # the failed open held nothing
