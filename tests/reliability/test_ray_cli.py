"""`veracity eval --engine ray` as a user runs it: a `veracity` process that starts its own
local Ray cluster, whose workers call a fake OpenAI-compatible server on loopback.

The fake server answers the same request the same way in any process, so the Ray run
must give exactly the local run's predictions: none lost, none checked twice.
"""

from __future__ import annotations

import json

import pytest

from veracity.evaluation.store import RunStore
from veracity.testing.fake_openai import FakeOpenAIServer

from .conftest import run_cli, write_liar

pytest.importorskip("ray")

pytestmark = [pytest.mark.ray, pytest.mark.server, pytest.mark.slow]


def test_eval_command_on_ray_predicts_what_the_local_engine_does(tmp_path):
    data, home = write_liar(tmp_path / "data", 24), tmp_path / "home"
    args = ["eval", "--method", "direct", "--dataset", "liar", "--split", "train",
            "--data-dir", str(data), "--model", "fake", "--no-progress"]  # fmt: skip
    with FakeOpenAIServer() as server:
        args += ["--base-url", server.url]
        local = run_cli([*args, "--out", str(tmp_path / "local")], home, timeout=300)
        assert local.returncode == 0, local.stderr.decode()
        on_ray = run_cli(
            [*args, "--out", str(tmp_path / "ray"), "--engine", "ray", "--workers", "2"],
            home, timeout=600,
        )  # fmt: skip
    assert on_ray.returncode == 0, on_ray.stderr.decode()
    starts = [s for s in RunStore(tmp_path / "ray").read_sessions() if s.get("engine")]
    assert starts and starts[-1]["engine"] == "ray" and starts[-1]["workers"] == 2
    local_starts = RunStore(tmp_path / "local").read_sessions()
    assert local_starts[-1]["engine"] == "local"
    report = run_cli(["report", str(tmp_path / "ray")], home)
    assert report.returncode == 0, report.stderr.decode()
    assert "ray (2 workers, local cluster)" in (tmp_path / "ray" / "report.md").read_text()
    records = RunStore(tmp_path / "ray").read_predictions()
    ids = [r.id for r in records]
    assert len(ids) == len(set(ids)) == 24
    assert all(r.status == "ok" for r in records)
    expected = {r.id: r.predicted for r in RunStore(tmp_path / "local").read_predictions()}
    assert {r.id: r.predicted for r in records} == expected
    usage = json.loads((tmp_path / "ray" / "usage.json").read_text())
    assert usage["llm_calls"] >= 24  # the workers' calls are counted in the run's usage
