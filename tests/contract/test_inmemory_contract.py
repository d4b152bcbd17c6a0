"""The source contract run on the in-memory test double (a source with no HTTP)."""

from __future__ import annotations

import datetime as dt

import pytest

from veracity.core.types import Document
from veracity.retrieval.base import (
    Query,
    SourceAuthError,
    SourceBadResponse,
    SourceRateLimited,
    SourceUnreachable,
)
from veracity.testing import InMemorySource
from veracity.testing.contract import SourceContract

_DOCS = [
    Document(
        id=f"d{i}",
        text=f"Lunar samples note {i}: the moon rocks were studied in lab {i}.",
        title=f"Moon rocks {i}",
        url=f"https://{domain}/moon/{i}",
        source="memory",
        published_at=dt.datetime(year, 6, 1, tzinfo=dt.timezone.utc),
    )
    for i, (domain, year) in enumerate(
        [
            ("nasa.gov", 2012),
            ("news.example.com", 2019),
            ("blog.example.org", 2021),
            ("nasa.gov", 2023),
        ]
    )
]

_FAULTS = {
    "auth": SourceAuthError("memory", "rejected key"),
    "rate_limited": SourceRateLimited("memory", "slow down", retry_after=1.0),
    "unreachable": SourceUnreachable("memory", "down"),
    "malformed": SourceBadResponse("memory", "garbled"),
}


class TestInMemoryContract(SourceContract):
    query = Query(text="moon rocks")
    cutoff = dt.date(2020, 1, 1)
    include_domain = "nasa.gov"
    exclude_domain = "example.com"

    @pytest.fixture
    def make_source(self):
        def make(scenario):
            if scenario == "empty":
                return InMemorySource([])
            return InMemorySource(_DOCS, fail_with=_FAULTS.get(scenario))

        return make
