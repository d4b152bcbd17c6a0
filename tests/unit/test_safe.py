"""SAFE on a scripted model: atomic facts, a fixed number of searches each, a rating per
fact, and the conjunction as the verdict."""

import json

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.base import MethodConfigError
from veracity.methods.safe import SafeMethod
from veracity.retrieval.base import SourceUnreachable
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="curie", title="Marie Curie", text="Marie Curie was born in Warsaw in 1867."),
    Document(id="nobel", title="Nobel", text="Curie won the Nobel Prize in 1903 and 1911."),
]
CLAIM = Claim(text="Marie Curie, born in Paris, won two Nobel Prizes.")


def claims(*items):
    return json.dumps({"claims": list(items)})


def rating(value, alternatives=None):
    text = json.dumps({"reasoning": "The results settle it.", "rating": value})
    return ScriptedReply(text, alternatives=alternatives, at=f'{value}"')


FIRST = rating("NOT_SUPPORTED", {"NOT_SUPPORTED": 0.8, "SUPPORTED": 0.2})


def scripted(first=FIRST, second=None):
    llm = ScriptedLLM()
    facts = ("Marie Curie was born in Paris.", "Marie Curie won two Nobel Prizes.")
    llm.on(".*", claims(*facts), tag="safe:facts:decompose")
    llm.on(".*", claims(*facts), tag="safe:facts:decontextualise")
    llm.on(".*", first, tag="safe:c1:rate")
    llm.on(".*", second or rating("SUPPORTED"), tag="safe:c2:rate")
    llm.on(".*", json.dumps({"query": "Marie Curie birthplace"}), tag="safe:c1")
    llm.on(".*", json.dumps({"query": "Curie Nobel Prize"}), tag="safe:c2")
    return llm


def safe(llm, docs=DOCS, **config):
    return SafeMethod(llm=llm, config=config, sources={"web": InMemorySource(docs, name="web")})


async def test_each_fact_is_searched_then_rated_and_one_false_fact_makes_it_false():
    llm = scripted()
    verdict = await safe(llm, max_searches=2).check(CLAIM)
    assert verdict.label == "false" and verdict.error is None
    facts = verdict.metadata["facts"]
    assert [(f["id"], f["rating"]) for f in facts] == [("c1", "NOT_SUPPORTED"), ("c2", "SUPPORTED")]
    assert facts[0]["queries"] == ["Marie Curie birthplace", "Marie Curie birthplace"]
    assert facts[0]["p_supported"] == pytest.approx(0.2)
    assert facts[0]["spans"] == [(0, len(CLAIM.text))]  # the one sentence it came from
    assert verdict.score == pytest.approx(0.5) and verdict.metadata["factuality"] == 0.5
    # 2 extraction calls, 2 x (2 queries + 1 rating); 2 searches per fact
    assert verdict.usage.llm_calls == 8 and verdict.usage.searches == 4
    # the second query sees the first search's results, fenced; the rating sees both
    second = llm.calls_tagged("safe:c1:query2")[0].messages[-1].content
    assert '<knowledge id="1">' in second and "born in Warsaw" in second
    rate = llm.calls_tagged("safe:c1:rate")[0].messages[-1].content
    assert '<knowledge id="2">' in rate and "Marie Curie was born in Paris." in rate
    assert verdict.rationale.startswith("Marie Curie was born in Paris.")  # the false fact
    calls = [e.data for e in verdict.trace.events if e.kind == "tool_call"]
    assert [(c["fact"], c["step"]) for c in calls] == [("c1", 1), ("c1", 2), ("c2", 1), ("c2", 2)]
    assert {e.document.id for e in verdict.evidence} == {"curie", "nobel"}


async def test_shared_layout_lets_the_rating_extend_the_last_search_prompt():
    """prompt_layout: shared (the default): one system note for the check, the statement
    and the results first, the template's system text last; the verdict is the paper's."""
    verdicts, calls = {}, {}
    for layout in ("paper", "shared"):
        llm = scripted()
        verdicts[layout] = await safe(llm, max_searches=2, prompt_layout=layout).check(CLAIM)
        calls[layout] = llm
    assert verdicts["shared"].label == verdicts["paper"].label == "false"
    llm = calls["shared"]
    asked = [*llm.calls_tagged("safe:c1"), *llm.calls_tagged("safe:c2")]
    assert len({c.messages[0].content for c in asked}) == 1  # one system message
    second = llm.calls_tagged("safe:c1:query2")[0].messages[-1].content
    rate = llm.calls_tagged("safe:c1:rate")[0].messages[-1].content
    assert rate.startswith(second[: second.index("</knowledge>")])
    assert rate.index("=== Your role ===") > rate.index("<knowledge")
    paper = calls["paper"].calls_tagged("safe:c1:rate")[0].messages
    assert paper[0].content.startswith("You decide whether a statement is supported")


async def test_every_fact_supported_makes_it_true():
    llm = scripted(first=rating("SUPPORTED"))
    verdict = await safe(llm, max_searches=1).check(CLAIM)
    assert verdict.label == "true" and verdict.score == 1.0


async def test_every_search_failing_is_an_abstention():
    bad = InMemorySource([], name="web", fail_with=SourceUnreachable("web", "down"))
    llm = scripted()
    verdict = await SafeMethod(llm=llm, config={"max_searches": 1}, sources={"web": bad}).check(
        CLAIM
    )
    assert verdict.label is None and "every search failed" in verdict.abstain_reason


def test_safe_needs_a_source():
    with pytest.raises(MethodConfigError, match="needs a source"):
        SafeMethod(llm=ScriptedLLM())
