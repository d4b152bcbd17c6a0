"""A live server takes a post's replies in the shapes `check --file`, the Python API and
`veracity batch` take: text alone, or objects with ``text`` and an optional ``id``."""

from __future__ import annotations

import pytest
from server_support import POST, THREAD, cot_llm, live_server, wait_status

pytestmark = pytest.mark.server


def test_replies_as_text_or_objects_without_ids_are_checked_and_stored(tmp_path):
    texts = list(THREAD)
    replies = [texts[0], {"text": texts[1], "author": "@ann"}, *texts[2:]]
    body = {"input": {"kind": "post", "text": POST, "replies": replies}, "method": "cot"}
    with live_server(tmp_path, cot_llm()) as (_, client):
        resp = client.post("/v1/checks", json=body)
        assert resp.status_code == 202, resp.text
        job = wait_status(client, resp.json()["id"], "done")
    stored = job["request"]["input"]["replies"]
    assert [r["id"] for r in stored] == [f"r{i}" for i in range(1, len(texts) + 1)]
    assert [r["text"] for r in stored] == texts and stored[1]["author"] == "@ann"
    assert job["verdict"]["label"]
