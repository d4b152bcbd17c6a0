"""Credentials in a base URL's user info and query string: redacted wherever text leaves
the process, kept for the connection, and the request URL built around the query."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import httpx
import pytest
import respx

from veracity.core.redaction import (
    REDACTED,
    RedactingFilter,
    join_path,
    query_secrets,
    split_credentials,
    strip_credentials,
)
from veracity.core.trace import Trace
from veracity.evaluation.store import redact
from veracity.llm.base import LLMAuthError, LLMRequest, user
from veracity.llm.cache import ResponseCache
from veracity.llm.client import ManagedLLM
from veracity.llm.openai_compat import OpenAICompatLLM
from veracity.retrieval.transport.netsafe import redact_url

DATA = Path(__file__).parents[1] / "data" / "openai"
KEY = "QK-unit-secret-5150"


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"https://h.test/v1?key={KEY}", f"https://h.test/v1?key={REDACTED}"),
        (f"https://h.test/v1?API_KEY={KEY}&v=2", f"https://h.test/v1?API_KEY={REDACTED}&v=2"),
        (f"https://h.test/v1?v=2&token={KEY}#top", f"https://h.test/v1?v=2&token={REDACTED}#top"),
        (f"error: h.test/?access_token={KEY} (m)", f"error: h.test/?access_token={REDACTED} (m)"),
        (f'"url": "https://h.test/?api-key={KEY}"', f'"url": "https://h.test/?api-key={REDACTED}"'),
        (f"http://ann:{KEY}@h.test/v1?key={KEY}", f"http://h.test/v1?key={REDACTED}"),
        ("https://h.test/search?q=monkey&keys=3", "https://h.test/search?q=monkey&keys=3"),
        ("no url at all, key=value", "no url at all, key=value"),
    ],
)  # fmt: skip
def test_strip_credentials_redacts_secret_query_values(text, expected):
    assert strip_credentials(text) == expected


def test_join_path_keeps_the_query_at_the_end():
    assert join_path(f"https://h.test/v1?key={KEY}", "chat/completions") == (
        f"https://h.test/v1/chat/completions?key={KEY}"
    )
    assert join_path("https://h.test/v1/", "/models") == "https://h.test/v1/models"
    assert join_path("http://h.test:8080", "models") == "http://h.test:8080/models"


def test_query_secrets_and_the_other_redactors_share_one_list():
    url = f"https://h.test/v1?api-version=2024&key={KEY}&Token=t0ken-value"
    assert query_secrets(url) == [KEY, "t0ken-value"]
    assert KEY not in redact_url(url) and "api-version=2024" in redact_url(url)
    assert split_credentials(url) == (url, None)  # the connection keeps what it needs


def test_the_log_filter_redacts_messages_and_url_arguments(caplog):
    log = logging.getLogger("veracity.test.redaction")
    log.addFilter(RedactingFilter())
    with caplog.at_level(logging.INFO, logger="veracity.test.redaction"):
        log.info("HTTP Request: %s %s", "POST", httpx.URL(f"https://h.test/v1?key={KEY}"))
        log.info(f"calling https://h.test/v1?token={KEY}")
    assert KEY not in caplog.text and caplog.text.count(REDACTED) == 2


def test_stored_configs_and_trace_events_lose_the_query_secret():
    config = {"llm": {"base_url": f"https://h.test/v1?key={KEY}", "api_key_env": "MY_KEY"}}
    assert redact(config) == {
        "llm": {"base_url": f"https://h.test/v1?key={REDACTED}", "api_key_env": "MY_KEY"}
    }
    trace = Trace()
    trace.add("error", "llm", error=f"cannot reach https://h.test/v1?api_key={KEY}")
    assert KEY not in trace.model_dump_json()


def _completion() -> dict:
    return json.loads((DATA / "chat_completion_logprobs.json").read_text())


@respx.mock
async def test_the_request_url_is_built_around_the_query_and_nothing_shows_the_key(tmp_path):
    route = respx.post(f"https://h.test/v1/chat/completions?key={KEY}&api-version=2")
    route.mock(return_value=httpx.Response(200, json=_completion()))
    inner = OpenAICompatLLM("m", base_url=f"https://h.test/v1/?key={KEY}&api-version=2")
    assert inner.base_url == f"https://h.test/v1?key={REDACTED}&api-version=2"
    assert KEY not in inner.backend_id and KEY not in repr(inner)
    cache = ResponseCache(tmp_path / "llm.sqlite")
    llm = ManagedLLM(inner, cache=cache)
    await llm.complete(LLMRequest(messages=[user("Is it true?")], temperature=0))
    assert route.call_count == 1
    cache.close()
    assert KEY.encode() not in (tmp_path / "llm.sqlite").read_bytes()


@respx.mock
async def test_an_error_names_the_endpoint_without_its_key():
    echo = {"error": {"message": f"bad key {KEY}"}}
    respx.post(f"https://h.test/v1/chat/completions?api_key={KEY}").mock(
        return_value=httpx.Response(401, json=echo)
    )
    llm = OpenAICompatLLM("m", base_url=f"https://h.test/v1?api_key={KEY}", api_key="")
    with pytest.raises(LLMAuthError) as err:
        await llm.complete(LLMRequest(messages=[user("x")]))
    assert KEY not in str(err.value) and f"api_key={REDACTED}" in str(err.value)
