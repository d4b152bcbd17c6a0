"""HiSS on a scripted model: sub-claims, questions step by step, a search when unsure."""

import json

import pytest

from veracity.core.errors import MethodConfigError
from veracity.core.types import Claim, Document
from veracity.methods.hiss import HissMethod
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="eiffel", title="Eiffel Tower", text="The Eiffel Tower stands in Paris, France."),
    Document(id="berlin", title="Berlin", text="Berlin is the capital of Germany."),
]
CLAIM = Claim(text="The Eiffel Tower, built in 1889, is in Berlin.")


def subclaims(*texts):
    return json.dumps({"subclaims": list(texts)})


def steps(*qs, done=True):
    rows = [{"question": q, "confident": sure, "answer": a} for q, sure, a in qs]
    return json.dumps({"steps": rows, "done": done})


def verdict(label="false", alternatives=None):
    text = json.dumps({"reasoning": "The tower is in Paris.", "label": label})
    return ScriptedReply(text, alternatives=alternatives, at=f'{label}"')


def hiss(llm, **config):
    return HissMethod(llm=llm, config=config, sources={"web": InMemorySource(DOCS, name="web")})


async def test_an_unsure_question_is_searched_and_questioning_goes_on_from_its_answer():
    llm = ScriptedLLM()
    llm.on(".*", subclaims("The tower was built in 1889.", "The tower is in Berlin."),
           tag="hiss:decompose")  # fmt: skip
    llm.on(".*", steps(("When was the tower built?", True, "In 1889.")), tag="hiss:subclaim1")
    # sub-claim 2: the first reply stops at an unsure question (the second is ignored);
    # after the search, a second reply settles it
    llm.queue(
        steps(("Where is the tower?", False, "Berlin, I think."), ("Ignored?", True, "x"),
              done=False),
        steps(("Is Paris in France?", True, "Yes."), done=True),
    )  # fmt: skip
    llm.on(".*", json.dumps({"answer": "It stands in Paris."}), tag="hiss:answer2")
    llm.on(".*", verdict("false", {"false": 0.8, "true": 0.2}), tag="hiss:verdict")
    v = await hiss(llm).check(CLAIM)
    assert v.error is None and v.label == "false"
    assert v.probabilities == pytest.approx({"true": 0.2, "false": 0.8})
    qs = v.metadata["questions"]
    assert [(q["subclaim"], q["question"], q["answer"], q["searched"]) for q in qs] == [
        (1, "When was the tower built?", "In 1889.", False),
        (2, "Where is the tower?", "It stands in Paris.", True),
        (2, "Is Paris in France?", "Yes.", False),
    ]
    # decompose, 1 + 2 question replies, 1 searched answer, the verdict
    assert v.usage.llm_calls == 6 and v.usage.searches == 1 and v.metadata["searches"] == 1
    assert v.evidence[0].document.id == "eiffel"
    calls = [e.data for e in v.trace.events if e.kind == "tool_call"]
    assert calls[0]["arguments"] == {"query": "Where is the tower?"} and calls[0]["subclaim"] == 2
    # the second reply for sub-claim 2 sees the searched answer, fenced
    second = [c for c in llm.calls if c.tag == "hiss:subclaim2"][1].messages[-1].content
    assert "It stands in Paris." in second and '<qa id="2">' in second
    final = llm.calls_tagged("hiss:verdict")[0].messages[-1].content
    assert "Is Paris in France?" in final and "Intent:" not in final


async def test_shared_layout_opens_every_prompt_with_the_claim():
    """prompt_layout: shared (the default): one system note for the check, the claim
    first in every prompt, the verdict extending the last questioning prompt, the system
    text last; the verdict is the paper layout's."""
    verdicts, calls = {}, {}
    for layout in ("paper", "shared"):
        llm = ScriptedLLM()
        llm.on(".*", subclaims("The tower is in Berlin."), tag="hiss:decompose")
        llm.queue(
            steps(("Where is the tower?", False, "Berlin?"), done=False),
            steps(("Is Paris in France?", True, "Yes."), done=True),
        )
        llm.on(".*", json.dumps({"answer": "It stands in Paris."}), tag="hiss:answer1")
        llm.on(".*", verdict("false"), tag="hiss:verdict")
        verdicts[layout] = await hiss(llm, prompt_layout=layout).check(CLAIM)
        calls[layout] = llm
    assert verdicts["shared"].label == verdicts["paper"].label == "false"
    shared = calls["shared"]
    assert len({c.messages[0].content for c in shared.calls}) == 1
    users = [c.messages[-1].content for c in shared.calls]
    assert all(u.startswith("Claim to verify:\n<claim>") for u in users)
    last_step = shared.calls_tagged("hiss:subclaim1")[-1].messages[-1].content
    final = shared.calls_tagged("hiss:verdict")[0].messages[-1].content
    assert final.startswith(last_step[: last_step.index("</qa>")])
    assert final.index("=== Your role ===") > final.index("Labels:")
    paper = calls["paper"].calls_tagged("hiss:answer1")[0].messages[-1].content
    assert paper.startswith("Claim being checked:")


async def test_gold_evidence_without_search_and_the_omission_pass():
    llm = ScriptedLLM()
    llm.on(".*", subclaims("The tower is in Berlin."), tag="hiss:decompose")
    llm.on(".*", steps(("Where is it?", False, "Paris, per passage 1."), ("More?", False, "no"),
                       done=True), tag="hiss:subclaim1")  # fmt: skip
    omission = {"intent": "relocate the tower", "assumptions": "one tower",
                "hidden_context": "It has always stood in Paris."}  # fmt: skip
    llm.on(".*", json.dumps(omission), tag="hiss:omission")
    llm.on(".*", verdict("false"), tag="hiss:verdict")
    claim = Claim(text=CLAIM.text, evidence=[DOCS[0]])
    method = HissMethod(llm=llm, config={"search": False, "evidence": "given",
                                         "omission_aware": True, "max_questions": 2})  # fmt: skip
    v = await method.check(claim)
    assert v.label == "false" and v.usage.searches == 0 and v.usage.llm_calls == 4
    # without search an unsure answer stands, and the questions go on in the same reply
    assert [q["question"] for q in v.metadata["questions"]] == ["Where is it?", "More?"]
    assert v.metadata["evidence_setting"] == "given" and v.metadata["omission"] == omission
    first = llm.calls_tagged("hiss:decompose")[0].messages[-1].content
    assert '<passage id="1">' in first and "stands in Paris" in first
    final = llm.calls_tagged("hiss:verdict")[0].messages[-1].content
    assert "It has always stood in Paris." in final
    assert v.evidence[0].note == "given, shown"


async def test_the_question_budget_ends_a_sub_claim_that_is_never_done():
    llm = ScriptedLLM()
    llm.on(".*", subclaims("The tower is in Berlin."), tag="hiss:decompose")
    llm.on(".*", steps(("Q?", True, "A."), done=False), tag="hiss:subclaim1")
    llm.on(".*", verdict("false"), tag="hiss:verdict")
    v = await hiss(llm, max_questions=3).check(CLAIM)
    assert len(v.metadata["questions"]) == 3 and v.usage.llm_calls == 5


async def test_an_invalid_reply_is_the_error_never_a_label():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"subclaims": []}), tag="hiss:decompose")
    v = await hiss(llm).check(CLAIM)
    assert v.label is None and v.error and "StructuredOutputError" in v.error


def test_search_needs_a_source_and_declares_it():
    with pytest.raises(MethodConfigError, match="needs a source"):
        HissMethod(llm=ScriptedLLM())
    assert HissMethod(llm=ScriptedLLM(), config={"search": False}).source is None
    assert [n.name for n in HissMethod.source_needs({})] == ["web"]
    assert HissMethod.source_needs({"search": False}) == []


async def test_results_from_addresses_holding_fact_are_dropped_as_the_release_does():
    docs = [
        Document(id="fc", title="Fact check", text="FALSE: the tower is in Paris.",
                 url="https://www.politifact.com/eiffel"),
        Document(id="wiki", title="Eiffel Tower", text="The Eiffel Tower stands in Paris.",
                 url="https://en.wikipedia.org/wiki/Eiffel_Tower"),
    ]  # fmt: skip
    for drop, shown in ((None, {"wiki"}), ([], {"fc", "wiki"})):
        llm = ScriptedLLM()
        llm.on(".*", subclaims("The tower is in Berlin."), tag="hiss:decompose")
        llm.on(".*", steps(("Where is the Eiffel Tower?", False, "Berlin?")), tag="hiss:subclaim1")
        llm.on(".*", json.dumps({"answer": "It stands in Paris."}), tag="hiss:answer1")
        llm.on(".*", verdict("false"), tag="hiss:verdict")
        config = {} if drop is None else {"drop_result_urls_with": drop}
        method = HissMethod(
            llm=llm, config=config, sources={"web": InMemorySource(docs, name="web")}
        )
        result = await method.check(CLAIM)
        assert {e.document.id for e in result.evidence} == shown
        answer = llm.calls_tagged("hiss:answer1")[0].messages[-1].content
        assert ("FALSE: the tower" in answer) is ("fc" in shown)


async def test_the_worked_examples_are_in_the_role_text_of_the_step_prompts():
    """examples: true (the default) shows HiSS's 4 worked claims, as the release's prompt
    does, in the system text of the decomposition, questioning and verdict prompts (last,
    under the role heading, in the shared layout; first in the paper layout); false shows
    none. The earlier code showed none in any case."""
    from veracity.methods.hiss.examples import hiss_examples

    assert len(hiss_examples()) == 4
    shown = {}
    for layout, examples in (("shared", True), ("paper", True), ("shared", False)):
        llm = ScriptedLLM()
        llm.on(".*", subclaims("The tower is in Berlin."), tag="hiss:decompose")
        llm.queue(
            steps(("Where is the tower?", False, "Berlin?"), done=False),
            steps(("Is Paris in France?", True, "Yes."), done=True),
        )
        llm.on(".*", json.dumps({"answer": "It stands in Paris."}), tag="hiss:answer1")
        llm.on(".*", verdict("false"), tag="hiss:verdict")
        v = await hiss(llm, prompt_layout=layout, examples=examples).check(CLAIM)
        assert v.label == "false"
        shown[layout, examples] = {c.tag: c.messages for c in llm.calls}
    duncan = "Says Thomas Eric Duncan came into the United States with an elevated temperature."
    for tag in ("hiss:decompose", "hiss:subclaim1", "hiss:verdict"):
        user = shown["shared", True][tag][-1].content
        assert user.startswith("Claim to verify:\n<claim>")
        assert user.index("=== Your role ===") < user.index(duncan)
        assert "On LIAR's six-point scale: half-true." in user
        assert all(e.claim in user for e in hiss_examples())
        paper_system = shown["paper", True][tag][0].content
        assert duncan in paper_system and "The Eiffel Tower" not in paper_system
        assert not any(duncan in m.content for m in shown["shared", False][tag])
    assert not any(duncan in m.content for m in shown["shared", True]["hiss:answer1"])


@pytest.mark.data
def test_the_example_claims_come_from_liar_training_split(benchmark_data_dir):
    import csv

    from veracity.methods.hiss.examples import hiss_examples

    with open(benchmark_data_dir / "liar" / "train.tsv", newline="", encoding="utf-8") as f:
        train = {r[0]: (r[1], r[2]) for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}
    for e in hiss_examples():
        assert train[f"{e.id}.json"] == (e.rating, e.claim)
