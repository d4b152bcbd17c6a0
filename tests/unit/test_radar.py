"""RADAR with a scripted model: early stopping, estimators, role line-ups, evidence pool."""

from __future__ import annotations

import datetime as dt

import pytest

from veracity.core.types import Claim, Document
from veracity.llm.base import Capabilities
from veracity.methods.base import MethodConfigError, load_method
from veracity.methods.radar import RadarMethod, RadarSingleMethod
from veracity.retrieval.base import SourceUnreachable
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply
from veracity.testing.radar import ScriptedRound, radar_script

CLAIM = Claim(text="Klitschko auctioned his Olympic medal to help Ukrainian children")
DOCS = [
    Document(
        id=f"d{i}",
        title=f"Report {i}",
        text=f"Klitschko sold the Olympic medal at an auction in 2012; note {i}.",
        published_at=dt.datetime(2012, 5, 1),
    )
    for i in range(4)
]


def source() -> InMemorySource:
    return InMemorySource(DOCS, name="memory")


def plan(*rounds: tuple[str, float, float]) -> dict[str, list[ScriptedRound]]:
    return {"Klitschko": [ScriptedRound(*r) for r in rounds]}


def tags(llm: ScriptedLLM) -> list[str]:
    return [c.tag for c in llm.calls]


def radar(llm, **config) -> RadarMethod:
    return RadarMethod(llm, config, sources={"memory": source()})


# --------------------------------------------------------------------------- stopping


async def test_early_stop_after_round_one_when_both_thresholds_met():
    llm = radar_script(plan(("HALF-TRUE", 0.9, 0.8)))
    verdict = await radar(llm).check(CLAIM)
    assert verdict.label == "HALF-TRUE" and verdict.error is None
    meta = verdict.metadata
    assert meta["rounds_run"] == 1 and meta["stop_reason"] == "thresholds met"
    signal = meta["signals"][0]
    assert signal["stop_margin"] == pytest.approx(0.6)
    assert signal["confidence"] == pytest.approx(0.9) and signal["label"] == "HALF-TRUE"
    assert signal["stop_estimator"] == "logprobs" and signal["judge_estimator"] == "logprobs"
    assert tags(llm)[:2] == ["politician:opening:1", "scientist:opening:1"]
    assert sorted(tags(llm)[2:]) == ["round_judge:1", "stop:1"]  # asked concurrently
    assert meta["tokens"] == verdict.usage.total_tokens > 0
    assert verdict.confidence == pytest.approx(0.9)
    assert verdict.rationale.startswith("weighed the debate")


async def test_low_confidence_keeps_the_debate_going_until_it_is_confident():
    llm = radar_script(plan(("TRUE", 0.5, 0.9), ("FALSE", 0.8, 0.9)))
    verdict = await radar(llm).check(CLAIM)
    assert verdict.metadata["rounds_run"] == 2 and verdict.label == "FALSE"
    first = verdict.metadata["signals"][0]
    assert first["stop"] is False and first["thresholds_met"] is False
    assert first["label"] == "TRUE" and first["confidence"] == pytest.approx(0.5)
    assert "politician:rebuttal:2" in tags(llm)


async def test_stop_margin_below_tau_s_runs_every_round_and_the_last_judge_rules():
    llm = radar_script(plan(("TRUE", 0.99, 0.1), ("TRUE", 0.99, 0.2), ("HALF-TRUE", 0.7, 0.2)))
    verdict = await radar(llm, tau_s=0.0).check(CLAIM)
    assert verdict.metadata["rounds_run"] == 3 and verdict.label == "HALF-TRUE"
    phases = [t["phase"] for t in verdict.metadata["transcript"] if t["speaker"] == "scientist"]
    assert phases == ["opening", "rebuttal", "closing"]
    # the stop agent is not asked after the last round: the debate ends there anyway
    assert "stop:3" not in tags(llm) and verdict.metadata["signals"][2]["stop_margin"] is None
    # with s < τ_s the round judge cannot end the debate, so it is not asked (lazy_judge)
    assert [t for t in tags(llm) if "judge" in t] == ["round_judge:3"]
    assert verdict.metadata["signals"][0]["confidence"] is None


async def test_without_lazy_judge_the_round_judge_is_asked_every_round():
    llm = radar_script(plan(("TRUE", 0.99, 0.1)))
    verdict = await radar(llm, tau_s=0.0, lazy_judge=False).check(CLAIM)
    assert [t for t in tags(llm) if "judge" in t] == [f"round_judge:{r}" for r in (1, 2, 3)]
    assert verdict.metadata["signals"][0]["label"] == "TRUE"


async def test_early_stop_off_runs_fixed_rounds_with_a_final_judge_and_no_stop_agent():
    llm = radar_script(plan(("FALSE", 0.99, 0.99)))
    verdict = await radar(llm, early_stop=False).check(CLAIM)
    assert verdict.metadata["rounds_run"] == 3 and verdict.label == "FALSE"
    assert not [t for t in tags(llm) if t.startswith(("stop", "round_judge"))]
    assert tags(llm)[-1] == "judge:3" and verdict.metadata["estimator"] is None


async def test_record_signals_runs_every_round_but_records_what_would_have_stopped():
    llm = radar_script(plan(("FALSE", 0.95, 0.9)))
    verdict = await radar(llm, early_stop=False, record_signals=True).check(CLAIM)
    signals = verdict.metadata["signals"]
    assert verdict.metadata["rounds_run"] == 3 and len(signals) == 3
    assert signals[0]["thresholds_met"] and not signals[0]["stop"]
    assert signals[0]["reason"] == "thresholds met; early stopping off"
    rounds = verdict.metadata["tokens_by_round"]["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3]
    assert rounds[0]["stop"] > 0 and rounds[2]["stop"] == 0 and rounds[2]["judge"] > 0


async def test_partial_tokens_give_the_stop_margin_and_forbidden_ones_do_not_count():
    # the answer token's alternatives are partial spellings; " CONT" (a space after the
    # opening quote) is one the constrained schema forbids, so it is left out
    alts = {"ST": 0.7, "CONT": 0.3, " CONT": 0.2}
    odd = ScriptedReply('{"decision": "STOP"}', alts, at="STOP")
    llm = radar_script(
        plan(("TRUE", 0.9, 0.5)), overrides=[(lambda r: r.tag == "stop:1", odd, None)]
    )
    verdict = await radar(llm).check(CLAIM)
    assert verdict.metadata["signals"][0]["stop_margin"] == pytest.approx(0.4, abs=1e-3)


# --------------------------------------------------------------------------- estimators


async def test_backend_without_logprobs_samples_k_answers_and_says_so():
    llm = radar_script(plan(("HALF-TRUE", 0.8, 0.8)), logprobs=False)
    verdict = await radar(llm, samples_k=5).check(CLAIM)
    signal = verdict.metadata["signals"][0]
    assert signal["stop_estimator"] == "sampling" and signal["stop_samples"] == 5
    assert signal["p_stop"] == pytest.approx(0.8) and signal["stop_margin"] == pytest.approx(0.6)
    assert signal["judge_estimator"] == "sampling" and signal["confidence"] == pytest.approx(0.8)
    assert verdict.metadata["estimator"] == "sampling (k=5)"
    samples = [c for c in llm.calls if ":sample" in c.tag]
    assert len(samples) == 10 and all(c.temperature > 0 and not c.logprobs for c in samples)
    assert len({c.seed for c in samples if c.tag.startswith("stop")}) == 5
    assert verdict.metadata["rounds_run"] == 1


async def test_sampling_can_be_chosen_on_a_backend_with_logprobs():
    llm = radar_script(plan(("FALSE", 1.0, 1.0)))
    verdict = await radar(llm, estimator="sampling", samples_k=3).check(CLAIM)
    assert not any(c.logprobs for c in llm.calls)
    assert verdict.metadata["signals"][0]["stop_estimator"] == "sampling"
    assert verdict.metadata["signals"][0]["stop_margin"] == pytest.approx(1.0)


def test_logprobs_estimator_on_a_backend_without_logprobs_is_a_config_error():
    llm = radar_script(plan(("FALSE", 1.0, 1.0)), logprobs=False)
    with pytest.raises(MethodConfigError, match="logprobs"):
        radar(llm, estimator="logprobs")


async def test_unusable_samples_raise_a_recorded_fault_not_a_guess():
    llm = ScriptedLLM(
        capabilities=Capabilities(json_schema=True, logprobs=False, context_window=8192)
    )
    llm.on(lambda r: r.tag.startswith("stop"), '{"decision": "MAYBE"}')
    llm.on(lambda r: "judge" in r.tag, '{"reason": "x", "verdict": "TRUE"}')
    llm.on(lambda r: True, "an argument")
    verdict = await radar(llm, samples_k=2).check(CLAIM)
    assert verdict.label is None and "StructuredOutputError" in verdict.error


# --------------------------------------------------------------------------- roles


async def test_three_agents_journalist_speaks_first_and_the_others_see_its_reply():
    llm = radar_script(plan(("TRUE", 0.5, 0.0)))
    verdict = await radar(llm, agents=3).check(CLAIM)
    order = [t for t in tags(llm) if ":opening:" in t or ":rebuttal:" in t]
    assert order[0] == "journalist:opening:1" and order[3] == "journalist:rebuttal:2"
    politician = llm.calls_tagged("politician:opening:1")[0].messages[-1].content
    assert "Latest argument of the Journalist" in politician and "journalist:" in politician
    assert verdict.metadata["agents"] == ["journalist", "politician", "scientist"]


async def test_four_agents_infer_a_domain_for_the_expert():
    llm = radar_script(plan(("TRUE", 0.5, 0.0)), domain="Sports")
    verdict = await radar(llm, agents=4).check(CLAIM)
    assert tags(llm)[0] == "domain" and verdict.metadata["domain"] == "Sports"
    expert = llm.calls_tagged("domain_expert:rebuttal:2")[0]
    assert "specialist in Sports" in expert.messages[-1].content.split("=== Your role ===")[1]
    for who in ("Journalist", "Politician", "Scientist"):
        assert f"Latest argument of the {who}" in expert.messages[-1].content


async def test_domain_answers_that_are_not_a_short_name_are_re_asked():
    wordy = '{"domain": "the economy of the 1990s in detail"}'
    llm = radar_script(
        plan(("TRUE", 0.5, 0.0)), overrides=[(lambda r: r.tag == "domain", wordy, 1)]
    )
    verdict = await radar(llm, agents=4).check(CLAIM)
    assert verdict.metadata["domain"] == "Economy"
    assert "domain:retry1" in tags(llm)


async def test_position_based_roles():
    llm = radar_script(plan(("FALSE", 0.9, 0.9)))
    verdict = await radar(llm, roles="position", prompt_layout="paper").check(CLAIM)
    assert verdict.metadata["agents"] == ["advocate", "critic"]
    advocate = llm.calls_tagged("advocate:opening:1")[0]
    assert "argue FOR the claim" in advocate.messages[-1].content
    judge = llm.calls_tagged("round_judge:1")[0].messages[0].content
    # the paper's one-line judge (the renderer adds its note on fenced material after it)
    assert judge.startswith("You are an impartial judge who weighs debates about facts.\n")
    assert "Ask yourself" not in judge


async def test_judge_prompts_follow_the_paper_and_the_omission_checklist_is_a_variant():
    llm = radar_script(plan(("FALSE", 0.9, 0.9)))
    await radar(llm, prompt_layout="paper").check(CLAIM)
    system, user = (m.content for m in llm.calls_tagged("round_judge:1")[0].messages)
    assert "families and communities" in system and "leave out context" not in system
    assert "omits context" not in user
    llm = radar_script(plan(("FALSE", 0.9, 0.9)))
    await radar(llm, judge_prompt="omission", prompt_layout="paper").check(CLAIM)
    system, user = (m.content for m in llm.calls_tagged("round_judge:1")[0].messages)
    assert "leave out context" in system and "omits context" in user
    llm = radar_script(plan(("FALSE", 0.9, 0.9)))
    await radar(llm, roles="position", judge_prompt="omission", prompt_layout="paper").check(CLAIM)
    system = llm.calls_tagged("round_judge:1")[0].messages[0].content
    assert "whether a claim is accurate" in system and "leave out context" in system


async def test_shared_layout_opens_every_prompt_of_a_check_alike():
    llm = radar_script(plan(("HALF-TRUE", 0.9, 0.0)))
    await radar(llm, agents=3).check(CLAIM)
    calls = [c for c in llm.calls if c.tag != "domain"]
    assert len({c.tag for c in calls}) >= 5  # three debaters, the stop agent and judges
    systems = {c.messages[0].content for c in calls}
    assert len(systems) == 1 and systems.pop().startswith("Parts of this conversation")
    users = [c.messages[1].content for c in calls]
    material = users[0][: users[0].index("</evidence>") + len("</evidence>")]
    assert CLAIM.text in material and all(u.startswith(material) for u in users)
    # what differs comes after the material: the turn, then the role under its heading
    politician = llm.calls_tagged("politician:opening:1")[0].messages[1].content
    head, role = politician.split("=== Your role ===")
    assert "Opening statement" in head and "role of a politician" in role
    judge = [c for c in calls if "judge" in c.tag][-1].messages[1].content
    assert "=== The debate ===" in judge.split("=== Your role ===")[0]
    assert "judge" in judge.split("=== Your role ===")[1]


async def test_paper_layout_keeps_the_persona_first():
    llm = radar_script(plan(("HALF-TRUE", 0.9, 0.0)))
    await radar(llm, prompt_layout="paper").check(CLAIM)
    politician = llm.calls_tagged("politician:opening:1")[0].messages
    assert politician[0].role == "system" and "role of a politician" in politician[0].content
    assert "=== Your role ===" not in politician[-1].content


async def test_radar_single_is_one_agent_then_the_judge():
    llm = radar_script(plan(("HALF-TRUE", 0.7, 0.0)))
    method = RadarSingleMethod(llm, {"role": "scientist"}, sources={"memory": source()})
    verdict = await method.check(CLAIM)
    assert tags(llm) == ["scientist:opening:1", "judge:1"]
    assert verdict.label == "HALF-TRUE" and verdict.metadata["rounds_run"] == 1
    assert verdict.method == "radar_single"
    # same prompts as the multi-agent opening, without anyone else's argument
    prompt = llm.calls[0].messages[-1].content
    assert "Opening statement" in prompt and "Latest argument" not in prompt


def test_radar_single_config_has_no_debate_knobs_and_checks_the_role():
    with pytest.raises(MethodConfigError, match="tau_s"):
        RadarSingleMethod(ScriptedLLM(), {"tau_s": 0.1}, sources={"m": source()})
    with pytest.raises(MethodConfigError, match="role set"):
        RadarSingleMethod(ScriptedLLM(), {"role": "critic"}, sources={"m": source()})


def test_config_errors():
    with pytest.raises(MethodConfigError, match="agents"):
        radar(ScriptedLLM(), agents=5)
    with pytest.raises(MethodConfigError, match="true_half_false"):
        RadarMethod(ScriptedLLM(), labels="true_false", sources={"memory": source()})
    with pytest.raises(MethodConfigError, match="retrieves its evidence pool"):
        RadarMethod(ScriptedLLM(), {})
    with pytest.raises(MethodConfigError, match="no source named 'web'"):
        radar(ScriptedLLM(), source="web")


def test_registered_under_both_names():
    llm = ScriptedLLM()
    assert isinstance(load_method("radar", llm, {"evidence": "given"}), RadarMethod)
    assert isinstance(load_method("radar_single", llm, {"evidence": "given"}), RadarSingleMethod)


# --------------------------------------------------------------------------- evidence


async def test_retrieval_uses_the_claim_date_as_cutoff_and_numbers_the_pool():
    late = Document(
        id="late", text="Klitschko medal auction story", published_at=dt.datetime(2023, 1, 1)
    )
    src = InMemorySource([*DOCS, late])
    llm = radar_script(plan(("TRUE", 0.9, 0.9)))
    claim = Claim(text=CLAIM.text, date=dt.date(2022, 3, 1))
    verdict = await RadarMethod(llm, {"top_m": 3}, sources={"memory": src}).check(claim)
    assert src.queries[0].before == dt.date(2022, 3, 1) and src.queries[0].top_k == 3
    ids = [e.document.id for e in verdict.evidence]
    assert len(ids) == 3 and "late" not in ids
    assert [e.note.split(";")[0] for e in verdict.evidence] == ["E1", "E2", "E3"]
    assert "cited in the verdict" in verdict.evidence[0].note  # the judge cited [E1]
    prompt = llm.calls[0].messages[-1].content
    assert "[E1] Report" in prompt and "[E3]" in prompt and "[E4]" not in prompt
    assert verdict.usage.searches == 1


async def test_given_evidence_is_used_without_searching():
    src = source()
    llm = radar_script(plan(("TRUE", 0.9, 0.9)))
    gold = [Document(id="g1", text="Gold: the auction took place in 2012.")]
    claim = Claim(text=CLAIM.text, evidence=gold)
    method = RadarMethod(llm, {"evidence": "given"}, sources={"memory": src})
    verdict = await method.check(claim)
    assert not src.queries and [e.document.id for e in verdict.evidence] == ["g1"]
    assert verdict.metadata["evidence_setting"] == "given"
    assert "[E1]: Gold: the auction took place in 2012." in llm.calls[0].messages[-1].content


async def test_given_evidence_setting_with_a_bare_claim_is_an_error_not_a_verdict():
    llm = radar_script(plan(("TRUE", 0.9, 0.9)))
    verdict = await RadarMethod(llm, {"evidence": "given"}).check(CLAIM)
    assert verdict.label is None and "carries none" in verdict.error and not llm.calls


async def test_pool_is_cut_to_the_context_window_and_the_trace_says_how_much():
    long_docs = [
        Document(id=f"L{i}", text=("Klitschko medal " + "detail " * 300).strip()) for i in range(12)
    ]
    llm = radar_script(plan(("TRUE", 0.9, 0.9)))
    llm.capabilities = Capabilities(json_schema=True, logprobs=True, context_window=4096)
    method = RadarMethod(llm, {"max_passage_chars": 1000}, sources={"m": InMemorySource(long_docs)})
    verdict = await method.check(CLAIM)
    pool = verdict.metadata["pool"]
    assert pool["candidates"] == 12 and pool["dropped"] > 0 and pool["shortened"] > 0
    assert len(verdict.evidence) == 12 - pool["dropped"]
    note = next(e for e in verdict.trace.events if e.name == "evidence_pool")
    assert note.data["dropped"] == pool["dropped"] and note.data["context_window"] == 4096
    prompt_chars = max(len(m.content) for c in llm.calls for m in c.messages)
    assert prompt_chars / 4 < 4096


async def test_a_failing_source_becomes_a_verdict_error():
    failing = InMemorySource(DOCS, fail_with=SourceUnreachable("memory", "down"))
    llm = radar_script(plan(("TRUE", 0.9, 0.9)))
    verdict = await RadarMethod(llm, {}, sources={"memory": failing}).check(CLAIM)
    assert verdict.label is None and "down" in verdict.error


async def test_judge_output_that_never_validates_is_an_error_not_a_label():
    bad = '{"reason": "x", "verdict": "MOSTLY"}'
    llm = radar_script(
        plan(("TRUE", 0.9, 0.9)), overrides=[(lambda r: "judge" in r.tag, bad, None)]
    )
    verdict = await radar(llm).check(CLAIM)
    assert verdict.label is None and "StructuredOutputError" in verdict.error


async def test_local_corpus_in_dense_mode_from_the_method_config(tmp_path):
    from veracity.retrieval.local.corpus import build_local_corpus

    build_local_corpus("radar-test", DOCS, mode="dense", embedder="hashing", indexes_dir=tmp_path)
    llm = radar_script(plan(("TRUE", 0.9, 0.9)))
    config = {"corpus": {"index": "radar-test", "indexes_dir": str(tmp_path)}, "top_m": 2}
    verdict = await RadarMethod(llm, config).check(CLAIM)
    assert verdict.error is None and len(verdict.evidence) == 2
    searches = verdict.trace.of_kind("search")
    assert searches and all(e.name == "local:radar-test" for e in searches)
    assert all(e.document.metadata["retrieval_mode"] == "dense" for e in verdict.evidence)


async def test_the_judge_is_told_its_reason_limit_and_its_reply_schema_holds_it():
    def judged(llm):  # the judge's calls: the round judge's, or the final judge's
        return [c for c in llm.calls if "judge" in c.tag]

    llm = radar_script(plan(("FALSE", 0.9, 0.9)))
    assert (await radar(llm, judge_reason_chars=300).check(CLAIM)).error is None
    final = radar_script(plan(("FALSE", 0.99, 0.99)))
    await radar(final, judge_reason_chars=300, early_stop=False).check(CLAIM)
    assert [c.tag for c in judged(llm) + judged(final)] == ["round_judge:1", "judge:3"]
    for call in judged(llm) + judged(final):
        assert "(at most 300 characters)" in call.messages[-1].content
        assert call.json_schema is not None, "the scripted model takes JSON schemas"
        assert call.json_schema["properties"]["reason"]["maxLength"] == 300
    # the default is the paper's "concise" reason at 500 characters, not the shared 1,000
    llm = radar_script(plan(("FALSE", 0.9, 0.9)))
    await radar(llm).check(CLAIM)
    (judge,) = llm.calls_tagged("round_judge:1")
    assert judge.json_schema["properties"]["reason"]["maxLength"] == 500
    assert "(at most 500 characters)" in judge.messages[-1].content
    with pytest.raises(MethodConfigError, match="judge_reason_chars"):
        radar(radar_script(plan()), judge_reason_chars=20)


async def test_the_round_judge_extends_the_stop_agents_prompt_through_the_debate():
    # shared layout: both read the material and then the same debate block, so a server
    # that ran the stop agent computes only the round judge's own instructions
    llm = radar_script(plan(("TRUE", 0.5, 0.9), ("FALSE", 0.8, 0.9)))
    await radar(llm).check(CLAIM)
    for r in (1, 2):
        (stop,) = llm.calls_tagged(f"stop:{r}")
        (judge,) = llm.calls_tagged(f"round_judge:{r}")
        assert stop.messages[0] == judge.messages[0]  # the shared system message
        upto = stop.messages[1].content.index("</debate>") + len("</debate>")
        assert judge.messages[1].content[:upto] == stop.messages[1].content[:upto]
        assert "politician" in stop.messages[1].content[:upto].lower()
    # the paper layout keeps the stop agent's own system text first
    llm = radar_script(plan(("FALSE", 0.9, 0.9)))
    await radar(llm, prompt_layout="paper").check(CLAIM)
    (stop,) = llm.calls_tagged("stop:1")
    assert stop.messages[0].role == "system" and "moderate" in stop.messages[0].content
