"""The source contract for RecordedSource, on invented traces in MERMAID's format."""

from __future__ import annotations

from pathlib import Path

import pytest

from veracity.retrieval.base import Query
from veracity.retrieval.recorded.source import RecordedSource
from veracity.testing.contract import SourceContract

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "recorded"


class TestRecordedContract(SourceContract):
    query = Query(text="apollo 11 landing date", top_k=10)
    include_domain = "nasa.gov"
    exclude_domain = "example.com"
    unsupported = frozenset({"auth", "rate_limited"})  # a local recording

    @pytest.fixture
    def make_source(self, tmp_path):
        def make(scenario):
            if scenario == "ok":
                return RecordedSource(path=str(FIXTURES / "demo_gpt-4o.json"))
            if scenario == "empty":
                return RecordedSource(path=str(FIXTURES / "unrelated_gpt-4o.json"))
            if scenario == "unreachable":
                return RecordedSource(path=str(tmp_path / "no-such-folder"))
            if scenario == "malformed":
                bad = tmp_path / "bad_gpt-4o.json"
                bad.write_text('{"not": "a list of records"}')
                return RecordedSource(path=str(bad))
            raise AssertionError(scenario)

        return make
