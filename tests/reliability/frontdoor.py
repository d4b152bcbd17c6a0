"""Shared parts of the front-door tests (Host/Origin, public binds, the data-directory lock,
event positions): a real server on 127.0.0.1, `veracity serve` in a subprocess, and the
outcome table every class prints."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from gated import GatedLLM
from veracity.core.config import RunConfig
from veracity.server import BackgroundServer, ServerSettings, create_app
from veracity.testing import ScriptedLLM

from .conftest import cli_env, veracity_cmd
from .tally import Tally  # noqa: F401  (the front-door tests take it from here)

REPLY = '{"reasoning": "The tower stands in Paris, not Berlin.", "label": "false"}'
CLAIM = {"input": {"kind": "claim", "text": "The Eiffel Tower is in Berlin."}, "method": "cot"}


def scripted() -> ScriptedLLM:
    return ScriptedLLM(default=REPLY)


def GateLLM() -> GatedLLM:
    """A scripted model that answers only once its `gate` is set."""
    return GatedLLM(scripted())


@contextmanager
def live_server(
    data_dir: Path, llm: Any = None, **settings: Any
) -> Iterator[tuple[BackgroundServer, httpx.Client]]:
    """A real server on 127.0.0.1 (no rate limit) and a client for it."""
    opts = {"rate_per_minute": 0, **settings}
    app = create_app(
        ServerSettings(data_dir=data_dir, **opts),
        run_config=RunConfig(method="cot"),
        llm=llm or scripted(),
    )
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as client:
        yield server, client


def wait_status(client: httpx.Client, job_id: str, *want: str, timeout_s: float = 30) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        job = client.get(f"/v1/checks/{job_id}").json()
        if job["status"] in want:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job {job_id} stayed {job['status']}, wanted {want}")
        time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_config_file(folder: Path, base_url: str = "http://127.0.0.1:9/v1") -> Path:
    """A run YAML on an OpenAI-compatible endpoint (nothing loads at start-up)."""
    path = folder / "run.yaml"
    path.write_text(
        f"method: direct\nllm: {{backend: openai, base_url: '{base_url}', model: fake}}\n",
        encoding="utf-8",
    )
    return path


def start_serve(args: list[str], home: Path, **env: str) -> subprocess.Popen:
    """`veracity serve ARGS` in a subprocess (its own process group), output captured."""
    return subprocess.Popen(
        veracity_cmd("serve", *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=cli_env(home, **env),
        start_new_session=True,
    )


def wait_healthy(port: int, proc: subprocess.Popen, timeout_s: float = 60) -> bool:
    """Whether the server on `port` answered /healthz before `proc` exited."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return True
        except httpx.HTTPError:
            time.sleep(0.1)
    return False


def listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def stop(proc: subprocess.Popen, sig: int = signal.SIGINT) -> str:
    """Stop `proc` (Ctrl-C by default) and return everything it printed."""
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.stdout is not None
    return proc.stdout.read().decode("utf-8", "replace")
