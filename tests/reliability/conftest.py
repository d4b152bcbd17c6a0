"""Shared parts of the reliability suite: a fake model server, a toy data directory, and
the `veracity` command run in a subprocess with a private home."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from veracity.testing.fake_openai import FakeOpenAIServer

LABELS = ["true", "false", "half-true", "pants-fire", "barely-true", "mostly-true"]


def write_liar(root: Path, n: int) -> Path:
    """A LIAR-format data directory with `n` invented claims in ``train.tsv``."""
    folder = root / "liar"
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for i in range(n):
        text = f"Claim {i}: the town council built {i + 2} bridges in 2010."
        cols = [f"{5000 + i}.json", LABELS[i % 6], text, "towns", "a-speaker", "Mayor",
                "Ohio", "none", "0", "0", "0", "0", "0", "a speech"]  # fmt: skip
        rows.append("\t".join(cols))
    (folder / "train.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (folder / "valid.tsv").write_text(rows[0] + "\n", encoding="utf-8")
    return root


@pytest.fixture
def liar_dir(tmp_path) -> Path:
    return write_liar(tmp_path / "data", 24)


@pytest.fixture
def fake_server():
    with FakeOpenAIServer() as server:
        yield server


def cli_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment for a `veracity` subprocess: a private home, no endpoint settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERACITY_")}
    env.update(VERACITY_HOME=str(home), COLUMNS="200", PYTHONIOENCODING="utf-8")
    env["VERACITY_MODELS_DIR"] = os.environ.get("VERACITY_MODELS_DIR", str(home / "models"))
    env.update(extra)
    return env


def veracity_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "veracity", *args]


def run_cli(
    args: list[str], home: Path, *, input: bytes | None = None, timeout: float = 120, **env: str
) -> subprocess.CompletedProcess:
    return subprocess.run(
        veracity_cmd(*args),
        input=input,
        capture_output=True,
        timeout=timeout,
        env=cli_env(home, **env),
    )
