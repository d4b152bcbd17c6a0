"""The OpenAPI schema holds: schemathesis calls every endpoint with generated valid and
invalid requests against a live server on a scripted model; no 5xx, and every answer
fits the schema (status codes, content types, bodies).

(Schemathesis' pytest plugin does not work with pytest 9 yet, so the operations are
driven with Hypothesis directly.)
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from server_support import cot_llm, live_server

pytestmark = [pytest.mark.server, pytest.mark.slow]

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
EXAMPLES = 25  # per operation and generation mode


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    data = tmp_path_factory.mktemp("schemathesis")
    with live_server(data, cot_llm(), queue_size=1000, workers=4) as (srv, _):
        yield srv


@pytest.fixture(scope="module")
def api_schema(server):
    return schemathesis.openapi.from_url(f"{server.url}/openapi.json")


def _operations():
    # the operation list is known statically; the live schema is fetched per test
    return [
        ("POST", "/v1/checks"), ("GET", "/v1/checks"), ("GET", "/v1/checks/{job_id}"),
        ("DELETE", "/v1/checks/{job_id}"), ("POST", "/v1/checks/{job_id}/rerun"),
        ("GET", "/v1/checks/{job_id}/events"), ("GET", "/v1/methods"), ("GET", "/v1/sources"),
        ("GET", "/healthz"), ("GET", "/readyz"),
    ]  # fmt: skip


def test_the_schema_lists_every_operation(api_schema):
    found = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert found == set(_operations())


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize(("method", "path"), _operations())
def test_every_endpoint_keeps_to_its_schema(api_schema, server, method, path, mode):
    operation = api_schema[path][method]
    if mode == GenerationMode.NEGATIVE and path in ("/healthz", "/readyz"):
        pytest.skip("no parameters or body to make invalid")

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case):
        case.call_and_validate(base_url=server.url, checks=CHECKS)

    run()
