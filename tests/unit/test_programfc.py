"""ProgramFC on a scripted model: a Question/Verify program, run in order with
retrieval, answers filling later steps, Predict as the conjunction."""

import json

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.programfc import ProgramFCMethod
from veracity.methods.programfc.config import ProgramFCConfig
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


# issue 40: ProgramFC's few-shot program prompt, its True/False reader and its top-k


def program_prompt(llm):
    return "\n".join(m.content for m in llm.calls_tagged("programfc:program")[0].messages)


async def test_the_program_prompt_shows_worked_programs_of_the_chosen_set():
    from veracity.methods.programfc.examples import example_programs

    llm = scripted(third="FALSE")
    await method(llm, InMemorySource(DOCS, name="wikipedia")).check(CLAIM)
    shown = program_prompt(llm)
    hover = example_programs("hover")
    assert len(hover) == 20  # as many as ProgramFC's HoVer prompt
    assert shown.count("\nlabel = Predict(") == 20 and hover[0].claim in shown
    assert "label = Predict(not fact_1 and not fact_2)" in shown  # negated steps render
    llm = scripted(third="FALSE")
    m = ProgramFCMethod(
        llm=llm, sources={"wikipedia": InMemorySource(DOCS, name="wikipedia")},
        config={"examples": "scifact"},
    )  # fmt: skip
    await m.check(CLAIM)
    shown = program_prompt(llm)
    assert shown.count("\nlabel = Predict(") == 14 and "N348I" in shown
    assert hover[0].claim not in shown


def test_every_example_program_fits_the_program_reply():
    from veracity.methods.programfc.examples import example_programs
    from veracity.methods.programfc.method import program_model

    cfg = ProgramFCConfig()
    model = program_model(cfg.max_program_steps, cfg.max_step_chars)
    for name in ("hover", "scifact"):
        for p in example_programs(name):
            model.model_validate({"steps": [s.model_dump() for s in p.steps]})
            answers = sum(s.kind == "Question" for s in p.steps)
            assert all(int(n) <= answers for s in p.steps for n in _slots(s.text)), p.claim


def _slots(text):
    import re

    return re.findall(r"\{answer_(\d+)\}", text)


async def test_the_reader_always_answers_and_judges_without_a_default():
    """ProgramFC's reader (FLAN-T5) always gives an answer and judges True or False from
    the passages; neither prompt offers "unknown" or makes FALSE the fallback."""
    llm = scripted(third="FALSE")
    await method(llm, InMemorySource(DOCS, name="wikipedia")).check(CLAIM)
    question, verify = (
        "\n".join(m.content for m in llm.calls_tagged(f"programfc:{tag}")[0].messages)
        for tag in ("step1:question", "step2:verify")
    )
    assert "unknown" not in question.lower() and "always give an answer" in question.lower()
    assert " else " not in verify and "true or false" in verify.lower()


def test_top_k_is_the_releases_five():
    assert ProgramFCConfig().top_k == 5


@pytest.mark.data
def test_scifact_examples_come_from_the_training_split(benchmark_data_dir):
    from veracity.methods.programfc.examples import example_programs

    folder = benchmark_data_dir / "scifact"
    train = {
        r["id"]: r["claim"]
        for r in map(json.loads, (folder / "claims_train.jsonl").read_text().splitlines())
    }
    for p in example_programs("scifact"):
        assert train[p.id] == p.claim
    held = benchmark_data_dir / "mermaid_eval_sets" / "sets" / "SciFact-Open_df_new.jsonl"
    evaluated = held.read_text() if held.exists() else ""
    assert not any(p.claim in evaluated for p in example_programs("scifact"))
