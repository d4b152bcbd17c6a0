"""ProgramFC on a scripted model: a Question/Verify program, run in order with
retrieval, answers filling later steps, Predict as the conjunction."""

import json

from veracity.core.types import Claim, Document
from veracity.methods.programfc import ProgramFCMethod
from veracity.methods.programfc.method import fill
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="mccool", title="Peter McCool", text="Peter McCool designed the Super Aguri SA07."),
    Document(id="sa07", title="Super Aguri SA07", text="The SA07 was driven by Takuma Sato."),
]
CLAIM = Claim(text="An IndyCar driver drove a car designed by Peter McCool in 2007.")
PROGRAM = {
    "steps": [
        {"kind": "Question", "text": "Which car did Peter McCool design?", "negated": False},
        {"kind": "Verify", "text": "Peter McCool designed {answer_1}.", "negated": False},
        {"kind": "Verify", "text": "{answer_1} was driven by an IndyCar driver.", "negated": True},
    ]
}


def verify(value):
    return ScriptedReply(json.dumps({"holds": value}), at=f'{value}"')


def scripted(second="TRUE", third="TRUE"):
    llm = ScriptedLLM()
    llm.on(".*", json.dumps(PROGRAM), tag="programfc:program")
    llm.on(".*", json.dumps({"answer": "Super Aguri SA07"}), tag="programfc:step1:question")
    llm.on(".*", verify(second), tag="programfc:step2:verify")
    llm.on(".*", verify(third), tag="programfc:step3:verify")
    return llm


def method(llm, source):
    return ProgramFCMethod(llm=llm, sources={"wikipedia": source})


async def test_the_program_runs_in_order_with_answers_filled_in():
    llm, source = scripted(third="FALSE"), InMemorySource(DOCS, name="wikipedia")
    verdict = await method(llm, source).check(CLAIM)
    # Verify(step 2) TRUE and not Verify(step 3) with step 3 FALSE: Predict holds
    assert verdict.label == "SUPPORTED" and verdict.error is None
    assert [q.text for q in source.queries] == [
        "Which car did Peter McCool design?",
        "Peter McCool designed Super Aguri SA07.",
        "Super Aguri SA07 was driven by an IndyCar driver.",
    ]
    ran = verdict.metadata["program"]
    assert [(r["kind"], r["answer"]) for r in ran] == [
        ("Question", "Super Aguri SA07"), ("Verify", "TRUE"), ("Verify", "FALSE")
    ]  # fmt: skip
    assert ran[2]["negated"] is True and ran[1]["written"] == "Peter McCool designed {answer_1}."
    assert verdict.rationale.endswith("Predict = TRUE")
    step2 = llm.calls_tagged("programfc:step2:verify")[0].messages[-1].content
    assert "Peter McCool designed the Super Aguri SA07." in step2  # the passages, fenced
    assert verdict.usage.llm_calls == 4 and verdict.usage.searches == 3
    calls = [(e.data["step"], e.data["step_kind"]) for e in verdict.trace.events
             if e.kind == "tool_call"]  # fmt: skip
    assert calls == [(1, "Question"), (2, "Verify"), (3, "Verify")]


async def test_one_failed_fact_refutes_the_claim():
    llm = scripted(second="FALSE", third="FALSE")
    verdict = await method(llm, InMemorySource(DOCS, name="wikipedia")).check(CLAIM)
    assert verdict.label == "REFUTED"
    assert verdict.rationale.endswith("Predict = FALSE")


async def test_a_program_without_verify_steps_verifies_the_claim():
    llm = ScriptedLLM()
    only_q = {"steps": [{"kind": "Question", "text": "Who is Peter McCool?", "negated": False}]}
    llm.on(".*", json.dumps(only_q), tag="programfc:program")
    llm.on(".*", json.dumps({"answer": "a designer"}), tag="programfc:step1:question")
    llm.on(".*", verify("TRUE"), tag="programfc:step2:verify")
    source = InMemorySource(DOCS, name="wikipedia")
    verdict = await method(llm, source).check(CLAIM)
    assert verdict.label == "SUPPORTED" and source.queries[-1].text == CLAIM.text


def test_fill_keeps_unknown_slots():
    assert fill("{answer_1} and {answer_3}", ["A"]) == "A and {answer_3}"
