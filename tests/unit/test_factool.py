"""FacTool and FactCheck-GPT on a scripted model: claims from the shared extraction
stage, queries, retrieval, then agreement verification (FacTool) or per-passage stances
aggregated (FactCheck-GPT); the input's label is the conjunction of its claims."""

import json

from veracity.core.types import Claim, Document
from veracity.methods.factcheck_gpt import FactCheckGPTMethod
from veracity.methods.factcheck_gpt.method import aggregate
from veracity.methods.factool import FacToolMethod
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="everest", title="Everest", text="Mount Everest is 8849 metres high."),
    Document(id="nepal", title="Nepal", text="Everest lies on the border of Nepal and China."),
]
CLAIM = Claim(text="Mount Everest, 8849 metres high, lies in India.")
FACTS = ["Mount Everest is 8849 metres high.", "Mount Everest lies in India."]


def claims(*items):
    return json.dumps({"claims": list(items)})


def factual(value):
    text = json.dumps({"reasoning": "Compared.", "error": "none" if value == "true" else
                       "wrong country", "correction": "fixed", "factuality": value})  # fmt: skip
    return ScriptedReply(text, at=f'{value}"')


async def test_factool_verifies_each_claim_against_its_searches():
    llm = ScriptedLLM()
    llm.on(".*", claims(*FACTS), tag="factool:claims:decompose")
    llm.on(".*", factual("true"), tag="factool:c1:verify")
    llm.on(".*", factual("false"), tag="factool:c2:verify")
    llm.on(".*", json.dumps({"queries": ["Everest height", "Everest height metres"]}),
           tag="factool:c1:queries")  # fmt: skip
    llm.on(".*", json.dumps({"queries": ["Everest country"]}), tag="factool:c2:queries")
    source = InMemorySource(DOCS, name="google")
    verdict = await FacToolMethod(llm=llm, sources={"google": source}).check(CLAIM)
    assert verdict.label == "false" and verdict.score == 0.5
    got = [(c["id"], c["factual"], c["error"]) for c in verdict.metadata["claims"]]
    assert got == [("c1", True, "none"), ("c2", False, "wrong country")]
    assert [q.text for q in source.queries] == [
        "Everest height", "Everest height metres", "Everest country"
    ]  # fmt: skip
    # decomposition only (no decontextualisation or check-worthiness calls)
    assert not llm.calls_tagged("factool:claims:decontextualise")
    assert verdict.usage.llm_calls == 5
    shown = llm.calls_tagged("factool:c2:verify")[0].messages[-1].content
    assert '<evidence id="1">' in shown and "border of Nepal" in shown
    assert verdict.rationale.startswith("Mount Everest lies in India.")


def gpt_script(stances_c2):
    llm = ScriptedLLM()
    llm.on(".*", claims(*FACTS), tag="factcheck_gpt:claims:decompose")
    llm.on(".*", claims(*FACTS), tag="factcheck_gpt:claims:decontextualise")
    llm.on(".*", claims("factual", "factual"), tag="factcheck_gpt:claims:checkworthy")
    llm.on(".*", json.dumps({"stances": ["support", "irrelevant"]}), tag="factcheck_gpt:c1:stance")
    llm.on(".*", json.dumps({"stances": stances_c2}), tag="factcheck_gpt:c2:stance")
    llm.on(".*", json.dumps({"queries": ["Mount Everest"]}), tag="factcheck_gpt")
    return llm


async def test_factcheck_gpt_aggregates_passage_stances_per_claim():
    llm = gpt_script(["irrelevant", "refute"])
    source = InMemorySource(DOCS, name="google")
    verdict = await FactCheckGPTMethod(llm=llm, sources={"google": source}).check(CLAIM)
    assert verdict.label == "false" and verdict.error is None
    got = [(c["stances"], c["holds"]) for c in verdict.metadata["claims"]]
    assert got == [(["support", "irrelevant"], True), (["irrelevant", "refute"], False)]
    # every extraction step ran; one stance call per claim over its passages
    assert len(llm.calls_tagged("factcheck_gpt:claims:checkworthy")) == 1
    stance = llm.calls_tagged("factcheck_gpt:c2:stance")[0]
    assert stance.json_schema["properties"]["stances"]["maxItems"] == 2
    notes = [e.note for e in verdict.evidence]
    assert "claim c2: refute" in notes and "claim c1: support" in notes


async def test_factcheck_gpt_every_claim_supported_is_true():
    llm = gpt_script(["partial", "support"])
    source = InMemorySource(DOCS, name="google")
    verdict = await FactCheckGPTMethod(llm=llm, sources={"google": source}).check(CLAIM)
    assert verdict.label == "true" and verdict.score == 1.0


def test_stances_lean_to_support_or_not():
    assert aggregate(["support", "refute", "partial"])
    assert not aggregate(["support", "refute"])
    assert not aggregate([]) and not aggregate(["irrelevant"])
