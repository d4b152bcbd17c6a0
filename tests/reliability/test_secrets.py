"""No credential reaches an artifact (issue item 5): a run made with dummy keys in the
environment and in the endpoint URL is scanned, every file and every line printed."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from veracity.testing.fake_openai import FakeOpenAIServer

from .conftest import run_cli

pytestmark = [pytest.mark.server, pytest.mark.slow]

ENV_KEY = "sk-DUMMY-env-key-7f3a9c"
URL_USER, URL_PASSWORD = "alice", "hunter2-url-pass-41b"


def secrets() -> list[str]:
    basic = base64.b64encode(f"{URL_USER}:{URL_PASSWORD}".encode()).decode()
    return [ENV_KEY, URL_PASSWORD, basic, f"{URL_USER}:{URL_PASSWORD}"]


def with_credentials(url: str) -> str:
    return url.replace("http://", f"http://{URL_USER}:{URL_PASSWORD}@")


def scan(paths: list[Path], outputs: list[bytes]) -> tuple[int, list[str]]:
    """(files scanned, 'where: secret' for every hit)."""
    hits, files = [], 0
    for root in paths:
        for f in sorted(p for p in root.rglob("*") if p.is_file()):
            files += 1
            data = f.read_bytes()
            hits += [f"{f}: {s}" for s in secrets() if s.encode() in data]
    for i, blob in enumerate(outputs):
        hits += [f"output {i}: {s}" for s in secrets() if s.encode() in blob]
    return files, hits


def test_no_secret_in_any_artifact_of_runs_with_dummy_keys(tmp_path, liar_dir, capsys):
    home, run = tmp_path / "home", tmp_path / "run"
    outputs: list[bytes] = []
    env = {"OPENAI_API_KEY": ENV_KEY}
    faults = {"http_500": 0.15, "logprob_nan": 0.1, "choices_str": 0.1}
    with FakeOpenAIServer(faults=faults, seed=3) as server:
        url = with_credentials(server.url)
        check = run_cli(["check", "Tap water is safe.", "--json", "--base-url", url,
                         "--model", "fake"], home, **env)  # fmt: skip
        outputs += [check.stdout, check.stderr]
        assert check.returncode in (0, 1), check.stderr.decode()
        assert json.loads(check.stdout)["method"] == "direct"
        ev = run_cli(["eval", "--method", "cot", "--dataset", "liar", "--split", "train",
                      "--data-dir", str(liar_dir), "--base-url", url, "--model", "fake",
                      "--out", str(run), "--no-progress", "--limit", "8"], home, **env)  # fmt: skip
        outputs += [ev.stdout, ev.stderr]
        assert ev.returncode == 0, ev.stderr.decode()
        report = run_cli(["report", str(run)], home)
        outputs += [report.stdout, report.stderr]
        sent = server.headers
    assert any(h.get("Authorization", "").startswith("Basic ") for h in sent)  # creds used
    with FakeOpenAIServer(api_key="a-different-key") as server:
        args = ["check", "Tap water is safe.", "--model", "fake"]
        rejected = run_cli([*args, "--base-url", with_credentials(server.url)], home, **env)
        outputs += [rejected.stdout, rejected.stderr]
        assert rejected.returncode == 3
        assert b"credentials rejected" in rejected.stderr
    files, hits = scan([home, run], outputs)
    with capsys.disabled():
        print(f"\nsecrets scan: {files} files and {len(outputs)} outputs of 4 runs, "
              f"{len(secrets())} dummy secrets, found {len(hits)}")  # fmt: skip
    assert files >= 8  # config, predictions, sessions, usage, metrics, report, caches
    assert hits == []
