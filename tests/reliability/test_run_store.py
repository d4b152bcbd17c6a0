"""Run directories always recover (issue item 4): repair before read, one session at a
time, and sessions, wall time and records right after `kill -9` at random moments."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import time

import pytest

from veracity.evaluation.store import RunLocked, RunStore
from veracity.testing.fake_openai import FakeOpenAIServer

from .conftest import cli_env, run_cli, veracity_cmd

pytestmark = [pytest.mark.server, pytest.mark.slow]


def eval_args(data, out, url, *extra: str) -> list[str]:
    return [
        "eval", "--method", "cot", "--dataset", "liar", "--split", "train",
        "--data-dir", str(data), "--base-url", url, "--model", "fake", "--out", str(out),
        "--no-progress", *extra,
    ]  # fmt: skip


def check_directory(out, n: int) -> list[dict]:
    """Every line of predictions.jsonl is one whole record; ids unique; n of them."""
    lines = (out / "predictions.jsonl").read_text(encoding="utf-8").split("\n")
    assert lines[-1] == ""  # ends with a newline: no torn line left
    records = [json.loads(line) for line in lines[:-1]]
    ids = [r["id"] for r in records]
    assert len(ids) == len(set(ids)) == n
    return records


def test_a_torn_last_line_is_repaired_before_anything_reads_it(tmp_path, liar_dir, fake_server):
    out, home = tmp_path / "run", tmp_path / "home"
    first = run_cli(eval_args(liar_dir, out, fake_server.url, "--limit", "6"), home)
    assert first.returncode == 0, first.stderr.decode()
    path = out / "predictions.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:5]) + lines[5][:50])  # killed in the middle of a write
    again = run_cli(eval_args(liar_dir, out, fake_server.url, "--limit", "6"), home)
    assert again.returncode == 0, again.stderr.decode()
    assert "Traceback" not in again.stderr.decode()
    check_directory(out, 6)
    report = run_cli(["report", str(out)], home)
    assert report.returncode == 0, report.stderr.decode()


def test_a_second_eval_on_the_same_directory_gets_a_clear_error(tmp_path, liar_dir):
    out, home = tmp_path / "run", tmp_path / "home"
    with FakeOpenAIServer(delay_s=0.4) as server:
        env = cli_env(home)
        busy = subprocess.Popen(
            veracity_cmd(*eval_args(liar_dir, out, server.url, "--concurrency", "1")),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        try:
            deadline = time.time() + 60
            while not (out / "predictions.jsonl").is_file() and time.time() < deadline:
                time.sleep(0.1)
            second = run_cli(eval_args(liar_dir, out, server.url), home)
        finally:
            busy.send_signal(signal.SIGINT)
            busy.wait(60)
    err = second.stderr.decode() + second.stdout.decode()
    assert second.returncode == 2 and "in use by another veracity eval" in err
    assert "Traceback" not in err
    store = RunStore(out)
    store.read_predictions()  # still readable
    store.acquire()  # and free again once the first one stopped
    store.release()


def test_the_lock_is_per_directory_and_given_back(tmp_path):
    a, b = RunStore(tmp_path / "a"), RunStore(tmp_path / "a")
    a.acquire()
    with pytest.raises(RunLocked, match="in use"):
        b.acquire()
    RunStore(tmp_path / "other").acquire()
    a.release()
    with b as held:
        assert held.locked
        with pytest.raises(RunLocked):
            a.acquire()
    assert not b.locked
    a.acquire()
    a.release()


KILLS = 6  # bounded: each kill costs a process start


def _starts(out) -> int:
    path = out / "sessions.jsonl"
    return path.read_text().count('"event": "start"') if path.is_file() else 0


def test_kill_9_at_random_moments_loses_nothing_and_counts_every_session(
    tmp_path, liar_dir, capsys
):
    out, home = tmp_path / "run", tmp_path / "home"
    rng = random.Random(20240601)
    mid_run = readable = 0
    # 0.5 s a call, 3 at a time: a whole run takes >= 4 s, so each kill lands mid-run
    with FakeOpenAIServer(delay_s=0.5) as server:
        for k in range(KILLS):
            proc = subprocess.Popen(
                veracity_cmd(*eval_args(liar_dir, out, server.url, "--concurrency", "3")),
                env=cli_env(home), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            deadline = time.time() + 120
            while _starts(out) <= k and proc.poll() is None and time.time() < deadline:
                time.sleep(0.02)  # the session has begun (its start line is written)
            try:
                proc.wait(rng.uniform(0.0, 1.5))  # then a random moment in the run
            except subprocess.TimeoutExpired:
                proc.kill()  # SIGKILL: no finally block, no flush, no end-of-session line
                proc.wait()
                mid_run += 1
            RunStore(out).read_predictions()  # readable after every kill
            readable += 1
        done = run_cli(eval_args(liar_dir, out, server.url, "--concurrency", "3"), home)
    assert done.returncode == 0, done.stderr.decode()
    records = check_directory(out, 24)
    assert all(r["status"] == "ok" for r in records)
    sessions = RunStore(out).read_sessions()
    starts = (out / "sessions.jsonl").read_text().count('"event": "start"')
    usage = json.loads((out / "usage.json").read_text())
    assert usage["sessions"] == len(sessions) == starts
    assert sum(s["examples_finished"] for s in sessions) == 24
    killed = [s for s in sessions if s["status"] == "killed"]
    with capsys.disabled():
        print(f"\nkill -9: {mid_run} of {KILLS} sessions killed mid-run ({len(killed)} "
              f"recorded as killed), directory readable after {readable}/{KILLS}, final run "
              f"recovered: {len(records)}/24 records, 0 duplicate or corrupt lines")  # fmt: skip
    assert len(killed) == mid_run >= KILLS // 2
    assert all(s["wall_time_s"] >= 0 for s in killed)
    assert usage["wall_time_s"] == pytest.approx(sum(s["wall_time_s"] for s in sessions), abs=0.01)
    assert usage["wall_time_s"] > sessions[-1]["wall_time_s"]  # the killed ones count too
