"""TELLER on a scripted model: yes/no truth values combined by the fixed rule."""

import json

import pytest

from veracity.core.types import Claim
from veracity.methods.teller import TellerMethod
from veracity.methods.teller.method import QUESTIONS
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
    v = await TellerMethod(llm=llm, config={"labels": "true_uncertain_false"}).check(CLAIM)
    credible = (0.1 + 0.1 + 0.2 + 0.2 + 0.1 + 0.1) / 6
    assert v.score == pytest.approx(credible) and v.label == "false"
    assert v.metadata["atoms"] == pytest.approx(p_yes)
    assert v.usage.llm_calls == len(QUESTIONS) and v.usage.searches == 0
    asked = {c.tag: c.messages[-1].content for c in llm.calls}
    assert "factual error" in asked["teller:factual_error"]


async def test_credible_answers_give_true_and_middling_ones_uncertain():
    good = {a: (0.9 if up else 0.1) for a, _, up in QUESTIONS}
    three = {"labels": "true_uncertain_false"}
    v = await TellerMethod(llm=scripted(good), config=three).check(CLAIM)
    assert v.label == "true" and v.score == pytest.approx(0.9)
    middling = {a: 0.5 for a, _, _ in QUESTIONS}
    v = await TellerMethod(llm=scripted(middling), config=three).check(CLAIM)
    assert v.label == "uncertain" and v.score == pytest.approx(0.5)
