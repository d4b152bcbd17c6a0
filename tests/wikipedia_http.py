"""Recorded MediaWiki API answers (tests/data/http/wikipedia) for respx-mocked tests."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

DATA = Path(__file__).resolve().parent / "data" / "http" / "wikipedia"
API = "https://en.wikipedia.org/w/api.php"


def answer(name: str) -> httpx.Response:
    """The recorded answer `name` as an HTTP 200 response."""
    return httpx.Response(200, json=json.loads((DATA / name).read_text()))


def dispatch(table):
    """A respx side effect choosing a recorded answer from the request's parameters.

    `table` is a list of (parameter predicate, answer file name); a request no row
    matches fails the test.
    """

    def handler(request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        for predicate, name in table:
            if all(params.get(k) == v for k, v in predicate.items()):
                return answer(name)
        raise AssertionError(f"unexpected request {params}")

    return handler
