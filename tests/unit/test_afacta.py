"""AFaCTA on a scripted model: three reasoning paths vote on the label."""

import json

import pytest

from veracity.core.types import Claim
from veracity.methods.afacta import AfactaMethod
from veracity.testing import ScriptedLLM, ScriptedReply

CLAIM = Claim(text="The Eiffel Tower is in Berlin.")


def scripted(direct, facts, debate):
    llm = ScriptedLLM()
    llm.on(".*", ScriptedReply(json.dumps({"label": direct}), at=f'{direct}"'),
           tag="afacta:direct")  # fmt: skip
    reply = {"facts": "It is in Berlin.", "reasoning": "It is in Paris.", "label": facts}
    llm.on(".*", ScriptedReply(json.dumps(reply), at=f'{facts}"'), tag="afacta:facts")
    reply = {"case_for": "Some say so.", "case_against": "Maps say Paris.",
             "reasoning": "The case against holds.", "label": debate}  # fmt: skip
    llm.on(".*", ScriptedReply(json.dumps(reply), at=f'{debate}"'), tag="afacta:debate")
    return llm


async def test_the_majority_of_three_paths_decides():
    llm = scripted("true", "false", "false")
    v = await AfactaMethod(llm=llm).check(CLAIM)
    assert v.label == "false" and v.usage.llm_calls == 3
    assert v.metadata["votes"] == {"direct": "true", "facts": "false", "debate": "false"}
    assert v.metadata["consistent"] is False
    assert v.probabilities == pytest.approx({"true": 1 / 3, "false": 2 / 3})
    assert v.rationale == "The case against holds."
    schemas = {c.tag: list(c.json_schema["properties"]) for c in llm.calls}
    assert schemas["afacta:direct"] == ["label"]
    assert schemas["afacta:debate"] == ["case_for", "case_against", "reasoning", "label"]


async def test_a_three_way_split_goes_to_the_argued_path():
    llm = scripted("true", "uncertain", "false")
    v = await AfactaMethod(llm=llm, labels="true_uncertain_false").check(CLAIM)
    assert v.label == "false" and v.metadata["consistent"] is False
    assert "tie" in (v.probability_note or "")


async def test_agreeing_paths_are_consistent():
    v = await AfactaMethod(llm=scripted("false", "false", "false")).check(CLAIM)
    assert v.label == "false" and v.metadata["consistent"] is True and v.confidence == 1.0


async def test_shared_layout_opens_the_three_paths_with_the_same_claim_and_labels():
    """prompt_layout: shared (the default): one system note, the claim and the labels first
    in every path's prompt, the path's system text last; the verdict is the paper's."""
    verdicts, calls = {}, {}
    for layout in ("paper", "shared"):
        llm = scripted("true", "false", "false")
        config = {"prompt_layout": layout}
        verdicts[layout] = await AfactaMethod(llm=llm, config=config).check(CLAIM)
        calls[layout] = llm.calls
    assert verdicts["shared"].label == verdicts["paper"].label == "false"
    assert len({c.messages[0].content for c in calls["shared"]}) == 1
    users = [c.messages[-1].content for c in calls["shared"]]
    opening = users[0][: users[0].index("- false:")]  # the claim and the labels
    assert opening.startswith("Claim:\n<input>") and all(u.startswith(opening) for u in users)
    assert all(u.index("=== Your role ===") > u.index("- false:") for u in users)
    assert len({c.messages[0].content for c in calls["paper"]}) == 3
