"""AdSent on a scripted model: the judge reads the neutral rewrite, never the original."""

import json

from veracity.core.types import Claim
from veracity.methods.adsent import AdSentMethod
from veracity.testing import ScriptedLLM, ScriptedReply

CLAIM = Claim(text="OUTRAGEOUS!!! Crooked officials secretly raised taxes by 40% overnight!")
NEUTRAL = "Officials raised taxes by 40% in one day."


async def test_the_judge_sees_only_the_neutral_rewrite():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"neutral": NEUTRAL}), tag="adsent:neutralise")
    answer = json.dumps({"reasoning": "No such rise happened.", "label": "false"})
    llm.on(".*", ScriptedReply(answer, at='false"'), tag="adsent:judge")
    v = await AdSentMethod(llm=llm).check(CLAIM)
    assert v.label == "false" and v.usage.llm_calls == 2
    assert v.metadata["neutral"] == NEUTRAL and v.rationale == "No such rise happened."
    first = llm.calls_tagged("adsent:neutralise")[0].messages[-1].content
    judged = llm.calls_tagged("adsent:judge")[0].messages[-1].content
    assert "OUTRAGEOUS" in first
    assert NEUTRAL in judged and "OUTRAGEOUS" not in judged and "Crooked" not in judged
    stages = [e.data for e in v.trace.events if e.kind == "stage" and e.name == "adsent"]
    assert any(s.get("step") == "neutralised" and s["text"] == NEUTRAL for s in stages)


async def test_an_empty_rewrite_is_the_error():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"neutral": ""}), tag="adsent:neutralise")
    v = await AdSentMethod(llm=llm).check(CLAIM)
    assert v.label is None and "StructuredOutputError" in v.error
