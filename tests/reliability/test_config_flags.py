"""Flags on the command line override `--config` in `check` and `eval` (issue item 7)."""

from __future__ import annotations

import json

import pytest

from veracity.testing.fake_openai import FakeOpenAIServer

from .conftest import run_cli

pytestmark = [pytest.mark.server, pytest.mark.slow]

EMBEDDED = "method: direct\nllm: {backend: embedded, model: smollm2-135m}\n"
OTHER_ENDPOINT = (
    "method: direct\nllm: {backend: openai, base_url: 'http://127.0.0.1:9/v1', model: other}\n"
)


@pytest.mark.parametrize("file_text", [EMBEDDED, OTHER_ENDPOINT], ids=["embedded", "endpoint"])
def test_check_flags_win_over_the_config_file(tmp_path, file_text):
    config = tmp_path / "run.yaml"
    config.write_text(file_text)
    with FakeOpenAIServer() as server:
        result = run_cli(
            ["check", "Rain is wet.", "--config", str(config), "--base-url", server.url,
             "--model", "flag-model", "--json"],
            tmp_path / "home",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr.decode()
        assert server.requests and {r["model"] for r in server.requests} == {"flag-model"}
    verdict = json.loads(result.stdout)
    assert verdict["method"] == "direct" and verdict["label"] is not None


@pytest.mark.parametrize("file_text", [EMBEDDED, OTHER_ENDPOINT], ids=["embedded", "endpoint"])
def test_eval_flags_win_over_the_config_file(tmp_path, liar_dir, file_text):
    config = tmp_path / "run.yaml"
    config.write_text(file_text + "dataset: liar\nsplit: train\nlimit: 3\nmethod_config: {}\n")
    with FakeOpenAIServer() as server:
        result = run_cli(
            ["eval", "--config", str(config), "--base-url", server.url, "--model", "flag-model",
             "--data-dir", str(liar_dir), "--out", str(tmp_path / "run"), "--no-progress",
             "--method", "cot", "--limit", "4"],
            tmp_path / "home",
        )  # fmt: skip
        assert result.returncode == 0, result.stderr.decode()
        assert {r["model"] for r in server.requests} == {"flag-model"}
    saved = json.loads((tmp_path / "run" / "run.json").read_text())["config"]
    assert saved["method"] == "cot" and saved["limit"] == 4
    assert saved["llm"]["model"] == "flag-model"
    lines = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 4
