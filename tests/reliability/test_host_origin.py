"""DNS rebinding and cross-site calls (issue 23, item 2): the REST server and the MCP
server answer only to their own names (421 for another ``Host``) and refuse browser calls
from other sites (403 for a foreign ``Origin``), through one shared check
(`veracity.core.netguard.HostGuard`); an operator allows more names with ``--allow-host`` /
``VERACITY_SERVER_ALLOWED_HOSTS``.

Real components: a server on 127.0.0.1 reached over HTTP, `veracity serve` through the
CLI, and the MCP server through the official SDK client.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from typer.testing import CliRunner

from veracity.cli import app as cli_app
from veracity.server import ServerSettings

from .frontdoor import CLAIM, Tally, free_port, live_server, wait_status

pytestmark = [pytest.mark.server]


def attacks(port: int) -> list[tuple[str, str, str, dict[str, str]]]:
    """(name, method, path, headers) a rebinding or cross-site page could send."""
    foreign = f"attacker.example:{port}"
    return [
        ("foreign Host on the API", "GET", "/v1/checks", {"Host": foreign}),
        ("foreign Host on the UI", "GET", "/", {"Host": foreign}),
        ("foreign Host on a probe", "GET", "/healthz", {"Host": foreign}),
        ("foreign Host, no port", "GET", "/v1/methods", {"Host": "attacker.example"}),
        ("foreign Host, trailing dot", "GET", "/v1/methods", {"Host": "attacker.example."}),
        ("foreign Host, upper case", "GET", "/v1/methods", {"Host": f"ATTACKER.EXAMPLE:{port}"}),
        ("a name that starts like localhost", "GET", "/v1/methods",
         {"Host": f"localhost.attacker.example:{port}"}),
        ("a name that embeds the address", "GET", "/v1/methods",
         {"Host": f"127.0.0.1.nip.io:{port}"}),
        ("user info in Host", "GET", "/v1/methods", {"Host": f"evil@127.0.0.1:{port}"}),
        ("empty Host", "GET", "/v1/methods", {"Host": ""}),
        ("a port that is not a number", "GET", "/v1/methods", {"Host": "127.0.0.1:80a"}),
        ("rebound POST queues a check", "POST", "/v1/checks",
         {"Host": foreign, "Origin": f"http://{foreign}"}),
        ("rebound DELETE", "DELETE", "/v1/checks/x", {"Host": foreign}),
        ("foreign Origin, POST", "POST", "/v1/checks", {"Origin": "http://evil.example"}),
        ("foreign Origin, GET", "GET", "/v1/checks", {"Origin": "https://evil.example"}),
        ("null Origin (sandboxed frame)", "POST", "/v1/checks", {"Origin": "null"}),
        ("Origin under a look-alike name", "POST", "/v1/checks",
         {"Origin": f"http://127.0.0.1.evil.example:{port}"}),
        ("file: Origin", "POST", "/v1/checks", {"Origin": "file://"}),
        ("Origin of another address", "POST", "/v1/checks", {"Origin": "http://192.0.2.7"}),
        ("Origin on the event stream", "GET", "/v1/checks/x/events",
         {"Origin": "http://evil.example"}),
    ]  # fmt: skip


def allowed(port: int) -> list[tuple[str, str, str, dict[str, str]]]:
    """Requests a real client of a loopback server sends."""
    return [
        ("the bind address", "GET", "/v1/methods", {}),
        ("localhost", "GET", "/v1/methods", {"Host": f"localhost:{port}"}),
        ("localhost, no port", "GET", "/v1/methods", {"Host": "localhost"}),
        ("IPv6 loopback", "GET", "/v1/methods", {"Host": f"[::1]:{port}"}),
        ("same origin", "GET", "/v1/methods", {"Origin": f"http://127.0.0.1:{port}"}),
        ("a page on localhost", "GET", "/v1/methods", {"Origin": "http://localhost:5173"}),
        ("an IP address (never rebound)", "GET", "/healthz", {"Host": f"10.1.2.3:{port}"}),
    ]


def test_the_rest_server_refuses_foreign_hosts_and_origins(tmp_path, capsys):
    tally = Tally()
    with live_server(tmp_path) as (server, client):
        for name, method, path, headers in attacks(server.port):
            tally.tried += 1
            body = CLAIM if method == "POST" else None
            resp = client.request(method, path, headers=headers, json=body)
            want = 421 if "Host" in headers else 403
            if resp.status_code >= 500:
                tally.crashed.append(f"{name}: {resp.status_code}")
            elif resp.status_code != want:
                tally.holes.append(f"{name}: {resp.status_code} {resp.text[:120]}")
            elif (
                resp.headers["content-type"] == "application/problem+json" and resp.json()["detail"]
            ):
                tally.clear += 1
            else:
                tally.silent.append(f"{name}: {resp.text[:120]}")
        for name, method, path, headers in allowed(server.port):
            resp = client.request(method, path, headers=headers)
            assert resp.status_code == 200, (name, resp.text)
        queued = client.get("/v1/checks").json()["jobs"]
    with capsys.disabled():
        print("\n" + tally.line("REST Host/Origin"))
    tally.assert_clean()
    assert queued == []  # no refused POST queued a check


def test_the_refusal_says_how_to_allow_a_name(tmp_path):
    with live_server(tmp_path) as (server, client):
        resp = client.get("/v1/methods", headers={"Host": f"veracity.internal:{server.port}"})
    assert resp.status_code == 421
    detail = resp.json()["detail"]
    assert "veracity.internal" in detail and "--allow-host" in detail
    assert "VERACITY_SERVER_ALLOWED_HOSTS" in detail


def test_named_hosts_and_cors_origins_are_allowed_and_nothing_else(tmp_path):
    settings = {
        "allowed_hosts": ["veracity.example.org", "proxy.example.org:8443"],
        "cors_origins": ["https://app.example.net"],
    }
    with live_server(tmp_path, **settings) as (_, client):
        named = client.get("/v1/methods", headers={"Host": "veracity.example.org"})
        named_port = client.get("/v1/methods", headers={"Host": "Veracity.Example.org:443"})
        its_origin = client.post(
            "/v1/checks",
            json=CLAIM,
            headers={"Host": "veracity.example.org", "Origin": "https://veracity.example.org"},
        )
        pinned = client.get("/v1/methods", headers={"Host": "proxy.example.org:8443"})
        other_port = client.get("/v1/methods", headers={"Host": "proxy.example.org:9000"})
        cors = client.get("/v1/methods", headers={"Origin": "https://app.example.net"})
        cors_other = client.get("/v1/methods", headers={"Origin": "https://app.example.net:444"})
        sub = client.get("/v1/methods", headers={"Host": "evil.veracity.example.org"})
        wait_status(client, its_origin.json()["id"], "done")
    assert [named.status_code, named_port.status_code, its_origin.status_code] == [200, 200, 202]
    assert [pinned.status_code, other_port.status_code] == [200, 421]
    assert [cors.status_code, cors_other.status_code, sub.status_code] == [200, 403, 421]


def test_a_star_turns_the_host_check_off_but_not_the_origin_check(tmp_path):
    with live_server(tmp_path, allowed_hosts=["*"]) as (_, client):
        any_host = client.get("/v1/methods", headers={"Host": "whatever.example"})
        foreign = client.get(
            "/v1/methods", headers={"Host": "whatever.example", "Origin": "http://evil.example"}
        )
        same = client.get(
            "/v1/methods",
            headers={"Host": "whatever.example", "Origin": "http://whatever.example"},
        )
    assert (any_host.status_code, foreign.status_code, same.status_code) == (200, 403, 200)


def test_allowed_hosts_come_from_the_environment_as_a_list(monkeypatch):
    monkeypatch.setenv("VERACITY_SERVER_ALLOWED_HOSTS", "a.example, b.example:8443")
    assert ServerSettings().allowed_hosts == ["a.example", "b.example:8443"]
    monkeypatch.setenv("VERACITY_SERVER_ALLOWED_HOSTS", '["c.example"]')
    assert ServerSettings().allowed_hosts == ["c.example"]


@pytest.mark.parametrize("bad", ["not a host", "http://x.example/", "x.example:99999", "a@b"])
def test_a_bad_allowed_host_is_a_clear_error_on_the_command_line(tmp_path, bad):
    argv = ["serve", "--allow-host", bad, "--data-dir", str(tmp_path)]
    result = CliRunner().invoke(cli_app, argv)
    assert result.exit_code == 2, result.output
    assert "not a host name" in result.output and "Traceback" not in result.output


def _mcp_server(allowed_hosts: list[str]) -> tuple[object, int]:
    import uvicorn

    from veracity.mcp.tool_server import build_tool_server
    from veracity.mcp.transport import http_app

    port = free_port()
    app = http_app(build_tool_server([]), host="127.0.0.1", allowed_hosts=allowed_hosts)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "the MCP server did not start"
        time.sleep(0.02)
    return server, port


async def _list_tools(port: int, headers: dict[str, str]) -> tuple[bool, list[int]]:
    """Whether the SDK client got the tool list, and the HTTP statuses it saw."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    statuses: list[int] = []

    async def seen(response: object) -> None:
        statuses.append(response.status_code)  # type: ignore[attr-defined]

    http = create_mcp_http_client(headers=headers)
    http.event_hooks["response"].append(seen)
    transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
    try:
        async with Client(transport) as client:
            await client.list_tools()
        return True, statuses
    except Exception:  # the SDK wraps the HTTP refusal in its own error
        return False, statuses


def test_the_mcp_server_shares_the_check(capsys):
    server, port = _mcp_server(["mcp.example.org"])
    tally = Tally()
    try:
        for name, headers, want in [
            ("foreign Host", {"Host": f"attacker.example:{port}"}, 421),
            ("foreign Host, no port", {"Host": "attacker.example"}, 421),
            ("look-alike Host", {"Host": f"localhost.attacker.example:{port}"}, 421),
            ("foreign Origin", {"Origin": "http://evil.example"}, 403),
            ("null Origin", {"Origin": "null"}, 403),
        ]:
            tally.tried += 1
            ok, statuses = asyncio.run(_list_tools(port, headers))
            if ok:
                tally.holes.append(name)
            elif any(s >= 500 for s in statuses):
                tally.crashed.append(f"{name}: {statuses}")
            elif want in statuses:
                tally.clear += 1
            else:
                tally.silent.append(f"{name}: {statuses}")
        for headers in ({}, {"Host": "mcp.example.org"}, {"Origin": "http://localhost:6274"}):
            assert asyncio.run(_list_tools(port, headers))[0], headers
    finally:
        server.should_exit = True  # type: ignore[attr-defined]
    with capsys.disabled():
        print("\n" + tally.line("MCP Host/Origin"))
    tally.assert_clean()
