"""The single-agent RAG baseline (`rag`)."""

from __future__ import annotations

import datetime as dt

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.base import MethodConfigError, load_method
from veracity.retrieval.guards import EvalGuards, eval_guards
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="d1", title="Vitamin C", text="Vitamin C does not prevent colds in trials."),
    Document(id="d2", title="Zinc", text="Zinc lozenges may shorten colds."),
    Document(
        id="d3",
        title="Late",
        text="Vitamin C colds review published later.",
        url="https://www.factcheck.example/x",
        published_at=dt.datetime(2024, 1, 1),
    ),
]


def _answer(label, cited, alternatives=None):
    return ScriptedReply(
        f'{{"cited": {cited}, "label": "{label}"}}', alternatives=alternatives, at=label
    )


async def test_rag_shows_passages_and_cites_them_as_evidence():
    source = InMemorySource(DOCS)
    llm = ScriptedLLM().queue(_answer("false", [1], {"false": 0.9, "true": 0.1}))
    method = load_method("rag", llm=llm, sources={"mem": source}, config={"top_k": 2})
    verdict = await method.check(Claim(text="Vitamin C prevents colds"))
    assert verdict.label == "false" and verdict.confidence == pytest.approx(0.9)
    assert [e.document.id for e in verdict.evidence] == ["d1"]
    assert verdict.metadata["retrieved"] == ["d1", "d3"]  # the two best matches
    prompt = llm.calls[0].messages[-1].content
    assert '<passage id="1">\nVitamin C: Vitamin C does not prevent colds' in prompt
    assert verdict.usage.searches == 1 and verdict.usage.llm_calls == 1
    assert source.queries[0].top_k == 2


async def test_citations_outside_the_passages_are_re_asked():
    llm = ScriptedLLM().queue(_answer("true", [7]), _answer("true", [2]))
    method = load_method("rag", llm=llm, sources={"mem": InMemorySource(DOCS)})
    verdict = await method.check(Claim(text="Zinc shortens colds"))
    assert len(llm.calls) == 2 and "could not be used" in llm.calls[1].messages[-1].content
    assert verdict.metadata["cited"] == [2]


async def test_evaluation_guards_apply_to_the_query():
    source = InMemorySource(DOCS)
    llm = ScriptedLLM().queue(_answer("false", [1]))
    method = load_method("rag", llm=llm, sources={"mem": source})
    guards = EvalGuards(before=dt.date(2023, 1, 1), exclude_domains=("factcheck.example",))
    with eval_guards(guards):
        verdict = await method.check(Claim(text="Vitamin C prevents colds"))
    q = source.queries[0]
    assert q.before == dt.date(2023, 1, 1) and q.exclude_domains == ("factcheck.example",)
    assert "d3" not in verdict.metadata["retrieved"]


async def test_no_passages_found_still_asks_and_cites_nothing():
    llm = ScriptedLLM().queue(_answer("true", []))
    method = load_method("rag", llm=llm, sources={"mem": InMemorySource([])})
    verdict = await method.check(Claim(text="Something obscure"))
    assert verdict.label == "true" and verdict.evidence == []
    assert "found no passages" in llm.calls[0].messages[-1].content


def test_rag_needs_exactly_one_chosen_source():
    with pytest.raises(MethodConfigError, match="needs a source"):
        load_method("rag", llm=ScriptedLLM())
    two = {"a": InMemorySource([], name="a"), "b": InMemorySource([], name="b")}
    with pytest.raises(MethodConfigError, match="choose one"):
        load_method("rag", llm=ScriptedLLM(), sources=two)
    assert (
        load_method("rag", llm=ScriptedLLM(), sources=two, config={"source": "b"}).source.name
        == "b"
    )


async def test_uncited_passages_are_still_shown_as_retrieved():
    llm = ScriptedLLM().queue(_answer("true", []))
    docs = [Document(id="d1", text="Vitamin C trial results.", title="Trial")]
    method = load_method("rag", llm=llm, sources={"mem": InMemorySource(docs)})
    verdict = await method.check(Claim(text="Vitamin C prevents colds"))
    assert verdict.metadata["cited"] == []
    assert [(e.document.id, e.note) for e in verdict.evidence] == [("d1", "retrieved, not cited")]
