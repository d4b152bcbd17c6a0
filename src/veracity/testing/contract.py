"""The contract every evidence source passes, as a reusable pytest suite.

Subclass `SourceContract` in a test module, set the class attributes that describe your
fixture results, and override the `make_source` fixture. The fixture returns a factory:
``make(scenario) -> Source`` builds a source whose next searches behave as `scenario`
says. Scenarios:

- ``"ok"``: results come back. The fixture results must let the suite check the rules:
  when `cutoff` is set, some results are dated before it and some on or after it; when
  `include_domain` / `exclude_domain` are set, some results are on that domain and some
  are not.
- ``"empty"``: the service honestly found nothing (the source returns ``[]``).
- ``"auth"``, ``"rate_limited"``, ``"unreachable"``, ``"malformed"``: the service rejects the
  credentials, answers 429 (even after retries), cannot be reached or times out, or
  answers with a body that is not what its API promises. The source must raise the
  matching typed `SourceError`; a silent ``[]`` fails the suite.

Scenarios a source cannot meet (an offline corpus has no credentials) go in
`unsupported`; their tests are skipped with that reason.

An HTTP source mocks the service with respx inside its fixture (the ``respx_mock``
fixture stays active for the whole test) and puts its cache under ``tmp_path`` (use
`http_client_for_tests`), so the suite can scan the cache files for the API key.
Example (``mock`` and ``body`` are the helpers in tests/contract/http_fixtures.py)::

    class TestBraveContract(SourceContract):
        query = Query(text="moon landing")
        cutoff = datetime.date(2020, 1, 1)
        include_domain = "nasa.gov"
        exclude_domain = "example.com"
        secret = "brave-test-key-123"

        @pytest.fixture
        def make_source(self, respx_mock, tmp_path):
            def make(scenario):
                route = respx_mock.get(BraveSearchSource.endpoint)
                mock(route, scenario,
                     ok=httpx.Response(200, json=body("brave/web_search.json")),
                     empty=httpx.Response(200, json=body("brave/web_search_empty.json")),
                     auth=httpx.Response(422, json=body("brave/error_token_invalid.json")))
                return BraveSearchSource(api_key=self.secret,
                                         http=http_client_for_tests(tmp_path))
            return make

A source that needs no HTTP (a local index) ignores respx; scenarios that cannot happen
go in `unsupported`::

    class TestLocalContract(SourceContract):
        query = Query(text="vitamin D")
        cutoff = datetime.date(2015, 1, 1)
        include_domain = "example.org"
        exclude_domain = "example.net"
        unsupported = frozenset({"auth", "rate_limited"})

        @pytest.fixture
        def make_source(self, tmp_path):
            def make(scenario):
                if scenario == "unreachable":
                    return LocalCorpus.load(tmp_path / "missing-index")
                if scenario == "malformed":
                    (tmp_path / "bad").write_text("not an index")
                    return LocalCorpus.load(tmp_path / "bad")
                return build_small_corpus(tmp_path, empty=scenario == "empty")
            return make

tests/contract/test_inmemory_contract.py is a complete example without HTTP.

Loading may raise the typed error before any search; the suite accepts an error raised
either when the factory builds the source or when it searches.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar, Literal

import pytest

from veracity.core import context
from veracity.core.types import Document
from veracity.retrieval.base import (
    Query,
    Source,
    SourceAuthError,
    SourceBadResponse,
    SourceError,
    SourceRateLimited,
    SourceUnreachable,
    domain_matches,
)

Scenario = Literal["ok", "empty", "auth", "rate_limited", "unreachable", "malformed"]
MakeSource = Callable[[Scenario], Source]

FAULTS: dict[str, type[SourceError]] = {
    "auth": SourceAuthError,
    "rate_limited": SourceRateLimited,
    "unreachable": SourceUnreachable,
    "malformed": SourceBadResponse,
}


def http_client_for_tests(
    cache_dir: Path, cache_mode: str = "auto", max_attempts: int = 2, **config: object
):
    """An `HttpClient` for tests: no retry delay, no rate limits, cache under `cache_dir`."""
    from veracity.retrieval.transport.http import HttpClient, HttpConfig

    return HttpClient(
        HttpConfig(
            cache_mode=cache_mode,
            cache_path=Path(cache_dir) / "http.sqlite",
            max_attempts=max_attempts,
            base_delay_s=0.0,
            rate_limits={},
            **config,
        )
    )


def _on(doc: Document, domain: str) -> bool:
    return domain_matches(doc.domain, (domain,))


def _skip_unless(cls: type[SourceContract], scenario: str) -> None:
    if scenario in cls.unsupported:
        pytest.skip(f"{cls.__name__}: scenario {scenario!r} does not apply to this source")


class SourceContract:
    """Base class of the source contract suite (pytest collects subclasses named Test*).

    Attributes:
        query: a query that the ``"ok"`` fixture answers with several results.
        cutoff: a date that splits the ``"ok"`` results (some before, some on/after);
            None when the source's results are never dated.
        include_domain: a domain some (not all) ``"ok"`` results are on; None if the
            source cannot be given domain rules (then the test is skipped).
        exclude_domain: a domain some (not all) ``"ok"`` results are on.
        secret: the API key the factory configures; None for sources without keys.
        unsupported: scenarios that cannot occur for this source.
    """

    query: ClassVar[Query]
    cutoff: ClassVar[_dt.date | None] = None
    include_domain: ClassVar[str | None] = None
    exclude_domain: ClassVar[str | None] = None
    secret: ClassVar[str | None] = None
    unsupported: ClassVar[frozenset[str]] = frozenset()

    @pytest.fixture
    def make_source(self) -> MakeSource:
        """Override in the subclass: return ``make(scenario) -> Source``."""
        raise NotImplementedError(f"{type(self).__name__} must override the make_source fixture")

    # ------------------------------------------------------------------ helpers

    async def _search(self, make_source: MakeSource, query: Query) -> list[Document]:
        source = make_source("ok")
        return await source.search(query)

    def _variant(self, **changes: object) -> Query:
        return self.query.model_copy(update=changes)

    # ------------------------------------------------------------------ shape

    async def test_is_a_source(self, make_source: MakeSource) -> None:
        source = make_source("ok")
        assert isinstance(source, Source)
        assert isinstance(source.name, str) and source.name
        assert isinstance(source.kind, str) and source.kind

    async def test_shape(self, make_source: MakeSource) -> None:
        docs = await self._search(make_source, self.query)
        assert isinstance(docs, list)
        assert docs, "the 'ok' scenario must yield results"
        assert len(docs) <= self.query.top_k
        for doc in docs:
            assert isinstance(doc, Document)
            assert doc.id.strip(), doc
            assert doc.text.strip(), f"document {doc.id} has no text"
            assert doc.source and doc.source != "unknown", f"document {doc.id} has no source"
        assert len({d.id for d in docs}) == len(docs), "document ids must be unique"

    async def test_top_k(self, make_source: MakeSource) -> None:
        docs = await self._search(make_source, self._variant(top_k=1))
        assert len(docs) == 1

    async def test_empty_is_empty_list(self, make_source: MakeSource) -> None:
        _skip_unless(type(self), "empty")
        assert await make_source("empty").search(self.query) == []

    async def test_managed_records_search(self, make_source: MakeSource) -> None:
        from veracity.retrieval.managed import ManagedSource

        source = make_source("ok")
        with context.check_context() as ctx:
            docs = await ManagedSource(source).search(self.query)
        events = [e for e in ctx.trace.of_kind("search") if e.name == source.name]
        assert events, "no search event recorded"
        assert events[-1].data["results"] == [{"id": d.id, "url": d.url} for d in docs]
        assert ctx.usage.searches >= 1

    # ------------------------------------------------------------------ rules

    async def test_cutoff(self, make_source: MakeSource) -> None:
        if self.cutoff is None:
            pytest.skip("this source's results carry no publication date")
        everything = await self._search(make_source, self._variant(top_k=1000))
        dates = [d.published_at.date() for d in everything if d.published_at]
        assert any(d >= self.cutoff for d in dates), "fixture needs results on/after the cutoff"
        assert any(d < self.cutoff for d in dates), "fixture needs results before the cutoff"
        kept = await self._search(make_source, self._variant(top_k=1000, before=self.cutoff))
        assert kept, "results before the cutoff were lost"
        for doc in kept:
            if doc.published_at is not None:
                assert doc.published_at.date() < self.cutoff, doc
        strict = self._variant(top_k=1000, before=self.cutoff, drop_undated=True)
        for doc in await self._search(make_source, strict):
            assert doc.published_at is not None and doc.published_at.date() < self.cutoff

    async def test_include_domain(self, make_source: MakeSource) -> None:
        if self.include_domain is None:
            pytest.skip("no include_domain for this source")
        domain = self.include_domain
        everything = await self._search(make_source, self._variant(top_k=1000))
        assert any(not _on(d, domain) for d in everything), "fixture needs other domains too"
        kept = await self._search(make_source, self._variant(top_k=1000, include_domains=(domain,)))
        assert kept, f"results on {domain} were lost"
        for doc in kept:
            assert _on(doc, domain), f"{doc.url} is not on {domain}"

    async def test_exclude_domain(self, make_source: MakeSource) -> None:
        if self.exclude_domain is None:
            pytest.skip("no exclude_domain for this source")
        domain = self.exclude_domain
        everything = await self._search(make_source, self._variant(top_k=1000))
        assert any(_on(d, domain) for d in everything), f"fixture needs results on {domain}"
        kept = await self._search(make_source, self._variant(top_k=1000, exclude_domains=(domain,)))
        for doc in kept:
            assert not _on(doc, domain), f"{doc.url} is on excluded {domain}"

    # ------------------------------------------------------------------ faults

    @pytest.mark.parametrize("scenario", sorted(FAULTS))
    async def test_typed_error(self, make_source: MakeSource, scenario: Scenario) -> None:
        _skip_unless(type(self), scenario)
        expected = FAULTS[scenario]
        with pytest.raises(expected):
            source = make_source(scenario)
            result = await source.search(self.query)
            pytest.fail(f"scenario {scenario!r} returned {result!r} instead of raising")

    # ------------------------------------------------------------------ secrets

    async def test_secret_never_leaks(
        self,
        make_source: MakeSource,
        caplog: pytest.LogCaptureFixture,
        tmp_path: Path,
    ) -> None:
        if self.secret is None:
            pytest.skip("this source uses no API key")
        caplog.set_level(logging.DEBUG)
        errors: list[str] = []
        with context.check_context() as ctx:
            source = make_source("ok")
            assert self.secret not in repr(source)
            await source.search(self.query)
            for scenario in sorted(FAULTS):
                if scenario in type(self).unsupported:
                    continue
                try:
                    await make_source(scenario).search(self.query)
                except SourceError as exc:
                    errors.append(f"{exc!r} {exc}")
        assert self.secret not in caplog.text, "API key written to the log"
        assert self.secret not in ctx.trace.model_dump_json(), "API key in the trace"
        for message in errors:
            assert self.secret not in message, "API key in an error message"
        for path in tmp_path.rglob("*"):
            if path.is_file():
                assert self.secret.encode() not in path.read_bytes(), f"API key stored in {path}"


__all__ = ["FAULTS", "MakeSource", "Scenario", "SourceContract", "http_client_for_tests"]
