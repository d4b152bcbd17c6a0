"""Self-Ask on a scripted model: follow-up questions through the shared ReAct loop, each
answered from a search, then the final answer over the chain."""

import itertools
import json

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.self_ask import SelfAskMethod
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="tt", title="Theodor Haecker", text="Theodor Haecker was born in 1879."),
    Document(id="hb", title="Harry Vaughan Watkins", text="Harry Vaughan Watkins was born 1875."),
]
CLAIM = Claim(text="Theodor Haecker was born before Harry Vaughan Watkins.")


def step(thought, action, question=""):
    return json.dumps({"thought": thought, "action": action, "action_input": question})


def scripted():
    llm = ScriptedLLM()
    final = json.dumps({"reasoning": "1879 is after 1875.", "label": "REFUTED"})
    llm.on(".*", ScriptedReply(final, alternatives={"REFUTED": 0.8, "SUPPORTED": 0.2},
                               at='REFUTED"'), tag="self_ask:final")  # fmt: skip
    llm.on(".*", json.dumps({"answer": "1879"}), tag="self_ask:intermediate1")
    llm.on(".*", json.dumps({"answer": "1875"}), tag="self_ask:intermediate2")
    llm.queue(
        step("Yes, first Haecker's birth year.", "follow_up", "When was Theodor Haecker born?"),
        step("Now Watkins.", "follow_up", "When was Harry Vaughan Watkins born?"),
        step("Enough.", "finish"),
    )
    return llm


async def test_follow_ups_are_answered_from_search_then_the_final_answer():
    llm, source = scripted(), InMemorySource(DOCS, name="wikipedia")
    verdict = await SelfAskMethod(llm=llm, sources={"wikipedia": source}).check(CLAIM)
    assert verdict.label == "REFUTED" and verdict.error is None
    assert verdict.probabilities == pytest.approx({"SUPPORTED": 0.2, "REFUTED": 0.8})
    assert verdict.metadata["follow_ups"] == [
        {"question": "When was Theodor Haecker born?", "answer": "Intermediate answer: 1879"},
        {"question": "When was Harry Vaughan Watkins born?", "answer": "Intermediate answer: 1875"},
    ]
    assert verdict.metadata["finished"] is True
    assert [q.text for q in source.queries] == [
        "When was Theodor Haecker born?",
        "When was Harry Vaughan Watkins born?",
    ]
    # the intermediate answer read the search results; the final answer saw the chain
    first = llm.calls_tagged("self_ask:intermediate1")[0].messages[-1].content
    assert "born in 1879" in first
    final = llm.calls_tagged("self_ask:final")[0].messages[-1].content
    assert "Intermediate answer: 1875" in final and "<trajectory>" in final
    assert verdict.usage.searches == 2 and verdict.usage.llm_calls == 6
    assert {e.document.id for e in verdict.evidence} == {"tt", "hb"}


async def test_the_follow_up_budget_ends_the_chain():
    llm, source = scripted(), InMemorySource(DOCS, name="wikipedia")
    method = SelfAskMethod(llm=llm, config={"max_follow_ups": 1}, sources={"wikipedia": source})
    verdict = await method.check(CLAIM)
    assert len(verdict.metadata["follow_ups"]) == 1 and verdict.metadata["finished"] is False
    assert verdict.label == "REFUTED"


async def test_every_step_extends_the_last_and_the_notice_names_the_observations():
    llm, source = scripted(), InMemorySource(DOCS, name="wikipedia")
    await SelfAskMethod(llm=llm, sources={"wikipedia": source}).check(CLAIM)
    steps = [c.messages for c in llm.calls if c.tag in ("self_ask:1", "self_ask:2", "self_ask:3")]
    assert len(steps) == 3
    # the observations are fenced from step 2 on, and the system message of step 1
    # already says so: it is the same in every step, so each step extends the last
    assert "<observation>" in steps[1][-1].content
    assert "observation" in steps[0][0].content and steps[0][0].role == "system"
    for before, after in itertools.pairwise(steps):
        assert after[: len(before) - 1] == before[:-1]
        assert after[len(before) - 1].content == before[-1].content


async def test_the_loop_opens_with_four_worked_examples():
    """Self-Ask is few-shot (4 worked examples); the examples sit in the loop's fixed system
    message, so every step and every check opens with the same text."""
    from veracity.methods.self_ask.examples import self_ask_examples

    examples = self_ask_examples()
    assert len(examples) == 4
    llm, source = scripted(), InMemorySource(DOCS, name="wikipedia")
    await SelfAskMethod(llm=llm, sources={"wikipedia": source}).check(CLAIM)
    loop = [c for c in llm.calls if "Are follow-up questions needed here?" in str(c.messages)]
    assert len(loop) == 3
    system = [m.content for m in loop[0].messages if m.role == "system"][-1]
    assert system.count("\nFollow up: ") == sum(len(e.chain) for e in examples)
    assert all(f"Claim: {e.claim}" in system for e in examples)
    assert {[m for m in c.messages if m.role == "system"][-1].content for c in loop} == {system}
    llm = scripted()
    await SelfAskMethod(llm=llm, sources={"wikipedia": source}, config={"examples": False}).check(
        CLAIM
    )
    assert examples[0].claim not in str(llm.calls[0].messages)
