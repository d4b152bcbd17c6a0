"""The contract suite itself: it must fail sources that break the contract."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

BROKEN_SOURCES = '''
import datetime as dt
import logging

import pytest

from veracity.retrieval.base import Query
from veracity.testing.contract import SourceContract
from veracity.core.types import Document

SECRET = "leaky-secret-key-123"
DOCS = [
    Document(id=f"d{i}", text="moon text", source="broken", url=f"https://{d}/x{i}",
             published_at=dt.datetime(y, 1, 1, tzinfo=dt.timezone.utc))
    for i, (d, y) in enumerate([("nasa.gov", 2010), ("example.com", 2022), ("example.org", 2015)])
]


class Broken:
    """Ignores cutoff and domain rules, swallows faults into [] and logs its key."""

    name = "broken"
    kind = "test"

    def __init__(self, scenario):
        self.scenario = scenario

    async def search(self, query):
        logging.getLogger("broken").info("calling with key=%s", SECRET)
        if self.scenario != "ok":
            return []
        return list(DOCS)


class TestBrokenContract(SourceContract):
    query = Query(text="moon")
    cutoff = dt.date(2020, 1, 1)
    include_domain = "nasa.gov"
    exclude_domain = "example.com"
    secret = SECRET

    @pytest.fixture
    def make_source(self):
        return Broken
'''


def test_contract_fails_a_broken_source(pytester: pytest.Pytester):
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    pytester.makepyfile(test_broken=BROKEN_SOURCES)
    result = pytester.runpytest("-p", "asyncio", "-q")
    outcomes = result.parseoutcomes()
    failed = {
        line.split("::")[-1].split(" ")[0] for line in result.outlines if line.startswith("FAILED")
    }
    assert {
        "test_cutoff",
        "test_top_k",
        "test_include_domain",
        "test_exclude_domain",
        "test_secret_never_leaks",
        "test_typed_error[auth]",
        "test_typed_error[malformed]",
        "test_typed_error[rate_limited]",
        "test_typed_error[unreachable]",
    } <= failed, result.outlines
    assert outcomes["failed"] == len(failed)
    # shape, top_k and the honest empty answer are not faults of this source
    assert "test_shape" not in failed and "test_empty_is_empty_list" not in failed
