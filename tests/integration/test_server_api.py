"""The REST API on a real server (127.0.0.1) with scripted models."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from server_support import (
    CLAIM,
    POST,
    THREAD,
    GatedLLM,
    cot_llm,
    live_server,
    parse_sse,
    radar_llm,
    run_config,
    s2mad_llm,
    sse_events,
    wait_status,
)

from veracity.server.store import JobStore

pytestmark = pytest.mark.server

CLAIM_BODY = {"input": {"kind": "claim", "text": "The Eiffel Tower is in Berlin."}}


def submit(client: httpx.Client, body: dict | None = None) -> str:
    resp = client.post("/v1/checks", json=body or CLAIM_BODY)
    assert resp.status_code == 202, resp.text
    assert resp.headers["location"] == f"/v1/checks/{resp.json()['id']}"
    return resp.json()["id"]


def assert_problem(resp: httpx.Response, status: int, *words: str) -> dict:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/problem+json")
    body = resp.json()
    assert body["status"] == status and body["title"]
    text = (body["title"] + " " + body["detail"]).lower()
    for word in words:
        assert word.lower() in text, (word, body)
    return body


# --------------------------------------------------------------------------- happy paths


def test_a_claim_runs_to_a_verdict_and_its_stream_tells_every_step(tmp_path):
    with live_server(tmp_path, cot_llm()) as (_, client):
        job_id = submit(client)
        events = sse_events(client, job_id)
        job = wait_status(client, job_id, "done")
    assert job["verdict"]["label"] == "false"
    assert job["verdict"]["rationale"].startswith("The tower stands in Paris")
    assert job["request"]["input"]["text"] == "The Eiffel Tower is in Berlin."
    assert [e["id"] for e in events[:-1]] == list(range(1, len(events)))
    statuses = [e["data"]["data"]["status"] for e in events if e.get("event") == "status"]
    assert statuses == ["queued", "running", "done"]
    kinds = [e["data"]["kind"] for e in events if e.get("event") == "trace"]
    assert kinds[0] == "stage" and "llm_call" in kinds and kinds[-1] == "stage"
    assert events[-1]["event"] == "end"
    # the trace in the verdict is the streamed trace
    assert len(job["verdict"]["trace"]["events"]) == len(kinds)


def test_radar_streams_turns_rulings_stop_signals_and_searches(tmp_path):
    with live_server(tmp_path, radar_llm(), config=run_config("radar")) as (_, client):
        job_id = submit(client, {"input": {"kind": "claim", "text": CLAIM}})
        events = sse_events(client, job_id)
    trace = [(e["data"]["kind"], e["data"]["name"]) for e in events if e.get("event") == "trace"]
    assert ("search", "memory") in trace
    assert ("agent_turn", "politician") in trace and ("agent_turn", "scientist") in trace
    assert ("stop_signal", "stop_agent") in trace and ("ruling", "round_judge") in trace
    search = next(e["data"] for e in events if e.get("data", {}).get("kind") == "search")
    assert len(search["data"]["results"]) == 4


def test_a_post_with_replies_runs_s2mad(tmp_path):
    replies = [{"id": f"r{i}", "text": t} for i, t in enumerate(THREAD, 1)]
    body = {"input": {"kind": "post", "text": POST, "replies": replies}, "method": "s2mad"}
    with live_server(tmp_path, s2mad_llm()) as (_, client):
        job = wait_status(client, submit(client, body), "done")
    assert job["verdict"]["label"] == "rumor"


def test_history_pages_newest_first(tmp_path):
    with live_server(tmp_path, cot_llm()) as (_, client):
        ids = [submit(client) for _ in range(3)]
        for job_id in ids:
            wait_status(client, job_id, "done")
        first = client.get("/v1/checks", params={"limit": 2}).json()
        second = client.get("/v1/checks", params={"limit": 2, "before": first["next_before"]})
    assert [j["id"] for j in first["jobs"]] == ids[::-1][:2]
    assert [j["id"] for j in second.json()["jobs"]] == ids[:1]
    assert second.json()["next_before"] is None
    assert first["jobs"][0]["label"] == "false" and first["jobs"][0]["input_kind"] == "claim"


def test_methods_sources_health_and_readiness(tmp_path):
    with live_server(tmp_path, cot_llm(), allowed_models=["other-model"]) as (_, client):
        methods = client.get("/v1/methods").json()
        sources = client.get("/v1/sources").json()
        health = client.get("/healthz").json()
        ready = client.get("/readyz")
    names = {m["name"]: m for m in methods["methods"]}
    assert {"cot", "radar", "s2mad", "showcase"} <= set(names)
    assert names["s2mad"]["input_kinds"] == ["post"] and names["s2mad"]["label_spaces"] == ["rumor"]
    assert methods["default_method"] == "cot" and methods["models"] == ["scripted", "other-model"]
    assert any(s["name"] == "true_false" for s in methods["label_spaces"])
    assert sources == {"sources": [{"name": "memory", "type": "memory"}]}
    assert health == {"status": "ok"}
    assert ready.status_code == 200 and ready.json()["ready"] is True


def test_the_api_reference_page_lists_every_operation_offline(tmp_path):
    with live_server(tmp_path, cot_llm()) as (_, client):
        spec = client.get("/openapi.json").json()
        page = client.get("/docs")
    assert page.status_code == 200 and "cdn" not in page.text.lower()
    for path, item in spec["paths"].items():
        for method in item:
            assert f"{method.upper()} {path}" in page.text
    assert 'id="schema-CheckRequest"' in page.text


class _Unloadable:
    """A backend whose weights fail to load: /readyz must say so."""

    capabilities = cot_llm().capabilities
    backend_id = "broken"
    model = "broken"

    def load(self):
        raise RuntimeError("weights missing")

    async def complete(self, request):
        raise AssertionError("never called")


def test_readyz_is_503_while_the_model_cannot_load(tmp_path):
    with live_server(tmp_path, _Unloadable()) as (_, client):
        resp = client.get("/readyz")
    assert resp.status_code == 503
    assert resp.json()["ready"] is False and "weights missing" in resp.json()["detail"]


def test_a_model_failure_is_a_failed_job_with_the_verdict_saying_why(tmp_path):
    broken = cot_llm()
    broken.default = "this is not JSON at all"
    with live_server(tmp_path, broken) as (_, client):
        job = wait_status(client, submit(client), "failed")
    assert job["verdict"]["label"] is None
    assert job["error"] == job["verdict"]["error"]
    assert job["error"].startswith("StructuredOutputError")


# --------------------------------------------------------------------------- SSE replay


def test_a_late_subscriber_replays_from_last_event_id(tmp_path):
    with live_server(tmp_path, cot_llm()) as (_, client):
        job_id = submit(client)
        full = sse_events(client, job_id)
        tail = sse_events(client, job_id, **{"Last-Event-ID": "3"})
        by_query = client.get(f"/v1/checks/{job_id}/events", params={"after": 3}).text
    assert [e["id"] for e in tail[:-1]] == [e["id"] for e in full[3:-1]]
    assert tail[:-1] == full[3:-1]
    assert by_query.split("\n\n")[0].startswith("id: 4")


def test_a_reconnecting_subscriber_gets_the_rest_of_a_running_check_once(tmp_path):
    gated = GatedLLM(cot_llm())
    with live_server(tmp_path, gated) as (_, client):
        job_id = submit(client)
        assert gated.waiting.wait(10)
        first: list[dict] = []
        with client.stream("GET", f"/v1/checks/{job_id}/events") as resp:
            for event in parse_sse(resp.iter_lines()):
                first.append(event)
                if event.get("event") == "trace":  # the method's first stage: disconnect
                    break
        gated.gate.set()
        rest = sse_events(client, job_id, **{"Last-Event-ID": str(first[-1]["id"])})
        whole = sse_events(client, job_id)
    assert first + rest == whole
    assert rest[-2]["data"]["data"]["status"] == "done"


def test_keep_alives_while_a_check_is_slow_do_not_end_the_stream(tmp_path, monkeypatch):
    monkeypatch.setattr("veracity.server.api.KEEPALIVE_S", 0.05)
    gated = GatedLLM(cot_llm())
    with live_server(tmp_path, gated) as (_, client):
        job_id = submit(client)
        assert gated.waiting.wait(10)
        fallback = threading.Timer(30, gated.gate.set)  # never hang if no keep-alive comes
        fallback.start()
        lines = []
        with client.stream("GET", f"/v1/checks/{job_id}/events") as resp:
            for line in resp.iter_lines():
                lines.append(line)
                if lines.count(": keep-alive") == 3:
                    gated.gate.set()  # the model answers only after three keep-alives
        fallback.cancel()
    assert lines.count(": keep-alive") >= 3
    events = list(parse_sse(iter(lines)))
    assert events[-2]["data"]["data"]["status"] == "done" and events[-1]["event"] == "end"


# --------------------------------------------------------------------------- 4xx


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"input": {"kind": "claim", "text": "   "}}, 422, ["empty"]),
        ({"input": {"kind": "claim", "text": "x" * 200_001}}, 422, ["limit"]),
        ({"input": {"kind": "claim"}}, 422, ["text"]),
        ({"input": {"kind": "tweet", "text": "x"}}, 422, ["kind"]),
        ({"input": {"kind": "article", "title": "t", "body": ""}}, 422, ["empty"]),
        ({**CLAIM_BODY, "method": "nope"}, 422, ["unknown method", "cot"]),
        ({**CLAIM_BODY, "labels": "nope"}, 422, ["unknown label space"]),
        ({**CLAIM_BODY, "method": "s2mad", "labels": "true_false"}, 422, ["input kind"]),
        ({**CLAIM_BODY, "sources": ["web"]}, 422, ["unknown source", "memory"]),
        ({**CLAIM_BODY, "model": "gpt-4o"}, 422, ["model not allowed", "scripted"]),
        ({**CLAIM_BODY, "method_config": {"rounds": 99}}, 422, ["not allowed"]),
        ({**CLAIM_BODY, "surprise": 1}, 422, ["surprise"]),
        (
            {
                "input": {
                    "kind": "post", "text": "p",
                    "replies": [{"id": "a", "text": "x"}, {"id": "a", "text": "y"}],
                },
                "method": "s2mad",
            },
            422,
            ["two replies"],
        ),
        (
            {
                "input": {
                    "kind": "post", "text": "p", "id": "p0",
                    "replies": [{"id": "a", "text": "x", "parent": "zz"}],
                },
                "method": "s2mad",
            },
            422,
            ["neither the post"],
        ),
        (
            {"input": {"kind": "claim", "text": "x"}, "method": "cot", "labels": "rumor"},
            202,
            [],
        ),
    ],
)  # fmt: skip
def test_bad_submissions_get_a_problem_body(tmp_path, body, status, words):
    with live_server(tmp_path, cot_llm(), max_body_bytes=400_000) as (_, client):
        resp = client.post("/v1/checks", json=body)
    if status == 202:
        assert resp.status_code == 202
        return
    problem = assert_problem(resp, status, *words)
    assert problem["type"] == "about:blank"


def test_method_config_and_other_models_when_the_operator_allows_them(tmp_path):
    with live_server(tmp_path, cot_llm(), allow_method_config=True) as (_, client):
        ok = client.post("/v1/checks", json={**CLAIM_BODY, "method_config": {"temperature": 0.2}})
        bad = client.post("/v1/checks", json={**CLAIM_BODY, "method_config": {"nope": 1}})
        # only the options the method declares safe (see test_request_options.py)
        size = client.post(
            "/v1/checks", json={**CLAIM_BODY, "method_config": {"max_reasoning_words": 50}}
        )
    assert ok.status_code == 202
    assert_problem(bad, 422, "nope")
    assert_problem(size, 422, "it may set: ")


def test_transport_level_problems(tmp_path):
    with live_server(tmp_path, cot_llm(), max_body_bytes=2_000) as (_, client):
        wrong_type = client.post(
            "/v1/checks", content=b"text", headers={"content-type": "text/plain"}
        )
        not_json = client.post(
            "/v1/checks", content=b"{oops", headers={"content-type": "application/json"}
        )
        too_big = client.post("/v1/checks", json={"input": {"kind": "claim", "text": "x" * 5_000}})

        def chunks():
            yield b'{"input": {"kind": "claim", "text": "'
            for _ in range(10):
                yield b"y" * 500
            yield b'"}}'

        streamed = client.post(
            "/v1/checks", content=chunks(), headers={"content-type": "application/json"}
        )
        unknown = "0" * 32
        missing = [
            client.get(f"/v1/checks/{unknown}"),
            client.get(f"/v1/checks/{unknown}/events"),
            client.delete(f"/v1/checks/{unknown}"),
            client.post(f"/v1/checks/{unknown}/rerun"),
        ]
        bad_limit = client.get("/v1/checks", params={"limit": 0})
        job_id = submit(client)
        wait_status(client, job_id, "done")
        bad_event_id = client.get(f"/v1/checks/{job_id}/events", headers={"Last-Event-ID": "x"})
        cancel_done = client.delete(f"/v1/checks/{job_id}")
        no_route = client.get("/v1/nothing-here")
    assert_problem(wrong_type, 415, "application/json")
    assert_problem(not_json, 400, "json")
    assert_problem(too_big, 413, "2,000 bytes")
    assert_problem(streamed, 413)
    for resp in missing:
        assert_problem(resp, 404, unknown)
    assert_problem(bad_limit, 422)
    assert_problem(bad_event_id, 422, "Last-Event-ID")
    assert_problem(cancel_done, 409, "done")
    assert_problem(no_route, 404)


# --------------------------------------------------------------------------- operation


def test_a_full_queue_answers_429_with_retry_after(tmp_path):
    gated = GatedLLM(cot_llm())
    with live_server(tmp_path, gated, workers=1, queue_size=2) as (_, client):
        running = submit(client)
        assert gated.waiting.wait(10)
        queued = [submit(client), submit(client)]
        refused = client.post("/v1/checks", json=CLAIM_BODY)
        ready = client.get("/readyz").json()
        positions = [client.get(f"/v1/checks/{j}").json()["queue_position"] for j in queued]
        gated.gate.set()
        done = [wait_status(client, j, "done")["status"] for j in (running, *queued)]
        after = client.post("/v1/checks", json=CLAIM_BODY)
    problem = assert_problem(refused, 429, "queue")
    assert int(refused.headers["retry-after"]) >= 1 and problem["status"] == 429
    assert ready["queued"] == 2 and ready["running"] == 1 and ready["max_queued"] == 2
    assert positions == [1, 2]
    assert done == ["done"] * 3
    assert after.status_code == 202


def test_cancel_a_running_and_a_queued_check(tmp_path):
    gated = GatedLLM(cot_llm())
    with live_server(tmp_path, gated, workers=1) as (_, client):
        running = submit(client)
        assert gated.waiting.wait(10)
        queued = submit(client)
        assert client.delete(f"/v1/checks/{queued}").status_code == 202
        assert client.delete(f"/v1/checks/{running}").status_code == 202
        jobs = [wait_status(client, j, "cancelled") for j in (running, queued)]
        events = sse_events(client, running)
    assert all(j["verdict"] is None for j in jobs)
    assert events[-2]["data"]["data"]["status"] == "cancelled"


def test_auth_on_needs_the_bearer_token(tmp_path):
    with live_server(tmp_path, cot_llm(), token="s3cret-token") as (_, client):
        none = client.post("/v1/checks", json=CLAIM_BODY)
        wrong = client.get("/v1/checks", headers={"Authorization": "Bearer nope"})
        basic = client.get("/v1/checks", headers={"Authorization": "Basic czNjcmV0"})
        good = {"Authorization": "Bearer s3cret-token"}
        ok = client.post("/v1/checks", json=CLAIM_BODY, headers=good)
        fragment = client.get("/ui/history")
        fragment_ok = client.get("/ui/history", headers=good)
        open_paths = [client.get(p).status_code for p in ("/healthz", "/readyz", "/", "/history")]
        events = client.get(f"/v1/checks/{ok.json()['id']}/events")
    body = assert_problem(none, 401, "token")
    assert none.headers["www-authenticate"].startswith("Bearer")
    assert "s3cret" not in str(body)
    assert_problem(wrong, 401)
    assert_problem(basic, 401)
    assert ok.status_code == 202
    assert fragment.status_code == 401 and fragment_ok.status_code == 200
    assert open_paths == [200, 200, 200, 200]
    assert events.status_code == 401


def test_auth_off_needs_no_header(tmp_path):
    with live_server(tmp_path, cot_llm()) as (_, client):
        assert client.get("/v1/checks").status_code == 200


def test_rate_limit_per_client(tmp_path):
    with live_server(tmp_path, cot_llm(), rate_per_minute=6, rate_burst=3) as (_, client):
        codes = [client.get("/v1/methods").status_code for _ in range(4)]
        limited = client.get("/v1/methods")
        probe = client.get("/healthz")
    assert codes[:3] == [200, 200, 200] and codes[3] == 429
    assert_problem(limited, 429, "rate")
    assert int(limited.headers["retry-after"]) >= 1
    assert probe.status_code == 200


def test_cors_is_off_unless_origins_are_configured(tmp_path):
    preflight = {
        "Origin": "https://elsewhere.example",
        "Access-Control-Request-Method": "POST",
    }
    with live_server(tmp_path, cot_llm()) as (_, client):
        off = client.options("/v1/checks", headers=preflight)
        get_off = client.get("/v1/methods", headers={"Origin": "https://elsewhere.example"})
    with live_server(tmp_path, cot_llm(), cors_origins=["https://elsewhere.example"]) as (
        _,
        client,
    ):
        on = client.options("/v1/checks", headers=preflight)
    assert "access-control-allow-origin" not in off.headers
    assert "access-control-allow-origin" not in get_off.headers
    assert on.headers["access-control-allow-origin"] == "https://elsewhere.example"


def test_a_restart_marks_a_running_check_interrupted_and_it_reruns(tmp_path):
    gated = GatedLLM(cot_llm())
    with live_server(tmp_path, gated) as (_, client):
        job_id = submit(client)
        assert gated.waiting.wait(10)
        other = submit(client, {"input": {"kind": "claim", "text": "Another claim."}})
    # the graceful stop interrupted both (one running, one waiting for the model)
    with live_server(tmp_path, cot_llm()) as (_, client):
        job = client.get(f"/v1/checks/{job_id}").json()
        events = sse_events(client, job_id)
        rerun = client.post(f"/v1/checks/{job_id}/rerun")
        again = wait_status(client, rerun.json()["id"], "done")
        assert client.get(f"/v1/checks/{other}").json()["status"] == "interrupted"
    assert job["status"] == "interrupted" and job["verdict"] is None
    assert events[-2]["data"]["data"]["status"] == "interrupted"
    assert rerun.status_code == 202
    assert again["rerun_of"] == job_id and again["verdict"]["label"] == "false"


def test_a_crash_leaves_running_rows_that_the_next_start_marks_interrupted(tmp_path):
    store = JobStore(tmp_path / "jobs.sqlite")
    store.create("crashed", {"input": {"kind": "claim", "text": "x"}}, method="cot",
                 input_kind="claim", preview="x")  # fmt: skip
    store.add_event("crashed", 1, "status", {"status": "queued"})
    store.started("crashed")
    store.add_event("crashed", 2, "status", {"status": "running"})
    store.close()
    with live_server(tmp_path, cot_llm()) as (_, client):
        job = client.get("/v1/checks/crashed").json()
        events = sse_events(client, "crashed")
        busy = client.post("/v1/checks/crashed/rerun")
    assert job["status"] == "interrupted" and "stopped" in job["error"]
    assert [e["data"]["data"]["status"] for e in events[:-1]] == [
        "queued",
        "running",
        "interrupted",
    ]
    assert busy.status_code == 202


def test_rerun_of_an_active_check_is_a_conflict(tmp_path):
    gated = GatedLLM(cot_llm())
    with live_server(tmp_path, gated) as (_, client):
        job_id = submit(client)
        assert gated.waiting.wait(10)
        resp = client.post(f"/v1/checks/{job_id}/rerun")
        gated.gate.set()
        wait_status(client, job_id, "done")
    assert_problem(resp, 409, "running")


def test_many_checks_at_once_all_finish(tmp_path):
    with live_server(tmp_path, cot_llm(latency_s=0.02), workers=3, queue_size=50) as (_, client):
        ids = [submit(client) for _ in range(12)]
        started = time.monotonic()
        statuses = [wait_status(client, j, "done")["status"] for j in ids]
    assert statuses == ["done"] * 12 and time.monotonic() - started < 30
