"""FIRE on a scripted model: verify or search again, until confident or out of steps."""

import json

import pytest

from veracity.core.labels import get_label_space
from veracity.core.types import Claim, Document
from veracity.methods.base import MethodConfigError
from veracity.methods.fire import FireMethod
from veracity.methods.fire.steps import SEARCH, repeats, similarity, step_model, word_overlap
from veracity.nlp.embeddings import HashingEmbedder
from veracity.retrieval.base import SourceUnreachable
from veracity.runtime.home import home_paths
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="eiffel", title="Eiffel Tower", text="The Eiffel Tower stands in Paris, France."),
    Document(id="berlin", title="Berlin", text="Berlin is the capital of Germany."),
]
CLAIM = Claim(text="The Eiffel Tower is in Berlin.")


def step(decision, query="", reasoning="Thinking it over.", alternatives=None):
    text = json.dumps({"reasoning": reasoning, "decision": decision, "search_query": query})
    return ScriptedReply(text, alternatives=alternatives, at=f'{decision}"')


def final(label="false", alternatives=None):
    text = json.dumps({"reasoning": "The knowledge settles it.", "label": label})
    return ScriptedReply(text, alternatives=alternatives, at=f'{label}"')


def scripted(*steps, last=None):
    llm = ScriptedLLM()
    for i, s in enumerate(steps, 1):
        llm.on(".*", s, tag=f"fire:step{i}")
    if last is not None:
        llm.on(".*", last, tag="fire:final")
    return llm


def fire(llm, docs=DOCS, **config):
    method = FireMethod(llm=llm, config=config, sources={"web": InMemorySource(docs, name="web")})
    # the repeat test's embeddings: bag-of-words hashing here (no model), so texts with the
    # same words are the same; tests/unit/test_fire_repeats.py covers rephrasings
    method.repeat_embedder = HashingEmbedder()
    return method


async def test_searches_then_decides_with_the_knowledge_shown():
    llm = scripted(
        step(SEARCH, "Eiffel Tower location"),
        step("false", alternatives={"false": 0.6, SEARCH: 0.3, "true": 0.1}),
    )
    verdict = await fire(llm).check(CLAIM)
    assert verdict.label == "false" and verdict.error is None
    # SEARCH's mass is dropped and the rest scaled to the labels, and the note says so
    assert verdict.probabilities == pytest.approx({"true": 0.1 / 0.7, "false": 0.6 / 0.7})
    assert verdict.confidence == pytest.approx(0.6 / 0.7)
    assert "SEARCH" in verdict.probability_note
    assert verdict.metadata["ended"] == "decided at step 2"
    assert verdict.usage.llm_calls == 2 and verdict.usage.searches == 1
    assert verdict.evidence[0].document.id == "eiffel"
    # the first step sees no knowledge; the second sees the search's results, fenced
    first = llm.calls_tagged("fire:step1")[0].messages[-1].content
    second = llm.calls_tagged("fire:step2")[0].messages[-1].content
    assert "(none yet)" in first and "Paris, France" not in first
    assert '<knowledge id="1">' in second and "Paris, France" in second
    # the step's schema offers the labels and SEARCH
    schema = llm.calls[0].json_schema
    assert schema["properties"]["decision"]["enum"] == [SEARCH, "true", "false"]
    turns = [e.data for e in verdict.trace.events if e.kind == "agent_turn"]
    assert [(t["step"], t["action"]) for t in turns] == [(1, "search"), (2, "answer")]
    assert turns[1]["p_search"] == pytest.approx(0.3) and turns[0]["steps"] == 5


async def test_the_step_budget_ends_in_a_last_answer():
    llm = scripted(
        step(SEARCH, "Eiffel Tower"), step(SEARCH, "capital of Germany"), last=final("false")
    )
    verdict = await fire(llm, max_steps=2).check(CLAIM)
    assert verdict.label == "false"
    assert verdict.usage.searches == 2 and verdict.usage.llm_calls == 3
    assert verdict.metadata["ended"].startswith("step budget spent (2 steps)")
    assert [s["query"] for s in verdict.metadata["searches"]] == [
        "Eiffel Tower",
        "capital of Germany",
    ]
    last = llm.calls_tagged("fire:final")[0].messages[-1].content
    assert '<knowledge id="2">' in last and "Berlin is the capital" in last


async def test_shared_layout_lets_the_final_prompt_extend_the_last_step():
    """prompt_layout: shared (the default): one system note for the check, the claim and
    the knowledge first, the system text last; the verdict is the paper layout's."""
    verdicts, calls = {}, {}
    for layout in ("paper", "shared"):
        llm = scripted(
            step(SEARCH, "Eiffel Tower"), step(SEARCH, "capital of Germany"), last=final("false")
        )
        verdicts[layout] = await fire(llm, max_steps=2, prompt_layout=layout).check(CLAIM)
        calls[layout] = llm
    assert verdicts["shared"].label == verdicts["paper"].label == "false"
    llm = calls["shared"]
    assert len({c.messages[0].content for c in llm.calls}) == 1
    step2 = llm.calls_tagged("fire:step2")[0].messages[-1].content
    last = llm.calls_tagged("fire:final")[0].messages[-1].content
    assert last.startswith(step2[: step2.index("</knowledge>")])
    assert last.index("=== Your role ===") > last.index("Labels:")
    paper = calls["paper"].calls_tagged("fire:final")[0].messages[0].content
    assert paper.startswith("You are a fact-checker giving your final verdict")


async def test_a_repeated_query_stops_searching():
    llm = scripted(
        step(SEARCH, "Eiffel Tower location"),
        step(SEARCH, "eiffel tower LOCATION"),  # the same words: FIRE's tolerance ends it
        last=final("false"),
    )
    verdict = await fire(llm).check(CLAIM)
    assert verdict.usage.searches == 1 and verdict.label == "false"
    assert verdict.metadata["ended"].startswith("searching stopped at step 2: the query repeated")
    notes = [e for e in verdict.trace.events if e.kind == "note" and e.name == "fire"]
    assert notes and notes[0].data["query"] == "eiffel tower LOCATION"


async def test_repeated_results_stop_searching():
    docs = [Document(id="only", title="Tower", text="A tower stands somewhere.")]
    llm = scripted(
        step(SEARCH, "tower history"),
        step(SEARCH, "tower height"),  # another query, the same single result
        step(SEARCH, "tower owner"),
        last=final("true"),
    )
    verdict = await fire(llm, docs=docs).check(CLAIM)
    assert verdict.usage.searches == 2
    assert "the results repeated" in verdict.metadata["ended"]


async def test_probabilities_that_choose_search_over_the_written_label_search_the_input():
    llm = scripted(
        step("false", alternatives={SEARCH: 0.7, "false": 0.3}),  # decoded false, SEARCH likelier
        step("false"),
    )
    verdict = await fire(llm).check(CLAIM)
    assert verdict.usage.searches == 1
    assert verdict.metadata["searches"][0]["query"] == CLAIM.text
    notes = [e.data for e in verdict.trace.events if e.kind == "note" and e.name == "fire"]
    assert any("no search query written" in n.get("text", "") for n in notes)


async def test_every_search_failing_is_an_abstention_not_a_label():
    bad = InMemorySource([], name="web", fail_with=SourceUnreachable("web", "down"))
    llm = scripted(step(SEARCH, "Eiffel Tower"), step("false"))
    verdict = await FireMethod(llm=llm, sources={"web": bad}).check(CLAIM)
    assert verdict.label is None and verdict.abstained
    assert "every search failed" in verdict.abstain_reason
    # the model saw the failure as its knowledge, not an invented result
    second = llm.calls_tagged("fire:step2")[0].messages[-1].content
    assert "search failed" in second


def test_fire_needs_one_source_and_declares_it():
    with pytest.raises(MethodConfigError, match="needs a source"):
        FireMethod(llm=ScriptedLLM())
    with pytest.raises(MethodConfigError, match="several sources"):
        FireMethod(llm=ScriptedLLM(), sources={"a": InMemorySource([]), "b": InMemorySource([])})
    assert [n.name for n in FireMethod.source_needs({})] == ["web"]
    assert [n.name for n in FireMethod.source_needs({"source": "google"})] == ["google"]
    picked = FireMethod(
        llm=ScriptedLLM(),
        config={"source": "b"},
        sources={"a": InMemorySource([], name="a"), "b": InMemorySource([], name="b")},
    )
    assert picked.source.name == "b"


def test_repeats_follows_the_tolerance():
    assert similarity("Eiffel Tower", "tower eiffel") == 1.0
    assert similarity("Eiffel Tower", "Berlin") == 0.0
    same = word_overlap(0.9)
    assert repeats("a b", ["a b"], ["x"], tolerance=2, same=same) == "query"
    assert repeats("a b", ["a b", "c"], ["x"], tolerance=2, same=same) is None
    # tolerance 3: the query must repeat both of the last two
    assert repeats("a b", ["a b", "c d"], [], tolerance=3, same=same) is None
    assert repeats("a b", ["a b", "b a"], [], tolerance=3, same=same) == "query"
    assert repeats("new", ["old"], ["same", "same"], tolerance=2, same=same) == "results"
    assert repeats("new", ["old"], ["same"], tolerance=2, same=same) is None


def test_step_model_takes_a_label_or_search():
    model = step_model(get_label_space("true_half_false"))
    ok = model.model_validate({"reasoning": "r", "decision": SEARCH, "search_query": "q"})
    assert ok.decision == SEARCH
    with pytest.raises(ValueError):
        model.model_validate({"reasoning": "r", "decision": "maybe", "search_query": ""})


async def test_offline_without_sources_fire_searches_the_default_index():
    from veracity.retrieval.defaults import DEFAULT_INDEX
    from veracity.retrieval.local.corpus import build_local_corpus
    from veracity.runtime import build_run, resolve_spec

    build_local_corpus(DEFAULT_INDEX, DOCS, mode="bm25", indexes_dir=home_paths().indexes)
    llm = scripted(step(SEARCH, "Eiffel Tower Paris"), step("false"))
    run = build_run(resolve_spec(flags={"method": "fire"}, online=False), llm=llm)
    assert run.spec.sources == {"web": {"type": "local", "index": DEFAULT_INDEX}}
    verdict = await run.check(CLAIM)
    assert verdict.label == "false" and verdict.usage.searches == 1
    assert {e.name for e in verdict.trace.of_kind("search")} == {"web"}
    assert verdict.evidence and verdict.evidence[0].document.title == "Eiffel Tower"
