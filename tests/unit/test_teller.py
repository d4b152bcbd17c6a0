"""TELLER on a scripted model: yes/no truth values combined by the fixed rule; TELLER's
published question set (the default) and ours (`question_set: ours`)."""

import json

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.teller import TellerMethod
from veracity.methods.teller.method import QUESTIONS, TELLER_QUESTIONS
from veracity.testing import ScriptedLLM, ScriptedReply

CLAIM = Claim(text="The Eiffel Tower is in Berlin.")


def scripted(p_yes):
    llm = ScriptedLLM()
    for atom, p in p_yes.items():
        answer = "yes" if p >= 0.5 else "no"
        reply = ScriptedReply(json.dumps({"answer": answer}),
                              alternatives={"yes": p, "no": 1 - p}, at=f'{answer}"')  # fmt: skip
        llm.on(".*", reply, tag=f"teller:{atom}")
    return llm


async def test_truth_values_make_the_score_and_the_nearest_label():
    p_yes = {"known_facts": 0.1, "factual_error": 0.9, "common_sense": 0.2, "loaded": 0.8,
             "reliable_speaker": 0.1, "missing_context": 0.9}  # fmt: skip
    llm = scripted(p_yes)
    config = {"question_set": "ours"}
    v = await TellerMethod(llm=llm, config=config, labels="true_uncertain_false").check(CLAIM)
    credible = (0.1 + 0.1 + 0.2 + 0.2 + 0.1 + 0.1) / 6
    assert v.score == pytest.approx(credible) and v.label == "false"
    assert v.metadata["atoms"] == pytest.approx(p_yes)
    assert v.usage.llm_calls == len(QUESTIONS) and v.usage.searches == 0
    asked = {c.tag: c.messages[-1].content for c in llm.calls}
    assert "factual error" in asked["teller:factual_error"]


async def test_credible_answers_give_true_and_middling_ones_uncertain():
    good = {a: (0.9 if up else 0.1) for a, _, up in QUESTIONS}
    three = {"config": {"question_set": "ours"}, "labels": "true_uncertain_false"}
    v = await TellerMethod(llm=scripted(good), **three).check(CLAIM)
    assert v.label == "true" and v.score == pytest.approx(0.9)
    middling = {a: 0.5 for a, _, _ in QUESTIONS}
    v = await TellerMethod(llm=scripted(middling), **three).check(CLAIM)
    assert v.label == "uncertain" and v.score == pytest.approx(0.5)


async def test_the_published_question_set_reads_statements_intent_and_reputation():
    """question_set: teller (the default): one context call (TELLER's special questions),
    then P1-P8 with P7 once per statement; each question reads what the release gives it
    (P1, P7, P8 the background information, P5 the intent, P6 the reputation). The
    earlier code asked our six questions only."""
    p_yes = {"p1_true": 0.2, "p2_background": 0.3, "p3_objective": 0.4, "p4_distorted": 0.7,
             "p5_intent": 0.6, "p6_publisher": 0.1, "p7_statement1": 0.1,
             "p7_statement2": 0.9, "p8_false": 0.8}  # fmt: skip
    llm = scripted(p_yes)
    context = {"statements": ["The tower is in Berlin.", "It was built in 1889.", "x", "y"],
               "intent": "To move the landmark", "reputation": "A satirical site"}  # fmt: skip
    llm.on(".*", json.dumps(context), tag="teller:context")
    passage = Document(id="e", title="Eiffel Tower", text="The Eiffel Tower stands in Paris.")
    claim = Claim(text=CLAIM.text, evidence=[passage])
    v = await TellerMethod(llm=llm, config={"max_statements": 2}).check(claim)
    assert v.metadata["question_set"] == "teller"
    assert v.metadata["atoms"] == pytest.approx(p_yes)
    ups = {a: up for a, _, _, up in TELLER_QUESTIONS}
    credible = [p if ups[a.rstrip("12")] else 1 - p for a, p in p_yes.items()]
    assert v.score == pytest.approx(sum(credible) / len(credible))
    assert v.usage.llm_calls == 1 + len(p_yes)
    assert v.metadata["statements"] == ["The tower is in Berlin.", "It was built in 1889."]
    asked = {c.tag: c.messages[-1].content for c in llm.calls}
    assert "To move the landmark" in asked["teller:p5_intent"]
    assert "A satirical site" in asked["teller:p6_publisher"]
    assert "A satirical site" not in asked["teller:p5_intent"]
    assert "It was built in 1889." in asked["teller:p7_statement2"]
    for atom in ("p1_true", "p7_statement1", "p8_false"):
        assert '<passage id="1">' in asked[f"teller:{atom}"]
    assert "stands in Paris" not in asked["teller:p2_background"]
    assert "Is the claim false?" in asked["teller:p8_false"]
