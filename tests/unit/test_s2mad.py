"""S2MAD end to end on a scripted model: routing, debate, judge, variants, verdict."""

import pytest
from _s2mad_script import (
    CLAIM,
    THREAD,
    argument,
    comments_in,
    full_script,
    judge,
    make_post,
    scorer,
    subjectivity,
)

from veracity.core.labels import RUMOR
from veracity.core.types import Claim, Post, Stance
from veracity.methods.base import MethodConfigError, load_method
from veracity.methods.s2mad import ANSWER_TO_RUMOR, S2MADConfig, S2MADMethod
from veracity.testing import ScriptedLLM

SUPPORTING = [t for t, s in THREAD.items() if s > 0]
OPPOSING = [t for t, s in THREAD.items() if s < 0]
NONSENSE = "The moon caused it, obviously."
SUBJECTIVE_MARK = "personal expression"
OBJECTIVE_MARK = "could be checked"


def _prompt(llm, tag):
    calls = llm.calls_tagged(tag)
    assert len(calls) == 1, f"{tag}: {len(calls)} calls"
    return calls[0].messages[-1].content


async def _check(llm, post=None, **config):
    return await S2MADMethod(llm=llm, config=config).check(post or make_post())


async def test_consensus_at_the_last_round_gives_the_label_without_a_judge():
    plan = {"agent_p": ["Real", "Real", "Fake"], "agent_n": ["Fake", "Fake", "Fake"]}
    llm = full_script(plan=plan)
    verdict = await _check(llm)
    assert verdict.error is None and verdict.label == "rumor"
    assert verdict.score == 0.0 and verdict.confidence is None and verdict.probabilities is None
    meta = verdict.metadata
    assert meta["decided_by"] == "consensus" and meta["answer"] == "Fake"
    assert "no probability was measured" in verdict.probability_note
    assert not llm.calls_tagged("judge")
    assert "Agent P (Fake)" in verdict.rationale and "Agent N (Fake)" in verdict.rationale
    assert meta["rounds_run"] == 3 and meta["debate_rounds"] == 2


async def test_disagreement_goes_to_the_judge_with_both_final_replies():
    llm = full_script(verdict=judge("Real", {"Real": 0.6, "Fake": 0.2}))
    verdict = await _check(llm)
    assert verdict.label == "non-rumor" and verdict.metadata["decided_by"] == "judge"
    assert verdict.probabilities == pytest.approx({"non-rumor": 0.75, "rumor": 0.25})
    assert verdict.score == pytest.approx(0.75) and verdict.confidence == pytest.approx(0.75)
    assert verdict.rationale == "the judge weighed both sides"
    prompt = _prompt(llm, "judge")
    assert "agent_p round 2 says Real" in prompt and "agent_n round 2 says Fake" in prompt
    assert "round 1 says" not in prompt  # only the last replies


async def test_agents_start_from_their_own_side_and_update_from_the_other():
    llm = full_script(verdict=judge("Fake"))
    verdict = await _check(llm)
    p0, n0 = _prompt(llm, "agent_p:initial:0"), _prompt(llm, "agent_n:initial:0")
    assert all(t in p0 for t in SUPPORTING) and not any(t in p0 for t in OPPOSING)
    assert all(t in n0 for t in OPPOSING) and not any(t in n0 for t in SUPPORTING)
    assert NONSENSE not in p0 + n0  # scored 0: in neither set
    assert p0.index(SUPPORTING[0]) < p0.index(SUPPORTING[1])  # strongest first
    # Round j: own and other's replies of round j-1, never the same round.
    p2 = _prompt(llm, "agent_p:update:2")
    assert "agent_p round 1 says Real" in p2 and "agent_n round 1 says Fake" in p2
    assert "round 2" not in p2 and "critically" in p2
    assert verdict.metadata["P"] == ["r1", "r2", "r3"] and verdict.metadata["N"] == ["r5", "r4"]


@pytest.mark.parametrize("layout", ["shared", "paper"])
async def test_update_prompts_of_a_round_share_all_but_the_speaker_in_the_shared_layout(layout):
    llm = full_script(verdict=judge("Fake"))
    await _check(llm, prompt_layout=layout)
    p2, n2 = _prompt(llm, "agent_p:update:2"), _prompt(llm, "agent_n:update:2")
    p_view, n_view = "agent_p round 1 says Real", "agent_n round 1 says Fake"
    for prompt in (p2, n2):
        assert p_view in prompt and n_view in prompt
    same = next(i for i, (a, b) in enumerate(zip(p2, n2, strict=False)) if a != b)
    if layout == "shared":  # both views in one order; only the closing speaker line differs
        assert p2.index(p_view) < p2.index(n_view) and n2.index(p_view) < n2.index(n_view)
        assert p2[same:].startswith("P: your previous view is Agent P's")
        assert n2[same:].startswith("N: your previous view is Agent N's")
        assert same > p2.index(n_view) + len(n_view)
    else:  # the paper's template: own view first, then the other's
        assert p2.index(p_view) < p2.index(n_view) and n2.index(n_view) < n2.index(p_view)
        assert same < p2.index(p_view)


async def test_evidence_is_p_and_n_with_stance_and_credibility_and_trace_has_every_score():
    llm = full_script(verdict=judge("Fake"))
    verdict = await _check(llm)
    by_id = {e.document.id: e for e in verdict.evidence}
    assert list(by_id) == ["r1", "r2", "r3", "r5", "r4"]
    assert by_id["r1"].stance == Stance.SUPPORTS and by_id["r1"].credibility == pytest.approx(0.9)
    assert by_id["r5"].stance == Stance.REFUTES and by_id["r5"].credibility == pytest.approx(0.95)
    assert by_id["r4"].document.text == "Source? Nothing on the local news."
    assert by_id["r4"].document.metadata["stance_score"] == -0.6
    scores = next(e for e in verdict.trace.events if e.name == "stance_scorer").data["scores"]
    assert scores == {f"r{i}": s for i, s in enumerate(THREAD.values(), 1)}
    assert verdict.metadata["stance_scores"] == scores


@pytest.mark.parametrize(
    ("answer", "family", "mark", "other"),
    [("Yes", "subjective", SUBJECTIVE_MARK, OBJECTIVE_MARK),
     ("No", "non_subjective", OBJECTIVE_MARK, SUBJECTIVE_MARK)],
)  # fmt: skip
async def test_subjectivity_answer_picks_the_prompt_family(answer, family, mark, other):
    llm = full_script(subjective=answer, verdict=judge("Fake"))
    verdict = await _check(llm)
    assert verdict.metadata["prompt_family"] == family
    for tag in ("agent_p:initial:0", "agent_n:initial:0"):
        assert mark in _prompt(llm, tag) and other not in _prompt(llm, tag)
    assert CLAIM in _prompt(llm, "subjectivity") and "Yes or No" in _prompt(llm, "subjectivity")
    decision = [e for e in verdict.trace.events if e.name == "subjectivity"][-1]
    assert decision.data["answer"] == answer


@pytest.mark.parametrize(
    ("family", "mark"),
    [("non_subjective", OBJECTIVE_MARK), ("subjective", SUBJECTIVE_MARK)],
)
async def test_a_fixed_prompt_family_skips_the_subjectivity_question(family, mark):
    llm = full_script(
        subjective="Yes" if family == "non_subjective" else "No", verdict=judge("Fake")
    )
    verdict = await _check(llm, prompt_family=family)
    assert not llm.calls_tagged("subjectivity")
    assert mark in _prompt(llm, "agent_p:initial:0") and mark in _prompt(llm, "agent_n:initial:0")
    assert verdict.metadata["prompt_family"] == family


async def test_without_stance_separation_replies_are_split_at_random_unscored():
    post = make_post({f"reply {i}": 0.5 for i in range(30)})
    llm = full_script(verdict=judge("Fake"))
    verdict = await _check(llm, post, stance_separation=False, top_k=4, seed=7)
    assert not llm.calls_tagged("stance")
    p0, n0 = _prompt(llm, "agent_p:initial:0"), _prompt(llm, "agent_n:initial:0")
    assert "random sample" in p0 and "random sample" in n0
    p_ids, n_ids = verdict.metadata["P"], verdict.metadata["N"]
    assert len(p_ids) == len(n_ids) == 4 and not set(p_ids) & set(n_ids)
    assert all(e.stance == Stance.UNKNOWN and e.credibility is None for e in verdict.evidence)
    assert verdict.metadata["stance_scores"] is None
    again = await _check(
        full_script(verdict=judge("Fake")), post, stance_separation=False, top_k=4, seed=7
    )
    assert again.metadata["P"] == p_ids  # seeded


async def test_without_debate_one_agent_reads_both_sets_and_its_answer_stands():
    llm = full_script(plan={"single_agent": ["Real"]})
    verdict = await _check(llm, debate=False)
    prompt = _prompt(llm, "single_agent:initial:0")
    assert "back the post" in prompt and "dispute the post" in prompt
    assert all(t in prompt for t in SUPPORTING + OPPOSING)
    assert not llm.calls_tagged("agent_p") and not llm.calls_tagged("judge")
    assert verdict.label == "non-rumor" and verdict.metadata["decided_by"] == "single_agent"
    assert verdict.metadata["rounds_run"] == 1 and verdict.rationale.startswith("Single Agent")


async def test_single_agent_can_read_every_reply_without_scoring():
    llm = full_script(plan={"single_agent": ["Fake"]})
    verdict = await _check(llm, debate=False, single_agent_input="all")
    prompt = _prompt(llm, "single_agent:initial:0")
    assert not llm.calls_tagged("stance") and all(t in prompt for t in THREAD)
    assert verdict.label == "rumor" and len(verdict.evidence) == len(THREAD)
    with pytest.raises(MethodConfigError, match="only applies when debate is off"):
        S2MADMethod(config={"single_agent_input": "all"})


async def test_llm_only_baseline_is_one_plain_prompt_over_random_replies():
    llm = full_script(plan={"single_agent": ["Fake"]})
    verdict = await _check(
        llm, debate=False, single_agent_input="random", prompt_family="vanilla", top_k=2
    )  # up to 2 x top_k replies
    prompt = _prompt(llm, "single_agent:initial:0")
    shown = [t for t in THREAD if t in prompt]
    assert len(shown) == 4 and "a random sample" in prompt and "Is this post a rumor?" in prompt
    assert not llm.calls_tagged("stance") and not llm.calls_tagged("subjectivity")
    assert verdict.label == "rumor" and verdict.metadata["prompt_family"] == "vanilla"
    assert verdict.metadata["stance_mode"] == "random"


async def test_early_detection_uses_only_the_first_replies_by_time():
    post = make_post()
    post.replies.reverse()  # stored newest first: the cut must follow the times
    llm = full_script(verdict=judge("Fake"))
    verdict = await _check(llm, post, max_replies_by_time=3)
    scored = [text for _, text in comments_in(_prompt(llm, "stance"))]
    assert scored == list(THREAD)[:3]
    assert verdict.metadata["replies_used"] == 3 and verdict.metadata["replies_total"] == 6
    assert verdict.metadata["N"] == []  # the three earliest replies all back the post


async def test_early_detection_refuses_undated_replies():
    llm = full_script()
    refused = await _check(llm, make_post(dated=False), max_replies_by_time=2)
    assert refused.label is None and "needs reply times" in refused.error  # recorded, no crash
    assert refused.error.startswith("InputError")
    assert llm.calls == []
    llm = full_script(verdict=judge("Fake"))  # no cut needed: undated replies are fine
    verdict = await _check(llm, make_post(dated=False), max_replies_by_time=10)
    assert verdict.ok


async def test_temperatures_reach_the_model():
    llm = full_script(verdict=judge("Fake"))
    await _check(llm)
    debate = [c for c in llm.calls if c.tag.startswith(("agent_", "judge"))]
    assert len(debate) == 7 and {c.temperature for c in debate} == {0.2}  # paper: 0.2
    assert {c.temperature for c in llm.calls_tagged("stance")} == {0.0}
    llm = full_script(verdict=judge("Fake"))
    await _check(llm, temperature=0.7, scorer_temperature=0.3)
    assert {c.temperature for c in llm.calls_tagged("agent_n")} == {0.7}
    assert {c.temperature for c in llm.calls_tagged("judge")} == {0.7}
    assert {c.temperature for c in llm.calls_tagged("stance")} == {0.3}
    assert {c.temperature for c in llm.calls_tagged("subjectivity")} == {0.3}


@pytest.mark.parametrize("rounds", [0, 1, 3])
async def test_number_of_debate_rounds(rounds):
    plan = {"agent_p": ["Real"] * (rounds + 1), "agent_n": ["Real"] * (rounds + 1)}
    llm = full_script(plan=plan)
    verdict = await _check(llm, rounds=rounds)
    assert len(llm.calls_tagged("agent_p")) == rounds + 1
    assert len(llm.calls_tagged("agent_p:update")) == rounds
    assert verdict.label == "non-rumor" and verdict.metadata["debate_rounds"] == rounds


def test_label_mapping_is_explicit():
    assert ANSWER_TO_RUMOR == {"Fake": "rumor", "Real": "non-rumor"}
    assert RUMOR.score("non-rumor") == 1.0 and RUMOR.score("rumor") == 0.0
    with pytest.raises(MethodConfigError, match="works in"):
        S2MADMethod(labels="real_fake")


async def test_post_without_replies_still_debates_on_the_post_alone():
    llm = full_script(verdict=judge("Fake"))
    verdict = await _check(llm, Post(text=CLAIM))
    assert not llm.calls_tagged("stance") and "(none)" in _prompt(llm, "agent_p:initial:0")
    assert verdict.label == "rumor" and verdict.evidence == []


async def test_scoring_failure_is_a_recorded_error_not_a_label():
    llm = ScriptedLLM()
    llm.on(".", "no idea", tag="stance")
    llm.on(".", subjectivity("No"), tag="subjectivity")
    verdict = await _check(llm)
    assert verdict.label is None and "StanceScoringError" in verdict.error
    assert not llm.calls_tagged("agent_p")


async def test_debater_parse_failure_is_a_recorded_error():
    llm = ScriptedLLM()
    llm.on(".", scorer(), tag="stance")
    llm.on(".", subjectivity("No"), tag="subjectivity")
    llm.on(".", argument("Maybe"), tag="agent_p")
    llm.on(".", argument("Fake"), tag="agent_n")
    verdict = await _check(llm)
    assert verdict.label is None and "StructuredOutputError" in verdict.error


async def test_unscored_replies_are_reported_in_the_verdict():
    second = list(THREAD)[1]
    llm = full_script(verdict=judge("Fake"), scores={**THREAD, second: 7.0})
    verdict = await _check(llm)
    # two batched asks, then one with the reply alone
    assert verdict.ok and len(llm.calls_tagged("stance")) == 3
    assert verdict.metadata["stance_errors"] == {"r2": "the score 7.0 is outside [-1, 1]"}
    assert verdict.metadata["stance_counts"] == {"scored": 5, "unscored": 1}
    assert verdict.metadata["P"] == ["r1", "r3"]
    errors = [e for e in verdict.trace.of_kind("error") if e.data.get("reply_id") == "r2"]
    assert len(errors) == 1


def test_config_defaults_and_validation():
    assert S2MADConfig().rounds == 2 and S2MADConfig().temperature == 0.2
    with pytest.raises(MethodConfigError):
        S2MADMethod(config={"top_k": 0})
    with pytest.raises(MethodConfigError):
        S2MADMethod(config={"typo": 1})


async def test_registered_and_posts_only():
    method = load_method("s2mad", llm=ScriptedLLM())
    assert isinstance(method, S2MADMethod) and method.label_space.name == "rumor"
    with pytest.raises(TypeError, match="post"):
        await method.check(Claim(text=CLAIM))


def test_a_debate_without_decision_abstains_with_the_reason():
    from veracity.deliberation import DebateResult, Transcript
    from veracity.methods.s2mad.method import Sides

    method = S2MADMethod(llm=ScriptedLLM())
    result = DebateResult(
        transcript=Transcript(), rounds_run=1, last_round=0, stop_reason="no consensus"
    )
    post = make_post()
    verdict = method.assemble(result, Sides(mode="stance"), "subjective", post, post.replies)
    assert verdict.label is None and verdict.abstained and verdict.abstain_reason == "no consensus"


async def test_a_separate_scorer_model_scores_the_stances():
    scorer_model = ScriptedLLM()
    scorer_model.on(".", scorer(), tag="stance")
    built = []

    def fake_build(section):
        built.append(dict(section))
        return scorer_model

    llm = full_script(verdict=judge("Fake"))
    section = {"backend": "openai", "model": "glm-3-turbo"}
    method = S2MADMethod(llm=llm, config={"scorer_llm": section})
    with pytest.raises(MethodConfigError, match="scorer_llm names its own model"):
        _ = method.scorer_llm  # built directly, with no way to build a model
    # what veracity.runtime gives every method
    method = S2MADMethod(llm=llm, config={"scorer_llm": section}, model_builder=fake_build)
    verdict = await method.check(make_post())
    assert verdict.ok and not llm.calls_tagged("stance")
    assert len(scorer_model.calls_tagged("stance")) == 1
    assert built == [section]
    assert llm.calls_tagged("subjectivity") and llm.calls_tagged("judge")
    with pytest.raises(MethodConfigError, match="no_such_field"):
        S2MADMethod(llm=llm, config={"scorer_llm": {"no_such_field": 1}})
