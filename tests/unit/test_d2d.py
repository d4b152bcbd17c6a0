"""D2D on a scripted model: fixed teams debate in four stages, judges split the points."""

import json

import pytest

from veracity.core.labels import get_label_space
from veracity.core.types import Article, Claim, Document
from veracity.methods.base import MethodConfigError
from veracity.methods.d2d import D2DMethod
from veracity.methods.d2d.judging import label_for_share, score_model
from veracity.methods.d2d.roles import schedule
from veracity.testing import InMemorySource, ScriptedLLM

DOCS = [
    Document(id="eiffel", title="Eiffel Tower", text="The Eiffel Tower stands in Paris, France."),
    Document(id="berlin", title="Berlin", text="Berlin is the capital of Germany."),
]
CLAIM = Claim(text="The Eiffel Tower is in Berlin.")
DIMENSIONS = ("accuracy", "source_reliability", "reasoning", "clarity", "ethics")


def turn_text(request):
    """Each speaker says who it is, so the transcript shows who saw what."""
    return f"{request.tag.split(':')[0]} speaks."


def scripted(points=(1, 2, 0, 3, 1), summary="The negative team showed the tower is in Paris."):
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"domain": "geography"}), tag="d2d:domain")
    llm.on(".*", lambda r: f"An expert in geography ({r.tag.split(':')[-1]}).", tag="d2d:profile")
    for dim, aff in zip(DIMENSIONS, points, strict=True):
        reply = json.dumps({"reason": f"{dim} favours a side.", "affirmative": aff})
        llm.on(".*", reply, tag=f"judge:{dim}")
    llm.on(".*", summary, tag="judge:summary")
    llm.on(".*", turn_text)  # every debate turn
    return llm


async def test_a_full_debate_in_four_stages_scored_by_five_judges():
    llm = scripted()
    method = D2DMethod(llm=llm, sources={"web": InMemorySource(DOCS, name="web")})
    verdict = await method.check(CLAIM)
    assert verdict.error is None and verdict.label == "FAKE"
    # 7 points a judge: the affirmative team got 1 + 2 + 0 + 3 + 1 = 7 of 35
    assert verdict.metadata["affirmative_points"] == 7
    assert verdict.metadata["negative_points"] == 28
    assert verdict.score == pytest.approx(7 / 35)
    assert verdict.rationale == "The negative team showed the tower is in Paris."
    assert verdict.metadata["domain"] == "geography" and len(verdict.metadata["profiles"]) == 8
    # opening, rebuttal, one free exchange, closing; the affirmative speaks first each time
    order = [(t["phase"], t["speaker"]) for t in verdict.metadata["transcript"]]
    assert order == [
        (phase, f"{side}_{phase}")
        for phase in ("opening", "rebuttal", "free", "closing")
        for side in ("affirmative", "negative")
    ]
    # 1 domain + 8 profiles + 8 turns + 5 judges + 1 summary
    assert verdict.usage.llm_calls == 23 and verdict.usage.searches == 1
    assert verdict.evidence[0].document.id == "eiffel"


async def test_speakers_see_their_stance_the_evidence_and_the_debate_so_far():
    llm = scripted()  # the paper's layout: the persona leads the system message
    await D2DMethod(
        llm=llm,
        config={"prompt_layout": "paper"},
        sources={"web": InMemorySource(DOCS, name="web")},
    ).check(CLAIM)
    neg_closing = llm.calls_tagged("negative_closing")[0]
    system, user = neg_closing.messages[0].content, neg_closing.messages[-1].content
    assert "closing speaker of the negative team" in system and "field of geography" in system
    assert "Paris, France" in user and '<passage id="1">' in user
    assert "affirmative_closing speaks." in user  # the turn just before, in the transcript
    assert "<profile>" in user and "An expert in geography" not in system  # fenced, not system
    free = llm.calls_tagged("affirmative_free")[0].messages[-1].content
    assert "Free debate, exchange 1" in free
    assert "<opponent>\nnegative_rebuttal speaks.\n</opponent>" in free
    judge = llm.calls_tagged("judge:ethics")[0]
    assert "ethical responsibility" in judge.messages[0].content
    assert "negative_closing speaks." in judge.messages[-1].content
    assert judge.json_schema["properties"]["affirmative"]["maximum"] == 7


async def test_shared_layout_opens_every_prompt_with_the_input_and_evidence():
    """prompt_layout: shared (the default): one system note for the whole check, the input
    and evidence first, the debate so far next, the persona last; the verdict is the
    paper layout's."""
    verdicts, calls = {}, {}
    for layout in ("paper", "shared"):
        llm = scripted()
        verdicts[layout] = await D2DMethod(
            llm=llm, config={"prompt_layout": layout}, sources={"web": InMemorySource(DOCS)}
        ).check(CLAIM)
        calls[layout] = llm.calls
    assert verdicts["shared"].label == verdicts["paper"].label
    assert verdicts["shared"].score == verdicts["paper"].score
    shared = [c for c in calls["shared"] if "d2d:profile" not in (c.tag or "")]
    assert len({c.messages[0].content for c in shared}) == 1  # the same system message
    assert "closing speaker" not in shared[0].messages[0].content
    users = [c.messages[-1].content for c in shared]
    opening = users[0][: users[0].index("</news>")]
    assert all(u.startswith(opening) and '<passage id="1">' in u for u in users)
    closing = llm.calls_tagged("negative_closing")[0].messages[-1].content
    assert closing.index("affirmative_closing speaks.") < closing.index("<profile>")
    persona = closing.index("=== Your role ===")
    assert closing.index("closing speaker of the negative team") > persona
    judge = llm.calls_tagged("judge:ethics")[0].messages[-1].content
    assert judge.index("negative_closing speaks.") < judge.index("ethical responsibility")
    debate = closing[: closing.index("affirmative_closing speaks.")]
    assert judge.startswith(debate)  # the judges extend the last speaker's prompt


async def test_the_team_with_more_points_wins_in_two_labels():
    real = await D2DMethod(llm=scripted(points=(4, 4, 4, 3, 3)), config={"profiles": False}).check(
        CLAIM
    )
    assert real.label == "REAL" and real.score == pytest.approx(18 / 35)
    fake = await D2DMethod(llm=scripted(points=(4, 3, 4, 3, 3)), config={"profiles": False}).check(
        CLAIM
    )
    assert fake.label == "FAKE" and fake.score == pytest.approx(17 / 35)
    space = get_label_space("real_fake")
    assert label_for_share(space, 0.5) is None


async def test_a_tied_debate_abstains_with_the_scores():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"reason": "even", "affirmative": 3}), tag="judge:accuracy")
    llm.on(".*", "a turn")
    verdict = await D2DMethod(
        llm=llm, config={"profiles": False, "points": 6, "dimensions": ["accuracy"]}
    ).check(CLAIM)
    assert verdict.label is None and verdict.abstained
    assert "3 and the negative team 3 of 6" in verdict.abstain_reason
    assert not llm.calls_tagged("judge:summary")  # nothing to explain


def test_three_labels_read_the_share_of_points():
    space = get_label_space("true_half_false")
    assert label_for_share(space, 30 / 35) == "TRUE"
    assert label_for_share(space, 17 / 35) == "HALF-TRUE"
    assert label_for_share(space, 5 / 35) == "FALSE"
    assert label_for_share(space, 0.25) is None  # exactly between HALF-TRUE and FALSE
    toe = get_label_space("true_uncertain_false")  # a space with score bands
    assert label_for_share(toe, 0.5) == "uncertain"


async def test_without_evidence_or_profiles_it_argues_from_knowledge():
    llm = scripted()
    method = D2DMethod(llm=llm, config={"profiles": False, "free_rounds": 2})
    verdict = await method.check(Article(title="Moon landing faked", body="It was staged."))
    assert verdict.metadata["evidence_setting"] == "none" and verdict.evidence == []
    assert not llm.calls_tagged("d2d:domain") and not llm.calls_tagged("d2d:profile")
    phases = [t["phase"] for t in verdict.metadata["transcript"]]
    assert phases.count("free") == 4  # two exchanges
    assert "Evidence:" not in llm.calls_tagged("affirmative_opening")[0].messages[-1].content


async def test_given_evidence_is_read_and_retrieved_needs_a_source():
    llm = scripted()
    claim = CLAIM.model_copy(update={"evidence": [DOCS[0]]})
    verdict = await D2DMethod(llm=llm, config={"profiles": False}).check(claim)
    assert verdict.metadata["evidence_setting"] == "given" and verdict.usage.searches == 0
    with pytest.raises(MethodConfigError, match="needs a source"):
        D2DMethod(llm=llm, config={"evidence": "retrieved"})
    assert [n.name for n in D2DMethod.source_needs({"evidence": "retrieved"})] == ["web"]
    assert D2DMethod.source_needs({}) == []


def test_schedule_and_score_schema():
    rounds = schedule(0).rounds()
    assert [r.phase for r in rounds] == ["opening", "rebuttal", "closing"]
    assert rounds[0].order == (("affirmative_opening",), ("negative_opening",))
    model = score_model(7)
    with pytest.raises(ValueError):
        model.model_validate({"reason": "r", "affirmative": 8})


async def test_a_failed_evidence_search_is_the_verdicts_error():
    from veracity.retrieval.base import SourceUnreachable

    bad = InMemorySource([], name="web", fail_with=SourceUnreachable("web", "down"))
    llm = scripted()
    verdict = await D2DMethod(llm=llm, sources={"web": bad}).check(CLAIM)
    assert verdict.label is None and "down" in verdict.error
    assert not llm.calls  # no debate over evidence that never came
