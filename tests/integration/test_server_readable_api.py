"""The REST side of a readable UI: each streamed trace event carries its sentence, and the
checked input is served, escaped, behind the same token as the API."""

from __future__ import annotations

import pytest
from server_support import CLAIM, cot_llm, live_server, run_config, sse_events, wait_status

pytestmark = pytest.mark.server


def test_every_streamed_trace_event_carries_a_sentence(tmp_path):
    with live_server(tmp_path, cot_llm(), config=run_config("showcase")) as (_, client):
        job = client.post("/v1/checks", json={"input": {"kind": "claim", "text": CLAIM}}).json()
        wait_status(client, job["id"], "done")
        events = [e["data"] for e in sse_events(client, job["id"]) if e["event"] == "trace"]
    assert events and all(e["text"] and "{" not in e["text"] for e in events)
    texts = {e["kind"]: e["text"] for e in events}
    assert texts["search"] == f"Searched memory for “{CLAIM}”: 4 results"
    assert texts["tool_call"] == "Planner called search (q: Klitschko medal)"
    assert texts["stage"].startswith("Showcase: ")


def test_the_checked_input_is_served_escaped_behind_the_token(tmp_path):
    post = {
        "kind": "post", "text": "Fire <b>now</b>",
        "replies": [{"id": "r1", "text": "yes"}, {"id": "r2", "text": "no"}],
    }  # fmt: skip
    good = {"Authorization": "Bearer s3cret-token"}
    with live_server(tmp_path, cot_llm(), token="s3cret-token") as (_, client):
        job = client.post("/v1/checks", json={"input": post, "method": "cot"}, headers=good)
        job_id = job.json()["id"]
        denied = client.get(f"/ui/checks/{job_id}/input")
        shown = client.get(f"/ui/checks/{job_id}/input", headers=good)
        missing = client.get("/ui/checks/nope/input", headers=good)
    assert denied.status_code == 401 and missing.status_code == 404
    assert shown.status_code == 200
    html = shown.text
    assert "Post checked" in html and "Fire &lt;b&gt;now&lt;/b&gt;" in html and "<b>" not in html
    assert "2 replies" in html
