"""``cot`` reasons over evidence when it is given some, and from knowledge when not."""

import json

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.base import MethodConfigError
from veracity.methods.baselines import CoTMethod
from veracity.retrieval.base import SourceUnreachable
from veracity.testing import InMemorySource, ScriptedLLM

DOCS = [
    Document(id="eiffel", title="Eiffel Tower", text="The Eiffel Tower stands in Paris, France."),
    Document(id="berlin", title="Berlin", text="Berlin is the capital of Germany."),
]
WIKI = [Document(id="w1", title="Paris", text="Paris is home to the Eiffel Tower.")]
CLAIM = Claim(text="The Eiffel Tower is in Berlin.")
ANSWER = json.dumps({"reasoning": "Passage 1 places it in Paris.", "label": "false"})


def llm():
    return ScriptedLLM(default=ANSWER)


def prompt(model):
    [call] = model.calls
    return call.messages[0].content, call.messages[-1].content


async def test_without_evidence_or_sources_it_stays_zero_shot():
    model = llm()
    verdict = await CoTMethod(llm=model).check(CLAIM)
    system, user = prompt(model)
    assert "using only what you already know" in system
    assert "<passage" not in user and "what you know about it" in user
    assert verdict.evidence == [] and verdict.usage.searches == 0
    assert "evidence_setting" not in verdict.metadata


async def test_a_claims_own_evidence_is_read_without_searching():
    model, source = llm(), InMemorySource(DOCS, name="web")
    claim = CLAIM.model_copy(update={"evidence": [DOCS[0]]})
    verdict = await CoTMethod(llm=model, sources={"web": source}).check(claim)
    system, user = prompt(model)
    assert "reading the evidence passages" in system
    assert '<passage id="1">\nEiffel Tower: The Eiffel Tower stands in Paris' in user
    assert "over the passages" in user
    assert source.queries == [] and verdict.usage.searches == 0
    assert verdict.metadata["evidence_setting"] == "given"
    assert [e.document.id for e in verdict.evidence] == ["eiffel"]
    assert verdict.label == "false" and verdict.rationale == "Passage 1 places it in Paris."


async def test_given_sources_are_searched_for_the_input():
    model, source = llm(), InMemorySource(DOCS, name="web")
    verdict = await CoTMethod(llm=model, config={"top_k": 1}, sources={"web": source}).check(CLAIM)
    _, user = prompt(model)
    assert [q.text for q in source.queries] == [CLAIM.text] and source.queries[0].top_k == 1
    assert user.count("<passage") == 1 and verdict.usage.searches == 1
    assert verdict.metadata["evidence_setting"] == "retrieved"
    assert len(verdict.evidence) == 1


async def test_several_sources_are_searched_together():
    model = llm()
    sources = {"web": InMemorySource(DOCS, name="web"), "wiki": InMemorySource(WIKI, name="wiki")}
    verdict = await CoTMethod(llm=model, sources=sources).check(CLAIM)
    assert verdict.usage.searches == 2
    assert {e.document.id for e in verdict.evidence} >= {"eiffel", "w1"}


async def test_evidence_none_ignores_sources_and_given_evidence():
    model, source = llm(), InMemorySource(DOCS, name="web")
    claim = CLAIM.model_copy(update={"evidence": [DOCS[0]]})
    method = CoTMethod(llm=model, config={"evidence": "none"}, sources={"web": source})
    verdict = await method.check(claim)
    system, user = prompt(model)
    assert "using only what you already know" in system and "<passage" not in user
    assert source.queries == [] and verdict.evidence == []


async def test_given_without_evidence_is_an_error_and_retrieved_needs_a_source():
    verdict = await CoTMethod(llm=llm(), config={"evidence": "given"}).check(CLAIM)
    assert verdict.label is None and "carries none" in verdict.error
    with pytest.raises(MethodConfigError, match="needs a source"):
        CoTMethod(llm=llm(), config={"evidence": "retrieved"})
    with pytest.raises(MethodConfigError, match="no source named"):
        CoTMethod(llm=llm(), config={"source": "nope"}, sources={"web": InMemorySource(DOCS)})
    assert [n.name for n in CoTMethod.source_needs({"evidence": "retrieved"})] == ["web"]
    assert CoTMethod.source_needs({}) == []  # auto searches only sources it is given


async def test_a_failed_search_is_the_verdicts_error():
    bad = InMemorySource([], name="web", fail_with=SourceUnreachable("web", "down"))
    verdict = await CoTMethod(llm=llm(), sources={"web": bad}).check(CLAIM)
    assert verdict.label is None and "down" in verdict.error
