"""Ctrl-C during a run (issue item 11) or `veracity train toe`: the process stops
promptly, cancelling the model calls in flight, keeps every finished example, and the run
resumes from there."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from veracity.evaluation.store import RunStore
from veracity.testing.fake_openai import FakeOpenAIServer

from .conftest import cli_env, run_cli, veracity_cmd, write_liar

pytestmark = [pytest.mark.slow]


def _sigint_default() -> None:
    """In the child: SIGINT as a terminal delivers it. A test run started as a background
    job without job control (`pytest &` in a script) passes SIGINT on as ignored, and a
    process rightly keeps an ignored SIGINT ignored, so Ctrl-C would never reach it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(
    cmd: list[str], out: Path, env: dict, *, after: int, limit_s: float,
    records: str = "predictions.jsonl",
) -> dict:  # fmt: skip
    """Start `cmd`, send SIGINT once `after` lines of `out`/`records` exist; how it ended."""
    proc = subprocess.Popen(
        cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_sigint_default
    )
    path = out / records
    deadline = time.time() + limit_s
    while time.time() < deadline and proc.poll() is None:
        if path.is_file() and path.read_bytes().count(b"\n") >= after:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    finished_before = path.read_bytes().count(b"\n") if path.is_file() else 0
    sent = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    exit_s = time.perf_counter() - sent
    kept = path.read_bytes().count(b"\n") if records != "predictions.jsonl" else None
    kept = len(RunStore(out).read_predictions()) if kept is None else kept
    return {"code": proc.returncode, "exit_s": exit_s, "finished_before": finished_before,
            "kept": kept, "stderr": err.decode()}  # fmt: skip


@pytest.mark.server
def test_ctrl_c_stops_at_once_and_keeps_what_finished(tmp_path, liar_dir, capsys):
    out, home = tmp_path / "run", tmp_path / "home"
    args = ["eval", "--method", "cot", "--dataset", "liar", "--split", "train",
            "--data-dir", str(liar_dir), "--model", "fake", "--out", str(out),
            "--no-progress", "--concurrency", "4"]  # fmt: skip
    with FakeOpenAIServer(delay_s=1.5) as server:  # every call still in flight for 1.5 s
        result = _interrupt(
            veracity_cmd(*args, "--base-url", server.url), out, cli_env(home),
            after=4, limit_s=120,
        )  # fmt: skip
        assert result["code"] == 130, result["stderr"]
        assert result["exit_s"] < 1.5  # the calls in flight were not waited for
        assert result["kept"] >= result["finished_before"]
        assert f"{result['kept']} of 24 examples are saved" in " ".join(result["stderr"].split())
        sessions = RunStore(out).read_sessions()
        assert sessions[-1]["status"] == "interrupted"
        server.delay_s = 0.0
        resumed = run_cli([*args, "--base-url", server.url], home)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert len(RunStore(out).read_predictions()) == 24
    with capsys.disabled():
        print(f"\nCtrl-C (OpenAI-compatible, calls in flight): exit in {result['exit_s']:.2f} s, "
              f"kept {result['kept']} of {result['finished_before']}+ finished")  # fmt: skip


@pytest.mark.server
def test_ctrl_c_stops_toe_training_and_the_same_command_resumes(tmp_path, liar_dir):
    home, ck, docs = tmp_path / "home", tmp_path / "ck", tmp_path / "docs"
    docs.mkdir()
    for i in range(3):
        (docs / f"fc{i}.txt").write_text(f"Fact check {i}: the council built {i + 2} bridges.")
    built = run_cli(["index", "build", str(docs), "--name", "fc", "--mode", "bm25"], home)
    assert built.returncode == 0, built.stderr.decode()
    args = ["train", "toe", "--dataset", "liar", "--data-dir", str(liar_dir), "--limit", "24",
            "--model", "fake", "--checkpoint", str(ck), "--source", "factcheck=local:fc",
            "--no-progress", "--no-fit"]  # fmt: skip
    with FakeOpenAIServer(delay_s=0.3) as server:
        result = _interrupt(
            veracity_cmd(*args, "--base-url", server.url), ck, cli_env(home),
            after=2, limit_s=120, records="records.jsonl",
        )  # fmt: skip
        assert result["code"] == 130, result["stderr"]
        assert result["exit_s"] < 5  # the claim in flight was not waited for
        assert 2 <= result["kept"] < 24
        said = " ".join(result["stderr"].split())
        assert f"{result['kept']} of 24 claims are collected" in said
        server.delay_s = 0.0
        resumed = run_cli([*args, "--base-url", server.url], home, timeout=300)
    assert resumed.returncode == 0, resumed.stderr.decode()
    assert f"{result['kept']} already collected" in " ".join(resumed.stderr.decode().split())
    ids = [json.loads(line)["id"] for line in (ck / "records.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 24


@pytest.mark.embedded
def test_ctrl_c_under_cpu_load_with_the_embedded_model(tmp_path, capsys):
    """Two busy processes compete for the cores, as in the issue's report."""
    data = write_liar(tmp_path / "data", 20)
    out, home = tmp_path / "run", tmp_path / "home"
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)
    ]  # fmt: skip
    try:
        args = ["eval", "--method", "cot", "--dataset", "liar", "--split", "train",
                "--data-dir", str(data), "--out", str(out), "--no-progress",
                "--concurrency", "4"]  # fmt: skip
        # on a loaded machine the first records can take minutes: interrupt after two of
        # them or 60 s, whichever comes first (generations are in flight either way)
        result = _interrupt(veracity_cmd(*args), out, cli_env(home), after=2, limit_s=60)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert result["code"] == 130, result["stderr"]
    assert result["kept"] >= result["finished_before"]
    with capsys.disabled():
        print(f"\nCtrl-C (embedded model, 2 busy processes): exit in {result['exit_s']:.1f} s, "
              f"kept {result['kept']} of {result['finished_before']}+ finished")  # fmt: skip
    assert result["exit_s"] < 20
    usage = json.loads((out / "usage.json").read_text()) if (out / "usage.json").exists() else {}
    assert usage.get("sessions", 1) >= 1
