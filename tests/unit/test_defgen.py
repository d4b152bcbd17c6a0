"""DefGen on a scripted model: definitions, then a deduction, then the label."""

import json

import pytest

from veracity.core.types import Claim
from veracity.methods.defgen import DefGenMethod
from veracity.testing import ScriptedLLM, ScriptedReply

CLAIM = Claim(text="The Eiffel Tower is in Berlin.")


async def test_defines_then_deduces_in_one_call():
    reply = {
        "definitions": "true: every detail holds; uncertain: ...; false: a detail is wrong.",
        "deduction": "The tower is in Paris, so a detail is wrong.",
        "label": "false",
    }
    llm = ScriptedLLM()
    alternatives = {"false": 0.7, "uncertain": 0.2, "true": 0.1}
    llm.on(".*", ScriptedReply(json.dumps(reply), alternatives=alternatives, at='false"'))
    v = await DefGenMethod(llm=llm, labels="true_uncertain_false").check(CLAIM)
    assert v.label == "false" and v.usage.llm_calls == 1 and v.usage.searches == 0
    assert v.probabilities == pytest.approx(alternatives)
    assert v.rationale == reply["deduction"]
    assert v.metadata["definitions"].startswith("true: every detail holds")
    assert list(llm.calls[0].json_schema["properties"]) == ["definitions", "deduction", "label"]
    assert "<input>" in llm.calls[0].messages[-1].content


async def test_a_label_outside_the_space_is_the_error():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"definitions": "d", "deduction": "x", "label": "maybe"}))
    v = await DefGenMethod(llm=llm).check(CLAIM)
    assert v.label is None and "StructuredOutputError" in v.error
