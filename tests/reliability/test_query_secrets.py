"""Secrets in a base URL's query string (issue 23, item 12): the real command against a
loopback OpenAI-compatible server whose base URL carries ``?key=…`` and its kin.

Each case is classified: the request URL is built correctly (path before the query) and
no secret reaches an artifact (run directory, user-level caches, every line printed).
A secret found anywhere is a hole; a mangled request URL is silently wrong; a traceback
is a crash. Goal: 0 of each.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from veracity.testing.fake_openai import FakeOpenAIServer

from .conftest import run_cli

pytestmark = [pytest.mark.server, pytest.mark.slow]

PARAMS = ["key", "api_key", "token", "access_token", "api-key", "sig"]
SECRETS = {p: f"QS-{i}-secret-value-{p}" for i, p in enumerate(PARAMS)}


def _scan(roots: list[Path], outputs: list[bytes]) -> list[str]:
    hits = []
    for root in roots:
        for f in sorted(p for p in root.rglob("*") if p.is_file()):
            data = f.read_bytes()
            hits += [f"{f}: {p}" for p, s in SECRETS.items() if s.encode() in data]
    for i, blob in enumerate(outputs):
        hits += [f"output {i}: {p}" for p, s in SECRETS.items() if s.encode() in blob]
    return hits


def test_query_secrets_reach_the_endpoint_and_nothing_else(tmp_path, liar_dir, capsys):
    home, run = tmp_path / "home", tmp_path / "run"
    outputs: list[bytes] = []
    crashed, mangled = [], []
    with FakeOpenAIServer() as server:
        for param, secret in SECRETS.items():
            url = f"{server.url}/?{param}={secret}&api-version=2024-06-01"
            done = run_cli(["check", "Tap water is safe.", "--json", "--base-url", url,
                            "--model", "fake"], home)  # fmt: skip
            outputs += [done.stdout, done.stderr]
            if done.returncode != 0 or b"Traceback" in done.stderr:
                crashed.append(f"check ?{param}=: exit {done.returncode}")
            want = f"/v1/chat/completions?{param}={secret}&api-version=2024-06-01"
            if server.paths[-1] != want:
                mangled.append(f"?{param}=: sent {server.paths[-1]}")
        url = f"{server.url}?key={SECRETS['key']}"
        args = ["eval", "--method", "cot", "--dataset", "liar", "--split", "train",
                "--data-dir", str(liar_dir), "--base-url", url, "--model", "fake",
                "--out", str(run), "--no-progress", "--limit", "3"]  # fmt: skip
        first = run_cli(args, home)
        again = run_cli(args, home)  # resumes: the stored config is compared redacted
        outputs += [first.stdout, first.stderr, again.stdout, again.stderr]
        assert first.returncode == 0, first.stderr.decode()
        assert again.returncode == 0, again.stderr.decode()
        assert b"3 already done" in again.stderr
        assert all("?key=" in p and "/chat/completions?" in p for p in server.paths[-3:])
        config = (run / "run.json").read_text()
        assert "key=[redacted]" in config
    with FakeOpenAIServer(api_key="another-key") as server:
        url = f"{server.url}?api_key={SECRETS['api_key']}"
        rejected = run_cli(["check", "Tap water is safe.", "--base-url", url, "--model", "m"], home)
        outputs += [rejected.stdout, rejected.stderr]
        assert rejected.returncode == 3
        assert (
            b"api_key=[redacted]" in rejected.stderr and b"credentials rejected" in rejected.stderr
        )
    hits = _scan([home, run], outputs)
    tried = len(SECRETS) + 3
    with capsys.disabled():
        print(f"\nquery-string secrets: tried {tried}, crashed {len(crashed)}, silently wrong "
              f"{len(mangled)}, hole {len(hits)} (secrets in artifacts or output)")  # fmt: skip
    assert crashed == [] and mangled == [] and hits == []


def test_doctor_probes_the_right_url_and_shows_the_key_redacted(tmp_path):
    home = tmp_path / "home"
    secret = SECRETS["key"]
    with FakeOpenAIServer() as server:
        config = tmp_path / "run.yaml"
        url = f"{server.url}?key={secret}"
        config.write_text(json.dumps({"llm": {"backend": "openai", "base_url": url, "model": "m"}}))
        done = run_cli(["doctor", "--config", str(config), "--json"], home)
    findings = {f["check"]: f for f in json.loads(done.stdout)}
    model = findings["model"]
    assert model["status"] == "ok", model  # GET /v1/models?key=… answered
    assert "key=[redacted]" in model["detail"]
    assert secret.encode() not in done.stdout + done.stderr
