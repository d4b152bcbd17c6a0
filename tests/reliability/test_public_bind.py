"""A public bind without a token (issue 23, item 3): `veracity serve` and `veracity mcp
--http` refuse a non-loopback address unless a token is set, through one rule
(`veracity.core.netguard.check_bind`), or the operator passes the loud opt-out
``--allow-public-without-token``, which prints a warning at every start.

The command runs for real (in-process through the CLI, and once in a subprocess); only
the final call into uvicorn is replaced where a test must see whether it would listen.
"""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from veracity.cli import app as cli_app
from veracity.core.errors import ConfigError

from .frontdoor import (
    Tally,
    free_port,
    listening,
    run_config_file,
    start_serve,
    stop,
)

pytestmark = [pytest.mark.server]

PUBLIC = ["0.0.0.0", "::", "192.0.2.1", "public.invalid", "10.0.0.8", "[::]"]


@pytest.fixture
def binds(monkeypatch) -> list[dict[str, Any]]:
    """Every (host, port) uvicorn was asked to listen on; nothing really binds."""
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr("uvicorn.run", lambda app, **kw: seen.append(kw))
    return seen


def _serve(tmp_path, *args: str, env: dict[str, str] | None = None):
    cfg = run_config_file(tmp_path)
    argv = ["serve", "--config", str(cfg), "--data-dir", str(tmp_path / "data"), *args]
    return CliRunner().invoke(cli_app, argv, env=env or {})


def test_serve_refuses_every_public_address_without_a_token(tmp_path, binds, capsys):
    tally = Tally()
    cases = [(host, {}) for host in PUBLIC] + [
        ("0.0.0.0", {"VERACITY_SERVER_TOKEN": "   "}),  # blank is no token
        ("0.0.0.0", {"VERACITY_SERVER_TOKEN": ""}),
    ]
    for host, env in cases:
        tally.tried += 1
        before = len(binds)
        result = _serve(tmp_path, "--host", host, "--port", str(free_port()), env=env)
        out = result.output
        if len(binds) > before:
            tally.holes.append(f"{host} {env}: listened")
        elif result.exception and not isinstance(result.exception, SystemExit):
            tally.crashed.append(f"{host}: {result.exception!r}")
        elif (
            result.exit_code == 2
            and "refusing to serve" in out
            and "VERACITY_SERVER_TOKEN" in out
            and "--allow-public-without-token" in out
        ):
            tally.clear += 1
        else:
            tally.silent.append(f"{host}: exit {result.exit_code} {out[:200]}")
    with capsys.disabled():
        print("\n" + tally.line("serve public binds"))
    tally.assert_clean()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.0.0.2", "::1"])
def test_loopback_addresses_need_no_token_and_get_no_warning(tmp_path, binds, host):
    result = _serve(tmp_path, "--host", host)
    assert result.exit_code == 0, result.output
    assert [b["host"] for b in binds] == [host]
    assert "WARNING" not in result.output and "warning" not in result.output


def test_a_token_allows_a_public_address(tmp_path, binds):
    result = _serve(tmp_path, "--host", "0.0.0.0", env={"VERACITY_SERVER_TOKEN": "s3cret"})
    assert result.exit_code == 0, result.output
    assert [b["host"] for b in binds] == ["0.0.0.0"]
    assert "WARNING" not in result.output


def test_the_opt_out_serves_and_says_so_loudly(tmp_path, binds):
    result = _serve(tmp_path, "--host", "0.0.0.0", "--allow-public-without-token")
    assert result.exit_code == 0, result.output
    assert [b["host"] for b in binds] == ["0.0.0.0"]
    assert "WARNING" in result.output and "WITHOUT A TOKEN" in result.output


def test_the_python_entry_point_keeps_the_rule(tmp_path, binds):
    from veracity.core.config import RunConfig
    from veracity.server import ServerSettings, create_app, serve
    from veracity.testing import ScriptedLLM

    app = create_app(ServerSettings(data_dir=tmp_path), run_config=RunConfig(), llm=ScriptedLLM())
    with pytest.raises(ConfigError, match=r"refusing to serve on 0\.0\.0\.0"):
        serve(app, "0.0.0.0", free_port())
    serve(app, "0.0.0.0", free_port(), allow_public_without_token=True)
    serve(app, "127.0.0.1", free_port())
    assert [b["host"] for b in binds] == ["0.0.0.0", "127.0.0.1"]


def test_a_refused_serve_never_listens(tmp_path):
    home, port = tmp_path / "home", free_port()
    home.mkdir()
    proc = start_serve(
        ["--config", str(run_config_file(tmp_path)), "--host", "0.0.0.0", "--port", str(port)],
        home,
    )
    proc.wait(60)
    out = stop(proc)
    assert proc.returncode == 2, out
    assert "refusing to serve on 0.0.0.0" in out and "Traceback" not in out
    assert not listening(port)


@pytest.mark.parametrize("command", [["mcp"], ["mcp", "tools", "--source", "w=wikipedia"]])
def test_mcp_shares_the_rule_and_the_opt_out(tmp_path, monkeypatch, command):
    served: list[Any] = []

    async def fake_serve(self: Any) -> None:
        served.append(self.config.host)

    monkeypatch.setattr("uvicorn.Server.serve", fake_serve)
    cfg = run_config_file(tmp_path)
    base = [*command, "--http", "--host", "0.0.0.0", "--port", str(free_port())]
    if command == ["mcp"]:
        base += ["--config", str(cfg)]
    runner = CliRunner()
    refused = runner.invoke(cli_app, base, env={"VERACITY_MCP_TOKEN": ""})
    opted = runner.invoke(cli_app, [*base, "--allow-public-without-token"])
    with_token = runner.invoke(cli_app, base, env={"VERACITY_MCP_TOKEN": "s3cret"})
    assert refused.exit_code == 2, refused.output
    assert "refusing to serve on 0.0.0.0" in refused.output
    assert "VERACITY_MCP_TOKEN" in refused.output
    assert opted.exit_code == 0 and with_token.exit_code == 0, (opted.output, with_token.output)
    assert "WITHOUT A TOKEN" in opted.output and "WITHOUT A TOKEN" not in with_token.output
    assert served == ["0.0.0.0", "0.0.0.0"]
