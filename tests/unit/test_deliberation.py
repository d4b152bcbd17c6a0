import pytest

from veracity.core import context
from veracity.core.labels import get_label_space
from veracity.deliberation import (
    INSUFFICIENT,
    Consensus,
    Debate,
    Debater,
    FixedRounds,
    JudgeDecides,
    JudgeDecision,
    LLMJudge,
    ProbabilityStop,
    Role,
    Schedule,
    Transcript,
    verdict_fields,
)
from veracity.llm.base import user
from veracity.testing import ScriptedLLM, ScriptedReply

REAL_FAKE = get_label_space("real_fake")


def build(state, role, phase, round_no):
    """Prompt: the role, phase, round and the transcript so far."""
    return [
        user(
            f"ROLE={role.name} PHASE={phase} ROUND={round_no}\n"
            f"{state.materials.get('claim', '')}\n{state.transcript.render()}"
        )
    ]


def judge_prompt(state):
    return [user(f"JUDGE ROUND={state.round}\n{state.transcript.render()}")]


def _verdict(v, reason="r", alternatives=None):
    return ScriptedReply(f'{{"reason": "{reason}", "verdict": "{v}"}}', alternatives, at=v)


async def test_sequential_order_and_ternary_judge_stops_when_decided():
    llm = ScriptedLLM()
    llm.on(r"ROLE=pro PHASE=argument ROUND=(\d)", lambda r: f"pro says {r.tag}")
    llm.on(r"ROLE=con", lambda r: f"con answers {r.tag}")
    llm.queue(
        _verdict(INSUFFICIENT), _verdict(INSUFFICIENT), _verdict("FAKE", "con was convincing")
    )
    judge = LLMJudge("judge", llm, REAL_FAKE, judge_prompt, allow_insufficient=True)
    debate = Debate(
        [Debater(Role(name="pro"), llm, build), Debater(Role(name="con"), llm, build)],
        Schedule.uniform("argument", [["pro"], ["con"]], max_rounds=5),
        JudgeDecides(judge),
        REAL_FAKE,
        materials={"claim": "CLAIM"},
    )
    with context.check_context() as ctx:
        result = await debate.run()
    assert result.rounds_run == 3 and result.decision.label == "FAKE"
    assert [t.speaker for t in result.transcript.turns] == ["pro", "con"] * 3
    # con speaks after pro in the same round and sees pro's new argument
    con_round1 = llm.calls_tagged("con:argument:1")[0].messages[-1].content
    assert "pro says pro:argument:1" in con_round1
    assert [e.name for e in ctx.trace.of_kind("agent_turn")] == ["pro", "con"] * 3
    fields = verdict_fields(result, REAL_FAKE)
    assert fields["label"] == "FAKE" and fields["rationale"] == "con was convincing"


async def test_still_insufficient_at_round_cap_abstains_without_final_judge():
    llm = ScriptedLLM(default="an argument")
    llm.on("JUDGE", _verdict(INSUFFICIENT))
    judge = LLMJudge("judge", llm, REAL_FAKE, judge_prompt, allow_insufficient=True)
    final = LLMJudge("final", llm, REAL_FAKE, judge_prompt)
    debate = Debate(
        [Debater(Role(name="pro"), llm, build), Debater(Role(name="con"), llm, build)],
        Schedule.uniform("argument", [["pro"], ["con"]], max_rounds=2),
        JudgeDecides(judge),
        REAL_FAKE,
        final_judge=final,
    )
    result = await debate.run()
    assert result.rounds_run == 2 and result.decision is None
    assert not llm.calls_tagged("final")
    fields = verdict_fields(result, REAL_FAKE)
    assert fields["abstained"] and "insufficient after 2 rounds" in fields["abstain_reason"]


def _s2mad(llm, early=False, rounds=2):
    stances = REAL_FAKE.labels
    speakers = [
        Debater(Role(name="pro"), llm, build, stances=stances),
        Debater(Role(name="con"), llm, build, stances=stances),
    ]

    def plan(r, last):
        return ("initial" if r == 0 else "update"), [["pro", "con"]]

    return Debate(
        speakers,
        Schedule(plan, max_rounds=rounds + 1, first_round=0),
        Consensus(["pro", "con"], early=early),
        REAL_FAKE,
        final_judge=LLMJudge("judge", llm, REAL_FAKE, judge_prompt),
    )


def _arg(stance, text="because"):
    return f'{{"argument": "{text}", "stance": "{stance}"}}'


async def test_concurrent_group_members_do_not_see_each_others_turn():
    llm = ScriptedLLM()
    llm.on("ROLE=pro", _arg("REAL", "pro-text"))
    llm.on("ROLE=con", _arg("FAKE", "con-text"))
    llm.on("JUDGE", _verdict("REAL"))
    result = await _s2mad(llm).run()
    pro0 = llm.calls_tagged("pro:initial:0")[0].messages[-1].content
    assert "con-text" not in pro0
    pro1 = llm.calls_tagged("pro:update:1")[0].messages[-1].content
    assert "con-text" in pro1  # round 1 sees round 0 of both
    assert result.rounds_run == 3 and result.decision.judge == "judge"


async def test_consensus_at_last_round_skips_the_judge():
    llm = ScriptedLLM()
    llm.on("ROLE=pro", _arg("FAKE"))
    llm.on("ROLE=con", _arg("FAKE"))
    result = await _s2mad(llm).run()
    assert result.decision.label == "FAKE" and result.decision.judge == "consensus"
    assert result.rounds_run == 3 and not llm.calls_tagged("judge")


async def test_early_consensus_option_stops_at_first_agreement():
    llm = ScriptedLLM()
    llm.on("ROLE=pro", _arg("REAL"))
    llm.on("ROLE=con", _arg("REAL"))
    result = await _s2mad(llm, early=True).run()
    assert result.rounds_run == 1 and result.decision.label == "REAL"


async def test_fixed_rounds_with_opening_rebuttal_closing_and_final_judge():
    llm = ScriptedLLM(default="arg")
    llm.on("JUDGE", _verdict("REAL", alternatives={"REAL": 0.6, "FAKE": 0.2}))
    debate = Debate(
        [Debater(Role(name="a"), llm, build), Debater(Role(name="b"), llm, build)],
        Schedule.opening_rebuttal_closing([["a", "b"]], max_rounds=4),
        FixedRounds(),
        REAL_FAKE,
        final_judge=LLMJudge("judge", llm, REAL_FAKE, judge_prompt),
    )
    result = await debate.run()
    phases = [t.phase for t in result.transcript.turns if t.speaker == "a"]
    assert phases == ["opening", "rebuttal", "rebuttal", "closing"]
    assert result.decision.probabilities == pytest.approx({"REAL": 0.75, "FAKE": 0.25})
    fields = verdict_fields(result, REAL_FAKE)
    assert fields["score"] == pytest.approx(0.75) and fields["confidence"] == pytest.approx(0.75)


class ScriptedSignal(ProbabilityStop):
    def __init__(self, margins, confidences, **kw):
        super().__init__(**kw)
        self.margins = list(margins)
        self.confidences = list(confidences)

    async def signal(self, state):
        return self.margins.pop(0), {"source": "test"}

    async def provisional(self, state):
        return JudgeDecision(label="FAKE", confidence=self.confidences.pop(0), round=state.round)


@pytest.mark.parametrize(
    ("margins", "confidences", "rounds"),
    [
        ([0.5, 0.5, 0.5], [0.95, 0.95, 0.95], 1),  # both thresholds met at once
        ([0.5, 0.5, 0.5], [0.6, 0.95, 0.95], 2),  # confident only after round 2
        ([-0.2, 0.1, -1.0], [0.99, 0.99, 0.99], 3),  # stop margin never high enough
    ],
)
async def test_probability_stop_needs_both_thresholds(margins, confidences, rounds):
    llm = ScriptedLLM(default="arg")
    debate = Debate(
        [Debater(Role(name="a"), llm, build)],
        Schedule.opening_rebuttal_closing([["a"]], max_rounds=3),
        ScriptedSignal(margins, confidences, tau_s=0.2, tau_v=0.9),
        REAL_FAKE,
    )
    result = await debate.run()
    assert result.rounds_run == rounds and result.decision.label == "FAKE"
    assert [c.data["stop_margin"] for c in result.checks] == margins[:rounds]


def test_schedule_and_speaker_validation():
    llm = ScriptedLLM()
    with pytest.raises(ValueError, match="unknown speakers"):
        Debate(
            [Debater(Role(name="a"), llm, build)],
            Schedule.uniform("x", [["a", "ghost"]], 2),
            FixedRounds(),
            REAL_FAKE,
        )
    with pytest.raises(ValueError, match="unique"):
        Debate(
            [Debater(Role(name="a"), llm, build), Debater(Role(name="a"), llm, build)],
            Schedule.uniform("x", [["a"]], 2),
            FixedRounds(),
            REAL_FAKE,
        )
    with pytest.raises(ValueError, match="at least one round"):
        Schedule.uniform("x", [["a"]], 0)


async def test_the_builder_places_the_persona_and_empty_turns_are_flagged():
    """A debater sends its builder's prompt as it is: where the persona goes is the
    builder's choice (a method's prompt layout, `veracity.prompt_layout`)."""
    llm = ScriptedLLM(default="   ")
    debater = Debater(Role(name="scientist", persona="You weigh evidence."), llm, build)
    debate = Debate([debater], Schedule.uniform("x", [["scientist"]], 1), FixedRounds(), REAL_FAKE)
    with context.check_context() as ctx:
        result = await debate.run()
    assert [m.role for m in llm.calls[0].messages] == ["user"]
    assert "You weigh evidence." not in llm.calls[0].messages[0].content
    assert result.transcript.turns[0].data["empty"] is True
    assert ctx.trace.of_kind("error")[0].data["error"] == "empty argument"


def test_transcript_render_and_queries():
    t = Transcript()
    from veracity.deliberation import Turn

    t.add(Turn(round=1, phase="opening", speaker="pro", text="A", stance="REAL"))
    t.add(Turn(round=1, phase="opening", speaker="con", text="B"))
    t.add(Turn(round=2, phase="rebuttal", speaker="pro", text="C"))
    assert t.last("pro").text == "C" and t.last("pro", before_round=2).text == "A"
    assert t.rounds == [1, 2]
    text = t.render(names={"pro": "Politician"}, up_to_round=1)
    assert text.splitlines() == ["--- Round 1 (opening) ---", "Politician [REAL]: A", "Con: B"]


async def test_probability_stop_with_stop_early_off_records_but_runs_every_round():
    llm = ScriptedLLM(default="arg")
    policy = ScriptedSignal([0.9, 0.9, 0.9], [0.99, 0.99, 0.99], tau_s=0.2, tau_v=0.9)
    policy.stop_early = False
    debate = Debate(
        [Debater(Role(name="a"), llm, build)],
        Schedule.opening_rebuttal_closing([["a"]], max_rounds=3),
        policy,
        REAL_FAKE,
    )
    result = await debate.run()
    assert result.rounds_run == 3 and result.decision.label == "FAKE"
    assert [c.data["thresholds_met"] for c in result.checks] == [True, True, True]
    assert [c.stop for c in result.checks] == [False, False, True]


async def test_probability_stop_can_skip_the_signal_after_the_last_round():
    class NoLastSignal(ScriptedSignal):
        signal_last_round = False

    llm = ScriptedLLM(default="arg")
    policy = NoLastSignal([-1.0, -1.0], [0.5, 0.5, 0.7], tau_s=0.0, tau_v=0.0)
    debate = Debate(
        [Debater(Role(name="a"), llm, build)],
        Schedule.opening_rebuttal_closing([["a"]], max_rounds=3),
        policy,
        REAL_FAKE,
    )
    result = await debate.run()
    assert result.rounds_run == 3 and policy.margins == []  # only two signals were read
    assert result.checks[-1].data["stop_margin"] is None
    assert result.checks[-1].reason == "last round" and result.decision.confidence == 0.7


async def test_lazy_probability_stop_asks_for_a_decision_only_when_the_signal_allows_a_stop():
    class Counting(ScriptedSignal):
        asked: list[int]

        async def provisional(self, state):
            self.asked.append(state.round)
            return await super().provisional(state)

    llm = ScriptedLLM(default="arg")
    policy = Counting([-0.5, 0.5, 0.0], [0.95, 0.95], tau_s=0.2, tau_v=0.9, lazy=True)
    policy.asked = []
    debate = Debate(
        [Debater(Role(name="a"), llm, build)],
        Schedule.opening_rebuttal_closing([["a"]], max_rounds=3),
        policy,
        REAL_FAKE,
    )
    result = await debate.run()
    assert result.rounds_run == 2 and policy.asked == [2]
    assert result.checks[0].data["confidence"] is None and not result.checks[0].stop


def test_a_judge_reason_that_is_only_a_label_is_not_shown_as_the_rationale():
    # issue 41: RADAR's rationale line read "TRUE" under a FALSE verdict (the judge's
    # reason field held only a label)
    from veracity.deliberation.debate import judge_rationale

    assert judge_rationale("con was convincing", "FAKE", REAL_FAKE) == "con was convincing"
    contradicting = judge_rationale(" real. ", "FAKE", REAL_FAKE)
    assert contradicting.startswith("The judge ruled FAKE") and "contradicts" in contradicting
    assert "beyond the label" in judge_rationale("FAKE", "FAKE", REAL_FAKE)
    assert judge_rationale("", "REAL", REAL_FAKE) == "The judge ruled REAL and gave no reason."
