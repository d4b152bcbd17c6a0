"""Event-stream positions (issue 23, item 9): a ``Last-Event-ID`` or ``?after=`` that is
not plain ASCII digits within range gets 422 with a problem body, never a 500, an empty
stream cut off before its end event, or a number read some other way (``+1``, ``1_0``,
`` 2``, ``²``, ``١``).

Real components: a server on 127.0.0.1 and raw header bytes (a client may send any).
"""

from __future__ import annotations

import logging

import httpx
import pytest

from veracity.server.api import MAX_POSITION

from .frontdoor import CLAIM, GateLLM, Tally, live_server, wait_status

pytestmark = [pytest.mark.server]

HEADER_CASES: list[tuple[str, bytes]] = [
    ("superscript two (latin-1 byte)", b"\xb2"),
    ("a digit and a superscript", b"1\xb9"),
    ("Arabic-Indic three (UTF-8)", "\u0663".encode()),
    ("full-width two (UTF-8)", "\uff12".encode()),
    ("20 digits", b"9" * 20),
    ("19 digits over the 64-bit limit", b"9" * 19),
    ("the limit plus one", str(MAX_POSITION + 1).encode()),
    ("negative", b"-1"),
    ("plus sign", b"+1"),
    ("underscore", b"1_0"),
    ("digits then text", b"2 x"),
    ("a decimal", b"2.0"),
    ("exponent", b"1e3"),
    ("hex", b"0x10"),
    ("empty", b""),
    ("300 digits", b"1" * 300),
    ("5,000 digits (past int()'s own limit)", b"1" * 5000),
]
QUERY_CASES: list[tuple[str, str]] = [
    ("after: 20 digits", "9" * 20),
    ("after: 19 digits over the limit", "9" * 19),
    ("after: plus sign", "%2B1"),
    ("after: underscore", "1_0"),
    ("after: leading space", "%202"),
    ("after: negative", "-1"),
    ("after: superscript", "%C2%B2"),
    ("after: Arabic-Indic", "%D9%A3"),
    ("after: empty", ""),
    ("after: a decimal", "2.0"),
    ("after: 5,000 digits", "1" * 5000),
]


def _judge(tally: Tally, name: str, resp: httpx.Response, body: str) -> None:
    tally.tried += 1
    if resp.status_code >= 500:
        tally.crashed.append(f"{name}: {resp.status_code}")
    elif resp.status_code == 200:
        ended = "event: end" in body
        (tally.silent if ended else tally.crashed).append(
            f"{name}: 200, {'accepted' if ended else 'cut off without its end event'}"
        )
    elif resp.status_code == 422 and resp.headers["content-type"] == "application/problem+json":
        tally.clear += 1
    else:
        tally.silent.append(f"{name}: {resp.status_code} {body[:120]}")


def _get(server_url: str, path: str, headers: dict[bytes, bytes]) -> tuple[httpx.Response, str]:
    # a client per request: a cut-off stream must not spoil the next case's connection
    with (
        httpx.Client(base_url=server_url, timeout=20) as client,
        client.stream("GET", path, headers=headers) as resp,
    ):
        return resp, resp.read().decode("utf-8", "replace")


def test_bad_positions_get_422_and_good_ones_replay(tmp_path, capsys, caplog):
    tally = Tally()
    with live_server(tmp_path) as (server, client), caplog.at_level(logging.ERROR):
        job = client.post("/v1/checks", json=CLAIM).json()["id"]
        wait_status(client, job, "done")
        path = f"/v1/checks/{job}/events"
        for name, raw in HEADER_CASES:
            resp, body = _get(server.url, path, {b"Last-Event-ID": raw})
            _judge(tally, f"Last-Event-ID: {name}", resp, body)
        for name, value in QUERY_CASES:
            resp, body = _get(server.url, f"{path}?after={value}", {})
            _judge(tally, name, resp, body)
        whole = _get(server.url, path, {})[1]
        from_two = _get(server.url, path, {b"Last-Event-ID": b"2"})[1]
        at_limit = _get(server.url, f"{path}?after={MAX_POSITION}", {})
        both = _get(server.url, f"{path}?after=1", {b"Last-Event-ID": b"3"})[1]
        healthy = client.get("/healthz").status_code
    with capsys.disabled():
        print("\n" + tally.line("event-stream positions"))
    tally.assert_clean()
    assert healthy == 200
    assert not [r for r in caplog.records if "Overflow" in r.getMessage() or r.exc_info]
    ids = [int(line[4:]) for line in whole.splitlines() if line.startswith("id: ")]
    assert ids and ids == sorted(ids) and whole.endswith("event: end\ndata: {}\n\n")
    assert [int(x[4:]) for x in from_two.splitlines() if x.startswith("id: ")] == ids[2:]
    assert [int(x[4:]) for x in both.splitlines() if x.startswith("id: ")] == ids[3:]
    assert at_limit[0].status_code == 200 and at_limit[1] == "event: end\ndata: {}\n\n"


def test_the_problem_names_the_header_and_the_rule(tmp_path):
    with live_server(tmp_path) as (server, client):
        job = client.post("/v1/checks", json=CLAIM).json()["id"]
        resp, _ = _get(server.url, f"/v1/checks/{job}/events", {b"Last-Event-ID": b"9" * 20})
    detail = resp.json()["detail"]
    assert resp.status_code == 422
    assert "Last-Event-ID" in detail and "digits 0-9" in detail and str(MAX_POSITION) in detail


def test_a_bad_position_on_a_running_check_leaves_it_running(tmp_path):
    gate = GateLLM()
    with live_server(tmp_path, gate) as (server, client):
        job = client.post("/v1/checks", json=CLAIM).json()["id"]
        assert gate.waiting.wait(30)
        bad, _ = _get(server.url, f"/v1/checks/{job}/events", {b"Last-Event-ID": b"\xb2"})
        status = client.get(f"/v1/checks/{job}").json()["status"]
        gate.gate.set()
        done = wait_status(client, job, "done", "failed")
    assert bad.status_code == 422 and status == "running" and done["status"] == "done"


def test_a_position_for_an_unknown_check_is_judged_first(tmp_path):
    with live_server(tmp_path) as (server, _):
        bad, _ = _get(server.url, "/v1/checks/nope/events", {b"Last-Event-ID": b"-5"})
        missing, _ = _get(server.url, "/v1/checks/nope/events", {b"Last-Event-ID": b"5"})
    assert (bad.status_code, missing.status_code) == (422, 404)
