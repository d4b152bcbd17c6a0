"""FOLK on a scripted model: predicates, grounded question-answer pairs, an explained
verdict; and FOLK's stratified sample of HoVer per hop count."""

import json
from pathlib import Path

import pytest

from veracity.core.types import Claim, Document
from veracity.datasets.hover import HOVER
from veracity.evaluation.prepare import select_examples
from veracity.methods.folk import FolkMethod
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(
        id="howard",
        title="Howard University Hospital",
        text="Howard University Hospital is a hospital in Washington, D.C.",
    ),
    Document(id="prov", title="Providence Hospital", text="Providence Hospital was in Mobile."),
]
CLAIM = Claim(text="Howard University Hospital and Providence Hospital are both in Washington.")
PREDICATES = [
    {"predicate": "Location(Howard University Hospital, Washington)",
     "subclaim": "Howard University Hospital is in Washington.",
     "question": "Where is Howard University Hospital?"},
    {"predicate": "Location(Providence Hospital, Washington)",
     "subclaim": "Providence Hospital is in Washington.",
     "question": "Where is Providence Hospital?"},
]  # fmt: skip


def scripted():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"predicates": PREDICATES}), tag="folk:decompose")
    llm.on(".*", json.dumps({"answer": "Washington, D.C."}), tag="folk:answer1")
    llm.on(".*", json.dumps({"answer": "Mobile, Alabama"}), tag="folk:answer2")
    text = json.dumps({"explanation": "The second predicate fails.", "label": "REFUTED"})
    llm.on(".*", ScriptedReply(text, alternatives={"REFUTED": 0.9, "SUPPORTED": 0.1},
                               at='REFUTED"'), tag="folk:predict")  # fmt: skip
    return llm


async def test_predicates_are_grounded_then_combined_into_an_explained_verdict():
    llm = scripted()
    source = InMemorySource(DOCS, name="wikipedia")
    verdict = await FolkMethod(llm=llm, sources={"wikipedia": source}).check(CLAIM)
    assert verdict.label == "REFUTED" and verdict.error is None
    assert verdict.probabilities == pytest.approx({"SUPPORTED": 0.1, "REFUTED": 0.9})
    assert verdict.rationale == "The second predicate fails."
    pairs = verdict.metadata["predicates"]
    assert [p["answer"] for p in pairs] == ["Washington, D.C.", "Mobile, Alabama"]
    # each question was searched as written, and its answer read from those results
    assert [q.text for q in source.queries] == [p["question"] for p in PREDICATES]
    first = llm.calls_tagged("folk:answer1")[0].messages[-1].content
    assert "Howard University Hospital is a hospital" in first and "<results>" in first
    # the prediction sees every predicate with its grounded answer, fenced
    predict = llm.calls_tagged("folk:predict")[0].messages[-1].content
    assert '<predicate id="2">' in predict and "A: Mobile, Alabama" in predict
    assert verdict.usage.llm_calls == 4 and verdict.usage.searches == 2
    calls = [e.data["predicate"] for e in verdict.trace.events if e.kind == "tool_call"]
    assert calls == [1, 2]
    assert {e.document.id for e in verdict.evidence} >= {"howard"}


def _hover_file(folder: Path) -> None:
    rows = []
    for hops in (2, 3):
        for i in range(10):
            label = "SUPPORTED" if i < 4 else "NOT_SUPPORTED"
            rows.append({"uid": f"h{hops}-{i}", "claim": f"Claim {hops} {i}.", "label": label,
                         "num_hops": hops, "supporting_facts": [["A", 0]]})  # fmt: skip
    (folder / "hover").mkdir()
    (folder / "hover" / "hover_dev_first3000.json").write_text(json.dumps(rows))


def test_folk_sample_is_stratified_per_hop_count_and_seeded(tmp_path):
    _hover_file(tmp_path)
    two = HOVER.load("dev", tmp_path, num_hops=2)
    assert len(two) == 10 and {e.metadata["num_hops"] for e in two} == {2}

    def draw(seed):
        return select_examples(two, None, False, seed, per_class=3, class_of=lambda e: e.label)

    first, again = draw(0), draw(0)
    assert [e.id for e in first] == [e.id for e in again]  # the same seed, the same sample
    assert sorted(e.label for e in first) == ["REFUTED"] * 3 + ["SUPPORTED"] * 3
    assert any([e.id for e in draw(seed)] != [e.id for e in first] for seed in range(1, 5))
    with pytest.raises(Exception, match="num_hops must be 2, 3 or 4"):
        HOVER.load("dev", tmp_path, num_hops=5)


async def test_the_decomposition_and_prediction_prompts_carry_the_worked_examples():
    """FOLK's release is few-shot: 8 worked decompositions and 5 worked predictions."""
    from veracity.methods.folk.examples import folk_examples

    ex = folk_examples()
    assert (len(ex.decompose), len(ex.predict)) == (8, 5)
    llm = scripted()
    source = InMemorySource(DOCS, name="wikipedia")
    await FolkMethod(llm=llm, sources={"wikipedia": source}).check(CLAIM)

    def text(tag):
        return "\n".join(m.content for m in llm.calls_tagged(tag)[0].messages)

    decompose, predict = text("folk:decompose"), text("folk:predict")
    assert decompose.count("\nFollow-up question: ") == sum(len(e.predicates) for e in ex.decompose)
    assert all(f"Claim: {e.claim}" in decompose for e in ex.decompose)
    assert all(f"Claim: {e.claim}" in predict for e in ex.predict)
    assert predict.count("\nExplanation: ") == 5
    # shared layout: the claim opens the prompt, the examples (system text) come last
    user = llm.calls_tagged("folk:decompose")[0].messages[-1].content
    assert user.index(CLAIM.text) < user.index(ex.decompose[0].claim)
    llm = scripted()
    await FolkMethod(llm=llm, sources={"wikipedia": source}, config={"examples": False}).check(
        CLAIM
    )
    assert ex.decompose[0].claim not in text("folk:decompose")
