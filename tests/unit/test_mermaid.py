"""MERMAID with a scripted model: decomposition, the executor loop, memory, ablations."""

from __future__ import annotations

import json

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.base import MethodConfigError
from veracity.methods.mermaid import Decomposition, MermaidMethod, MermaidSingleMethod
from veracity.runtime.home import home_paths
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="d1", title="Eiffel Tower", text="The Eiffel Tower is a tower in Paris, France."),
    Document(id="d2", title="Berlin", text="Berlin is the capital of Germany."),
]
EIFFEL = Claim(text="The Eiffel Tower is in Berlin.")


def decomposition(subject="Eiffel Tower", obj="Berlin", topics=("Geography",)) -> str:
    triplet = {"subject": subject, "relation": "is in", "object": obj, "attributes": []}
    return json.dumps({"triplets": [triplet], "topics": list(topics)})


def call(query: str, tool: str = "search_wiki", thought: str = "look it up") -> str:
    action = {"name": tool, "reason": "find the facts", "input": {"query": query}}
    return json.dumps({"thought": thought, "action": action})


def answer(label: str = "false", thought: str = "It is in Paris.") -> ScriptedReply:
    return ScriptedReply(
        json.dumps({"thought": thought, "answer": label}),
        alternatives={"false": 0.8, "true": 0.2},
        at=f'{label}"',
    )


def method(llm, tmp_path, cls=MermaidMethod, docs=DOCS, state=None, **config) -> MermaidMethod:
    memory = {"path": str(tmp_path / "memory.sqlite"), "embedder": "hashing"}
    memory.update(config.pop("memory", {}))
    cfg = {"tool_transport": "inprocess", "memory": memory, **config}
    sources = {"wiki": InMemorySource(docs, name="wiki")}
    where = {"state_dir": state[0], "state_namespace": state[1]} if state else {}
    return cls(llm=llm, config=cfg, sources=sources, **where)


def keep_all(request) -> str:
    """The retention step's reply keeping every document it was shown."""
    items = request.json_schema["properties"]["relevant"]["items"]
    return json.dumps({"relevant": items.get("enum", [items.get("const")])})


def scripted(*steps, decomposer=None, keep=keep_all) -> ScriptedLLM:
    llm = ScriptedLLM()
    llm.on(".*", decomposer or decomposition(), tag="decomposer")
    for i, s in enumerate(steps, 1):
        llm.on(".*", s, tag=f"executor:{i}")
    llm.on(".*", keep, tag="retain")
    return llm


async def test_full_check_decomposes_searches_answers_and_stores(tmp_path):
    llm = scripted(call("Eiffel Tower location"), answer("false"))
    verdict = await method(llm, tmp_path).check(EIFFEL)
    assert verdict.label == "false" and verdict.error is None
    assert verdict.confidence == pytest.approx(0.8)
    assert verdict.rationale == "It is in Paris."
    assert [e.document.id for e in verdict.evidence] == ["d1"]
    meta = verdict.metadata
    assert meta["decomposition"]["triplets"][0]["subject"] == "Eiffel Tower"
    assert meta["counters"]["tool_calls"] == 1 and meta["forced_answer"] is False
    assert meta["memory"]["stored"] == 1 and meta["memory"]["recalled"] == 0
    kinds = [e.kind for e in verdict.trace.events]
    assert "tool_call" in kinds and "memory_recall" in kinds
    call_event = verdict.trace.of_kind("tool_call")[0]
    assert call_event.data["tool"] == "search_wiki"
    assert call_event.data["arguments"] == {"query": "Eiffel Tower location"}
    # the second step's prompt holds the claim, the background and the observation
    prompt = llm.calls_tagged("executor:2")[0].messages[-1].content
    assert "(Eiffel Tower; is in; Berlin)" in prompt and "Paris, France" in prompt
    # the step schema offers the real tool with its typed input, or an answer label
    schema = json.dumps(llm.calls_tagged("executor:1")[0].json_schema)
    assert '"const": "search_wiki"' in schema and '"enum": ["true", "false"]' in schema


async def test_each_executor_step_extends_the_last_one_up_to_its_history(tmp_path):
    """The system message (persona, tools, data notice) is the same at every step, so a
    step's prompt repeats the one before up to where the steps so far begin: a slot that
    ran step 1 computes only the history and what follows."""
    from veracity.llm.slots import shared_chars

    llm = scripted(call("Eiffel Tower location"), call("Berlin", thought="more"), answer())
    await method(llm, tmp_path).check(EIFFEL)
    steps = [llm.calls_tagged(f"executor:{i}")[0].messages for i in (1, 2, 3)]
    assert steps[0][0].role == "system" and steps[0][0] == steps[1][0] == steps[2][0]
    texts = ["".join(m.content for m in msgs) for msgs in steps]
    start = texts[0].index("Steps so far:") + len("Steps so far:")
    assert shared_chars(texts[0], texts[1]) >= start
    first_step = texts[1].index("</steps>")  # the history of step 2 is step 1 alone
    assert shared_chars(texts[1], texts[2]) >= first_step


def test_the_executor_notice_names_every_tag_its_template_fences():
    """`EXECUTOR_TAGS` is kept by hand: a tag executor.j2 fences that it misses would
    change the notice at the first step that shows it."""
    import re
    from importlib.resources import files

    from veracity.methods.mermaid.executor import EXECUTOR_TAGS

    source = (files("veracity.methods.mermaid") / "prompts" / "executor.j2").read_text()
    assert set(re.findall(r'data\("([a-z_]+)"', source)) == set(EXECUTOR_TAGS)


async def test_invalid_decomposition_is_asked_again(tmp_path):
    llm = ScriptedLLM()
    llm.queue(json.dumps({"triplets": [], "topics": ["x"]}))  # no triplet: invalid
    llm.on("could not be used", decomposition(), tag="decomposer")
    llm.on(".*", answer("false"), tag="executor:1")
    verdict = await method(llm, tmp_path).check(EIFFEL)
    assert verdict.label == "false"
    assert len(llm.calls_tagged("decomposer")) == 2
    assert "triplets" in llm.calls_tagged("decomposer")[1].messages[-1].content


async def test_decomposition_that_stays_invalid_is_the_checks_error(tmp_path):
    llm = ScriptedLLM().on(".*", "not json at all", tag="decomposer")
    verdict = await method(llm, tmp_path, decomposer_attempts=2).check(EIFFEL)
    assert verdict.label is None and "decomposer" in verdict.error
    assert not llm.calls_tagged("executor")


async def test_unparseable_step_is_recorded_never_a_label(tmp_path):
    llm = scripted('{"thought": "hmm", "action": {"name": "no_such_tool"}}')
    verdict = await method(llm, tmp_path).check(EIFFEL)
    assert verdict.label is None and verdict.error and "executor:1" in verdict.error
    assert len(llm.calls_tagged("executor:1")) == 3  # asked, then re-asked twice
    assert any(e.kind == "error" and e.data.get("step") == 1 for e in verdict.trace.events)


async def test_answer_is_forced_at_the_step_cap(tmp_path):
    llm = scripted(call("Eiffel Tower"), call("Berlin landmarks"))
    llm.on(".*", answer("false", "Paris, not Berlin."), tag="executor:final")
    verdict = await method(llm, tmp_path, max_steps=2).check(EIFFEL)
    assert verdict.label == "false" and verdict.metadata["forced_answer"] is True
    final = llm.calls_tagged("executor:final")[0]
    assert "used all 2 steps" in final.messages[-1].content
    assert "action" not in json.dumps(final.json_schema)  # only an answer is possible
    assert verdict.metadata["counters"]["tool_calls"] == 2


async def test_history_is_bounded_and_the_trace_says_what_was_shortened(tmp_path):
    long_docs = [Document(id=f"x{i}", title=f"T{i}", text="word " * 300) for i in range(3)]
    llm = scripted(call("word"), call("word one"), call("word two"), answer("true"))
    m = method(llm, tmp_path, docs=long_docs, max_history_chars=1200, max_result_chars=150)
    verdict = await m.check(EIFFEL)
    notes = [
        e for e in verdict.trace.of_kind("note") if e.data.get("message") == "history shortened"
    ]
    assert notes and notes[-1].data["summarised"]
    assert "(shortened)" in llm.calls_tagged("executor:4")[0].messages[-1].content


async def test_memory_recalls_stored_evidence_and_replays_identical_searches(tmp_path):
    first = scripted(call("Eiffel Tower"), answer("false"))
    m = method(first, tmp_path)
    await m.check(EIFFEL)
    second = scripted(
        call("Eiffel Tower"),
        answer("true"),
        decomposer=decomposition("Eiffel Tower", "Paris"),
    )
    m2 = method(second, tmp_path)
    verdict = await m2.check(Claim(text="The Eiffel Tower is in Paris."))
    opening = second.calls_tagged("executor:1")[0].messages[-1].content
    assert "Evidence remembered from earlier checks" in opening and "[d1]" in opening
    assert verdict.metadata["memory"]["recalled"] == 1
    # the identical search is answered from memory: no tool call, one search saved
    assert verdict.metadata["counters"]["tool_calls"] == 0
    assert verdict.metadata["counters"]["searches_saved"] == 1
    assert verdict.metadata["tool_calls"][0]["from_memory"] is True
    assert (
        "Observation 1 (from memory)" in second.calls_tagged("executor:2")[0].messages[-1].content
    )
    assert m2.memory().stats().searches_saved == 1


async def test_memory_namespaces_are_isolated(tmp_path):
    m = method(scripted(call("Eiffel Tower"), answer()), tmp_path, memory={"namespace": "dev"})
    await m.check(EIFFEL)
    other = scripted(call("Eiffel Tower"), answer())
    m2 = method(other, tmp_path, memory={"namespace": "test"})
    verdict = await m2.check(EIFFEL)
    assert verdict.metadata["memory"]["recalled"] == 0
    assert verdict.metadata["counters"]["tool_calls"] == 1  # not replayed across namespaces
    # the run's namespace (set by the runtime for an evaluation) is used when none is set
    m3 = method(scripted(answer()), tmp_path, state=(tmp_path / "state", "mermaid_scifact/all"))
    assert m3.memory().namespace == "mermaid_scifact/all"
    assert m3.memory().path == tmp_path / "memory.sqlite"  # an explicit path wins
    m4 = MermaidMethod(
        llm=ScriptedLLM(),
        config={"tool_transport": "inprocess"},
        sources={"w": InMemorySource([])},
        state_dir=tmp_path / "state",
        state_namespace="set/split",
    )
    assert m4.memory().path == tmp_path / "state" / "evidence_memory.sqlite"


async def test_read_only_memory_recalls_but_never_stores(tmp_path):
    await method(scripted(call("Eiffel Tower"), answer()), tmp_path).check(EIFFEL)
    m = method(scripted(call("Berlin"), answer()), tmp_path, memory={"mode": "read-only"})
    verdict = await m.check(EIFFEL)
    assert verdict.metadata["memory"]["recalled"] == 1 and verdict.metadata["memory"]["stored"] == 0
    assert m.memory().stats().entries == 1


async def test_no_memory_variant_neither_recalls_nor_stores(tmp_path):
    m = method(scripted(call("Eiffel Tower"), answer()), tmp_path, memory={"mode": "off"})
    verdict = await m.check(EIFFEL)
    assert m.memory() is None
    assert verdict.metadata["memory"] == {
        "mode": "off", "recalls": 0, "recalled": 0, "hit": 0, "searches_saved": 0, "stored": 0,
        "retrieved": 1, "kept": 0,
    }  # fmt: skip
    assert not verdict.trace.of_kind("memory_recall")
    assert not (tmp_path / "memory.sqlite").exists()
    shorthand = MermaidMethod(
        llm=ScriptedLLM(), config={"memory": "off", "tool_transport": "inprocess"},
        sources={"wiki": InMemorySource(DOCS, name="wiki")},
    )  # fmt: skip
    assert shorthand.config.memory.mode == "off" and shorthand.memory() is None


async def test_no_decomposer_variant_goes_straight_to_the_executor(tmp_path):
    llm = ScriptedLLM().on(".*", answer("false"), tag="executor:1")
    verdict = await method(llm, tmp_path, decompose=False).check(EIFFEL)
    assert verdict.label == "false" and verdict.metadata["decomposition"] is None
    assert not llm.calls_tagged("decomposer")
    assert "Background" not in llm.calls[0].messages[-1].content


async def test_single_agent_analyses_the_claim_as_its_own_step_zero(tmp_path):
    llm = ScriptedLLM()
    llm.on(".*", decomposition(), tag="executor:0")
    llm.on(".*", answer("false"), tag="executor:1")
    verdict = await method(llm, tmp_path, cls=MermaidSingleMethod).check(EIFFEL)
    assert verdict.method == "mermaid_single" and verdict.label == "false"
    assert "Your own analysis" in llm.calls_tagged("executor:1")[0].messages[-1].content


async def test_tool_subset_and_unknown_tools(tmp_path):
    two = {"wiki": InMemorySource(DOCS, name="wiki"), "web": InMemorySource([], name="web")}
    llm = scripted(answer())
    m = MermaidMethod(
        llm=llm,
        config={"tool_transport": "inprocess", "tools": ["search_web"], "memory": "off"},
        sources=two,
    )
    await m.check(EIFFEL)
    schema = json.dumps(llm.calls_tagged("executor:1")[0].json_schema)
    assert "search_web" in schema and "search_wiki" not in schema
    bad = MermaidMethod(
        llm=scripted(answer()),
        config={"tool_transport": "inprocess", "tools": ["nope"], "memory": "off"},
        sources=two,
    )
    with pytest.raises(MethodConfigError, match="no tools named"):
        await bad.check(EIFFEL)


def test_config_errors_are_clear():
    with pytest.raises(MethodConfigError, match="needs tools"):
        MermaidMethod(llm=ScriptedLLM(), config={"memory": "off"})
    with pytest.raises(MethodConfigError, match="works in"):
        MermaidMethod(llm=ScriptedLLM(), labels="liar6", sources={"w": InMemorySource([])})
    with pytest.raises(MethodConfigError, match="not built from a config"):
        MermaidMethod(llm=ScriptedLLM(), sources={"w": InMemorySource([])})  # stdio default


def test_decomposition_entities_are_subjects_and_objects_without_repeats():
    d = Decomposition.model_validate(
        {
            "triplets": [
                {"subject": " WHO ", "relation": "declared", "object": "a pandemic"},
                {"subject": "who", "relation": "is", "object": "an agency", "attributes": ["UN"]},
            ],
            "topics": ["Health"],
        }
    )
    assert d.entities == ["WHO", "a pandemic", "an agency"]
    with pytest.raises(ValueError):
        Decomposition.model_validate(
            {"triplets": [{"subject": " ", "relation": "r", "object": "o"}], "topics": ["t"]}
        )


def test_an_evaluation_keeps_its_memory_in_its_run_directory(tmp_path):
    """Every claim of the toy set shares the entity 'claim': later claims recall earlier
    evidence and replay the identical search; a second run starts with an empty memory."""
    import asyncio
    import re

    from _eval_fixtures import config

    from veracity.evaluation.report import load_run, method_counters, render_markdown
    from veracity.evaluation.runner import prepare_run, run_session
    from veracity.evidence.memory import EvidenceMemory
    from veracity.retrieval.local.corpus import build_local_corpus

    build_local_corpus(
        "toy-docs",
        [Document(id="e", text="claim evidence")],
        mode="bm25",
        indexes_dir=home_paths().indexes,
    )

    def reply(request):
        prompt = "\n".join(m.content for m in request.messages)
        if request.tag.startswith("decomposer"):
            return decomposition("claim", "evidence")
        if request.tag == "retain":
            return keep_all(request)
        if "Steps so far:\n(none yet)" in prompt:
            return call("claim evidence", tool="search_docs")
        return json.dumps({"thought": "ok", "answer": re.search(r"say:(\w+)", prompt)[1]})

    cfg = config(
        tmp_path,
        method="mermaid",
        concurrency=1,
        sources={"docs": {"type": "local", "index": "toy-docs"}},
        method_config={"tool_transport": "inprocess", "memory": {"embedder": None}},
    )
    for out in ("run1", "run2"):
        run = prepare_run(cfg, tmp_path / out, llm=ScriptedLLM(default=reply))
        metrics = asyncio.run(run_session(run))
        assert metrics.accuracy == pytest.approx(6 / 8)
        counters = method_counters(run.store.read_predictions())
        assert counters["tool_calls"] == 1 and counters["searches_saved"] == 7
        assert counters["memory_hits"] == 7  # every claim after the first
        db = tmp_path / out / "state" / "evidence_memory.sqlite"
        stats = EvidenceMemory(path=db, namespace="toy_eval/dev", embedder=None).stats()
        assert stats.entries == 1 and stats.searches_saved == 7
    images = {"confusion": "c.png", "reliability": "r.png"}
    assert "| tool_calls | 1 | 0.12 |" in render_markdown(load_run(tmp_path / "run2"), images)
