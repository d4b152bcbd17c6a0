"""Failed searches on the REST server and in the web UI: the job result and its closing
status event carry the warning, and the report fragment shows it (see
tests/unit/test_search_failure_fronts.py for the CLI, batch and MCP)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from server_support import live_server, sse_events, wait_status

from veracity.core.config import RunConfig
from veracity.testing.schema import schema_llm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from failing_sources import REFUSED, register

pytestmark = pytest.mark.server

BODY = {"input": {"kind": "claim", "text": "The town council approved the budget."}}
WARNING = f"all 2 searches failed; first error: SourceUnreachable: web: {REFUSED}"


def config(source: str) -> RunConfig:
    register()
    return RunConfig(
        method="react", sources={"web": {"type": source}}, method_config={"max_steps": 2}
    )


def test_a_job_whose_searches_all_failed_abstains_with_the_warning(tmp_path):
    with live_server(tmp_path, schema_llm(), config=config("always_down")) as (_, client):
        job_id = client.post("/v1/checks", json=BODY).json()["id"]
        events = sse_events(client, job_id)
        job = wait_status(client, job_id, "done")
        report = client.get(f"/ui/checks/{job_id}/report").text
    assert job["warning"] == WARNING
    verdict = job["verdict"]
    assert verdict["label"] is None and verdict["abstained"] is True
    assert "every search failed (2 failed" in verdict["abstain_reason"]
    assert verdict["metadata"]["search_failures"]["all_failed"] is True
    statuses = [e["data"]["data"] for e in events if e.get("event") == "status"]
    assert statuses[-1]["status"] == "done" and statuses[-1]["search_failures"]["failed"] == 2
    assert f"Warning: {WARNING}" in report and "The method abstained" in report


def test_a_job_with_some_failed_searches_keeps_its_label_and_warns(tmp_path):
    with live_server(tmp_path, schema_llm(), config=config("every_other_down")) as (_, client):
        job_id = client.post("/v1/checks", json=BODY).json()["id"]
        job = wait_status(client, job_id, "done")
        report = client.get(f"/ui/checks/{job_id}/report").text
    assert job["verdict"]["label"] is not None
    assert job["warning"].startswith("1 of 2 searches failed; first error: SourceBadResponse")
    assert 'id="search-warning"' in report and "[bold]x[/bold]" in report
