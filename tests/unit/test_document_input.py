"""A document is an input kind checked by a composite method over a claim method (issue 39,
item 3): `read_input` reads it, `Veracity.plan`/`check` and `veracity.check` take it like any
input, and its verdict is a `DocumentVerdict` whose typed payload is the report, each claim's
check (its verdict and trace) nested under that claim."""

from __future__ import annotations

import asyncio
import json

import pytest

import veracity
from veracity.core.config import RunConfig
from veracity.core.errors import InputError
from veracity.core.labels import get_label_space
from veracity.core.types import Claim, Document
from veracity.documents import DocumentChecker, DocumentText
from veracity.documents.report import DocumentVerdict, label_at
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import documents
from veracity.runtime.home import home_paths
from veracity.runtime.inputs import read_input
from veracity.runtime.service import CheckRefused, Veracity
from veracity.testing import ScriptedLLM

TEXT = "Marie Curie was born in Warsaw in 1867. She won three Nobel Prizes. I love her story."
PASSAGES = [
    Document(id="p1", title="Marie Curie", text="Marie Curie was born in Warsaw in 1867."),
    Document(id="p2", title="Nobel Prizes", text="Curie won two Nobel Prizes, in 1903 and 1911."),
]
SOURCES = {"corpus": {"type": "local", "index": "curie", "mode": "bm25"}}
NO_SPLIT = {"decompose": False, "decontextualise": False}


@pytest.fixture
def corpus():
    build_local_corpus("curie", PASSAGES, mode="bm25", indexes_dir=home_paths().indexes)


def scripted() -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(
        ".*", json.dumps({"claims": ["factual", "factual", "opinion"]}), tag="claims:checkworthy"
    )
    llm.on("three Nobel", '{"cited": [1], "label": "false"}', tag="rag")
    llm.on(".*", '{"cited": [1], "label": "true"}', tag="rag")
    return llm


def test_a_document_is_read_as_an_input_kind():
    as_text = read_input("  Curie won two Nobel Prizes.  ", "document")
    as_mapping = read_input({"kind": "document", "text": "Curie won.", "title": "Curie"})
    assert isinstance(as_text, DocumentText) and as_text.kind == "document"
    assert (as_mapping.kind, as_mapping.title, as_mapping.content) == (
        "document",
        "Curie",
        "Curie won.",
    )
    assert read_input(as_mapping) is as_mapping
    with pytest.raises(InputError, match="empty"):
        read_input("  \n ", "document")
    with pytest.raises(InputError, match="not a valid document"):
        read_input({"kind": "document", "text": "x", "pages": 3})


async def test_a_document_takes_the_road_of_every_input_and_its_verdict_nests_the_claims(
    corpus, builds
):
    llm = scripted()
    async with Veracity(RunConfig(sources=SOURCES), llm=llm) as service:
        plan = service.plan(TEXT, kind="document", extraction=NO_SPLIT)
        verdict = await plan.check()
        claim_plan = service.plan("Marie Curie was born in Warsaw.", method="rag")
    # the spec's method stays the claim method: a claim check on it shares the run
    assert claim_plan.run is plan.run and len(builds) == 1
    assert isinstance(verdict, DocumentVerdict) and isinstance(plan.method, DocumentChecker)
    report = verdict.report
    assert (verdict.method, verdict.label_space) == ("rag", plan.run.method.label_space.name)
    # one of two check-worthy claims supported: factuality 0.5, the space's label for it
    assert verdict.score == report.summary.factuality == 0.5
    assert verdict.label == label_at(get_label_space(verdict.label_space), 0.5)
    # the document's own trace: its extraction and the claims' progress, no claim's calls
    kinds = [e.kind for e in verdict.trace.events]
    assert "claims_found" in kinds and kinds.count("claim_checked") == 3
    assert not [e for e in verdict.trace.events if e.kind == "llm_call" and e.name == "rag"]
    # each checked claim keeps its own trace, with its own model call, under it
    checked = [o for o in report.claims if o.status == "checked"]
    assert len(checked) == 2
    for outcome in checked:
        calls = [e for e in outcome.verdict.trace.events if e.kind == "llm_call"]
        assert [e.name for e in calls] == ["rag"]
    # the claims' usage is counted in the document's
    assert verdict.usage.llm_calls == len(llm.calls) == report.usage.llm_calls


async def test_the_composite_hands_any_other_input_to_its_claim_method(corpus):
    async with Veracity(RunConfig(sources=SOURCES), llm=scripted()) as service:
        plan = service.plan(TEXT, kind="document", extraction=NO_SPLIT)
        claim = await plan.method.check(Claim(text="Marie Curie was born in Warsaw."))
    assert not isinstance(claim, DocumentVerdict) and claim.label == "true"
    assert plan.method.input_kinds[0] == "document" and "claim" in plan.method.input_kinds


def test_document_options_on_a_claim_are_refused(builds):
    service = Veracity(RunConfig(sources=SOURCES), llm=scripted())
    with service, pytest.raises(CheckRefused) as caught:
        service.plan("Curie won two prizes.", corrections=True)
    assert caught.value.title == documents.OPTIONS_REFUSED and builds == []


def test_a_document_with_no_checkworthy_claim_abstains(corpus):
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"claims": ["opinion"]}), tag="claims:checkworthy")
    verdict = veracity.check(
        "I love her story.", kind="document", llm=llm, sources=SOURCES, extraction=NO_SPLIT
    )
    assert isinstance(verdict, DocumentVerdict)
    assert verdict.label is None and verdict.abstained and verdict.score is None
    assert verdict.report.summary.not_checkworthy == 1


def test_a_label_for_a_score_is_the_band_or_the_nearest_label():
    assert label_at(get_label_space("true_false"), 0.5) == "false"  # a tie: the less true
    assert label_at(get_label_space("true_false"), 0.75) == "true"


def window_reply(*items: tuple[int, str, str]) -> str:
    claims = [{"sentences": [n], "text": t, "category": c} for n, t, c in items]
    return json.dumps({"claims": claims})


async def test_claims_are_checked_while_later_windows_are_extracted(corpus):
    """The first window's claims are under way before the second window's reply is in
    (issue 42, item 2); each `ClaimsFound` lists every claim found so far."""
    text = TEXT.replace("I love her story.", "Pierre Curie was born in Paris. I love her story.")
    llm = scripted()
    llm.on(".*", window_reply((1, "Marie Curie was born in Warsaw in 1867.", "factual"),
                              (2, "She won three Nobel Prizes.", "factual")),
           tag="claims:window:0")  # fmt: skip
    llm.on(".*", window_reply((1, "Pierre Curie was born in Paris.", "factual"),
                              (2, "I love her story.", "opinion")),
           tag="claims:window:1")  # fmt: skip
    first_check, early, real = asyncio.Event(), [], llm.complete

    async def complete(request):
        if request.tag == "claims:window:1":  # held until a claim's check has begun
            try:
                await asyncio.wait_for(first_check.wait(), 2)
                early.append(True)
            except TimeoutError:
                early.append(False)
        elif request.tag.startswith("rag"):
            first_check.set()
        return await real(request)

    llm.complete = complete
    window = {"mode": "window", "sentences_per_call": 2}
    async with Veracity(RunConfig(sources=SOURCES), llm=llm) as service:
        verdict = await service.check(text, kind="document", extraction=window)
    assert early == [True]
    report = verdict.report
    assert [(o.claim.id, o.status, o.support) for o in report.claims] == [
        ("c1", "checked", "supported"),
        ("c2", "checked", "refuted"),
        ("c3", "checked", "supported"),
        ("c4", "not_checkworthy", None),
    ]
    found = [e for e in verdict.trace.events if e.kind == "claims_found"]
    assert [e.count for e in found] == [2, 4]
    assert [c["id"] for c in found[-1].claims] == ["c1", "c2", "c3", "c4"]
    assert report.sentences == 4 and report.summary.factuality == pytest.approx(2 / 3)


async def test_a_claim_that_recurs_in_a_batch_takes_its_first_verdict(corpus):
    """Two documents checked at once by one composite (the rows of a batch) share a claim:
    it is checked once, and the other document's outcome reuses that verdict, counted and
    costing nothing (issue 42, item 2)."""
    llm = scripted()
    rules_only = {**NO_SPLIT, "checkworthiness": False}
    async with Veracity(RunConfig(sources=SOURCES), llm=llm) as service:
        plan = service.plan("(each row)", kind="document", extraction=rules_only)
        rows = [
            "Marie Curie was born in Warsaw in 1867. She won three Nobel Prizes.",
            "She won three Nobel Prizes. Pierre Curie was born in Paris.",
        ]
        verdicts = await asyncio.gather(
            *(plan.run.check(DocumentText(text=row), plan.method) for row in rows)
        )
    reports = [v.report for v in verdicts]
    assert len(llm.calls_tagged("rag")) == 3  # four claims, one of them twice
    assert sum(r.summary.reused for r in reports) == 1
    reused = [o for r in reports for o in r.claims if o.reused]
    assert [o.claim.text for o in reused] == ["She won three Nobel Prizes."]
    assert reused[0].support == "refuted" and reused[0].verdict.usage.llm_calls == 0
    assert sum(r.usage.llm_calls for r in reports) == 3  # the reuse is not counted twice


async def test_a_claim_whose_check_failed_is_checked_again_when_it_recurs(corpus):
    """A recorded fault (the model's replies stayed invalid) is not the claim's verdict: the
    next row with the same claim checks it again instead of taking the failure."""
    failing = {"on": True}
    llm = ScriptedLLM()
    llm.on(lambda r: failing["on"] and "three Nobel" in str(r.messages), "not json", tag="rag")
    llm.on("three Nobel", '{"cited": [1], "label": "false"}', tag="rag")
    llm.on(".*", '{"cited": [1], "label": "true"}', tag="rag")
    rules_only = {**NO_SPLIT, "checkworthiness": False}
    async with Veracity(RunConfig(sources=SOURCES), llm=llm) as service:
        plan = service.plan("(each row)", kind="document", extraction=rules_only)
        first = await plan.run.check(DocumentText(text="She won three Nobel Prizes."), plan.method)
        failing["on"] = False
        again = await plan.run.check(DocumentText(text="She won three Nobel Prizes."), plan.method)
    (failed,) = first.report.claims
    assert failed.verdict is not None and failed.verdict.error is not None
    (checked,) = again.report.claims
    assert not checked.reused and checked.support == "refuted"
    assert again.report.summary.reused == 0
