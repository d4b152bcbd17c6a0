"""Helpers for contract tests of HTTP sources: recorded bodies and fault responses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

DATA = Path(__file__).resolve().parents[1] / "data" / "http"


def body(relpath: str) -> Any:
    """A recorded JSON body from tests/data/http."""
    return json.loads((DATA / relpath).read_text())


def text(relpath: str) -> str:
    """A recorded text (XML) body from tests/data/http."""
    return (DATA / relpath).read_text()


def fault(scenario: str, auth: httpx.Response | None = None) -> httpx.Response | Exception:
    """The response (or transport error) a service gives in a fault scenario."""
    if scenario == "auth":
        return auth or httpx.Response(401, json={"error": "invalid key"})
    if scenario == "rate_limited":
        return httpx.Response(429, headers={"Retry-After": "0"}, json={"error": "slow down"})
    if scenario == "unreachable":
        return httpx.ConnectError("connection refused")
    if scenario == "malformed":
        return httpx.Response(200, json={"unexpected": "shape"})
    raise ValueError(f"not a fault scenario: {scenario}")


def mock(route, scenario: str, ok: httpx.Response, empty: httpx.Response, auth=None) -> None:
    """Point a respx route at the response for `scenario`."""
    if scenario == "ok":
        route.mock(return_value=ok)
    elif scenario == "empty":
        route.mock(return_value=empty)
    else:
        outcome = fault(scenario, auth)
        if isinstance(outcome, Exception):
            route.mock(side_effect=outcome)
        else:
            route.mock(return_value=outcome)
