"""FacTool and FactCheck-GPT on a scripted model: claims from the shared extraction
stage, queries, retrieval, then agreement verification (FacTool) or per-passage stances
aggregated (FactCheck-GPT); the input's label is the conjunction of its claims."""

import json

import pytest

from veracity.core.types import Claim, Document
from veracity.methods.factcheck_gpt import FactCheckGPTMethod
from veracity.methods.factcheck_gpt.method import aggregate, by_stances
from veracity.methods.factcheck_gpt.passages import in_turn, rank_for_query, windows
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
    llm.on(".*", claims(*FACTS), tag="factool:claims:extract")
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
    assert all(q.top_k == 5 for q in source.queries)  # the release keeps 5 snippets a query
    # one extraction call over the whole input (no shared-stage calls)
    assert len(llm.calls_tagged("factool:claims")) == 1
    assert verdict.usage.llm_calls == 5
    shown = llm.calls_tagged("factool:c2:verify")[0].messages[-1].content
    assert '<evidence id="1">' in shown and "border of Nepal" in shown
    assert verdict.rationale.startswith("Mount Everest lies in India.")
    # each claim carries the span of the sentence it came from
    assert verdict.metadata["claims"][1]["spans"] == [(0, len(CLAIM.text))]


def factool_script(c2_verify):
    llm = ScriptedLLM()
    llm.on(".*", claims(*FACTS), tag="factool:claims:extract")
    llm.on(".*", claims(*FACTS), tag="factool:claims:decompose")
    llm.on(".*", factual("true"), tag="factool:c1:verify")
    llm.on(".*", c2_verify, tag="factool:c2:verify")
    llm.on(".*", json.dumps({"queries": ["Everest"]}), tag="factool")
    return llm


async def test_factool_judges_errors_and_counts_a_failed_verification_as_factual():
    """agreement_verification.yaml: the claim is judged for factual errors with the
    evidence as optional help, non-factual only on several contradicting pieces; a claim
    whose verification gives no usable reply counts as factual in the response score."""
    llm = factool_script("no JSON here")
    method = FacToolMethod(llm=llm, sources={"google": InMemorySource(DOCS, name="google")})
    verdict = await method.check(CLAIM)
    assert verdict.error is None and verdict.label == "true" and verdict.score == 1.0
    c2 = verdict.metadata["claims"][1]
    assert c2["factual"] is True and c2["verified"] is False
    prompt = " ".join(m.content for m in llm.calls_tagged("factool:c1:verify")[0].messages)
    assert "factual error" in prompt and "several pieces of evidence contradict" in prompt
    assert "optional" in prompt
    schema = llm.calls_tagged("factool:c1:verify")[0].json_schema
    assert schema["properties"]["factuality"]["description"] == "the claim has no factual error"
    extract = llm.calls_tagged("factool:claims:extract")[0].messages
    assert "fewer than 15 words" in extract[-1].content and "Resolve every pronoun" in " ".join(
        m.content for m in extract
    )


async def test_factool_old_behaviour_stays_as_options():
    """criterion: evidence_backed, failed_verification: error and claim_extraction: shared
    are our rules before issue 40."""
    llm = factool_script("no JSON here")
    method = FacToolMethod(llm=llm, sources={"google": InMemorySource(DOCS, name="google")})
    method.config = method.config.model_copy(
        update={"criterion": "evidence_backed", "failed_verification": "error",
                "claim_extraction": "shared", "top_k": 3}
    )  # fmt: skip
    verdict = await method.check(CLAIM)
    assert verdict.error is not None
    assert llm.calls_tagged("factool:claims:decompose")
    assert not llm.calls_tagged("factool:claims:extract")
    prompt = llm.calls_tagged("factool:c1:verify")[0].messages[-1].content
    assert "true when the evidence backs the claim" in prompt


LONG = [
    Document(
        id=f"long{n}",
        title="Everest facts",
        text=" ".join(f"Fact {i} of list {n} about Everest and Nepal." for i in range(1, 17)),
    )
    for n in (1, 2)
]
GPT = {"ranker": "hashing", "evidence": "passages"}


def gpt_method(llm, **config):
    source = InMemorySource([*DOCS, *LONG], name="google")
    method = FactCheckGPTMethod(llm=llm, sources={"google": source})
    method.config = method.config.model_copy(update={**GPT, **config})
    return method


def gpt_script(**replies):
    llm = ScriptedLLM()
    llm.on(".*", claims(*FACTS), tag="factcheck_gpt:claims:decompose")
    llm.on(".*", claims(*FACTS), tag="factcheck_gpt:claims:decontextualise")
    llm.on(".*", claims("factual", "factual"), tag="factcheck_gpt:claims:checkworthy")
    for tag, reply in replies.items():
        llm.on(".*", reply, tag=f"factcheck_gpt:{tag.replace('_', ':')}")
    llm.on(".*", json.dumps({"queries": ["Mount Everest"]}), tag="factcheck_gpt")
    return llm


def verified(value: bool) -> str:
    return json.dumps({"reasoning": "Compared.", "error": "none" if value else "wrong country",
                       "correction": "fixed", "factuality": value})  # fmt: skip


async def test_factcheck_gpt_verifies_each_claim_over_ranked_passages():
    """The release (src/verify.py): one reply per claim over all its passages decides;
    no stance is asked. The passages are five-sentence windows of each result, two
    sentences apart, at most three a result and five a claim (src/retrieve.py)."""
    llm = gpt_script(c1_verify=verified(True), c2_verify=verified(False))
    verdict = await gpt_method(llm).check(CLAIM)
    assert verdict.label == "false" and verdict.score == 0.5 and verdict.error is None
    got = [(c["decided_by"], c["holds"], c["error"]) for c in verdict.metadata["claims"]]
    assert got == [("verified", True, "none"), ("verified", False, "wrong country")]
    assert not llm.calls_tagged("factcheck_gpt:c1:stance")
    shown = llm.calls_tagged("factcheck_gpt:c2:verify")[0].messages[-1].content
    assert '<passage id="5">' in shown and '<passage id="6">' not in shown
    passages = [e.document for e in verdict.evidence if e.note.startswith("claim c2")]
    assert len(passages) == 5 and len({d.id for d in passages}) == 5
    windows_of = [d.text.count("about Everest") for d in passages if d.id.startswith("long")]
    assert windows_of and set(windows_of) == {5}  # whole five-sentence windows
    # extraction, queries (two samples a claim), verification
    assert verdict.usage.llm_calls == 3 + 2 * 2 + 2


async def test_factcheck_gpt_falls_back_to_stances_one_support_makes_true():
    """An unusable verification reply falls back to 3-way stances, one call per passage;
    one supporting passage makes the claim true (verify_by_stance), whatever refutes."""
    stances = iter(["refute", "support", "refute", "irrelevant", "refute"])
    llm = gpt_script(
        c1_verify=verified(True),
        c2_verify="I cannot answer in JSON.",
        c2_stance=lambda _r: json.dumps({"stance": next(stances)}),
    )
    verdict = await gpt_method(llm).check(CLAIM)
    c2 = verdict.metadata["claims"][1]
    assert c2["decided_by"] == "stances" and c2["holds"] is True
    assert c2["stances"] == ["refute", "support", "refute", "irrelevant", "refute"]
    assert len(llm.calls_tagged("factcheck_gpt:c2:stance")) == 5
    assert verdict.label == "true"
    schema = llm.calls_tagged("factcheck_gpt:c2:stance")[0].json_schema
    assert schema["properties"]["stance"]["enum"] == ["support", "refute", "irrelevant"]


def test_stance_fallback_rule_needs_one_support():
    assert by_stances(["refute", "refute", "support"])
    assert not by_stances(["refute", "irrelevant"]) and not by_stances([])


async def test_factcheck_gpt_weighted_stances_keeps_the_old_rule():
    """``verdict_rule: weighted_stances`` with ``evidence: snippets`` is our rule before
    issue 40: one 4-way stance call per claim over its snippets, weights summed."""
    llm = gpt_script(
        c1_stance=json.dumps({"stances": ["support", "irrelevant", "irrelevant"]}),
        c2_stance=json.dumps({"stances": ["irrelevant", "refute", "support"]}),
    )
    method = gpt_method(llm, verdict_rule="weighted_stances", evidence="snippets", top_k=3)
    verdict = await method.check(CLAIM)
    assert verdict.label == "false" and verdict.error is None
    got = [(c["stances"], c["holds"]) for c in verdict.metadata["claims"]]
    assert got[0] == (["support", "irrelevant", "irrelevant"], True) and got[1][1] is False
    stance = llm.calls_tagged("factcheck_gpt:c2:stance")[0]
    assert stance.json_schema["properties"]["stances"]["maxItems"] == 3
    assert not llm.calls_tagged("factcheck_gpt:c1:verify")
    notes = [e.note for e in verdict.evidence]
    assert "claim c2: refute" in notes and "claim c1: support" in notes


def test_stances_lean_to_support_or_not():
    assert aggregate(["support", "refute", "partial"])
    assert not aggregate(["support", "refute"])
    assert not aggregate([]) and not aggregate(["irrelevant"])


async def test_passages_are_ranked_windows_taken_in_turn():
    doc = Document(id="d", text="Alpha one. Beta two. Gamma three. Delta four. Epsilon five.")
    cut = windows(doc, size=2, stride=2, max_sentence_chars=250)
    assert [(p.first, p.last, p.text) for p in cut] == [
        (0, 1, "Alpha one. Beta two."), (2, 3, "Gamma three. Delta four."),
        (4, 5, "Epsilon five."),
    ]  # fmt: skip
    assert [p.text for p in windows(doc, 2, 2, max_sentence_chars=11)] == [
        "Alpha one. Beta two.", "Delta four."
    ]  # fmt: skip
    ranked = await rank_for_query("Delta four", [doc], ranker="hashing", size=2, stride=1,
                                  max_sentence_chars=250, per_result=2, per_query=5)  # fmt: skip
    assert ranked[0].text == "Gamma three. Delta four."  # then the best not overlapping it
    assert len(ranked) == 2 and ranked[1].first not in (2, 3) and ranked[1].last not in (2, 3)
    a, b = [[ranked[0], ranked[1]]], [[ranked[1]]]
    assert [p.text for p in in_turn(a + b, 5)] == [ranked[0].text, ranked[1].text]


async def test_factcheck_gpt_samples_queries_twice_from_a_prompt_with_six_examples():
    """The release (src/retrieve.py) samples its questions twice at temperature 0.7 from a
    prompt with 6 worked examples and searches their union; the earlier code made one
    call at the method's temperature with no examples and searched what it wrote."""
    from veracity.methods.factcheck_gpt.examples import query_examples

    assert len(query_examples()) == 6
    llm = ScriptedLLM()
    for step in ("decompose", "decontextualise"):
        llm.on(".*", claims(*FACTS), tag=f"factcheck_gpt:claims:{step}")
    llm.on(".*", claims("factual", "factual"), tag="factcheck_gpt:claims:checkworthy")
    for c in ("c1", "c2"):
        llm.on(".*", verified(True), tag=f"factcheck_gpt:{c}:verify")
    llm.queue(
        json.dumps({"queries": ["How tall is Everest?", "Where is Everest?"]}),
        json.dumps({"queries": ["Where is  Everest?", "Who first climbed Everest?"]}),
        json.dumps({"queries": ["Everest in Nepal?"]}),
        json.dumps({"queries": ["Everest in Nepal?"]}),
    )
    verdict = await gpt_method(llm).check(CLAIM)
    first = verdict.metadata["claims"][0]["queries"]
    assert first == ["How tall is Everest?", "Where is Everest?", "Who first climbed Everest?"]
    asked = llm.calls_tagged("factcheck_gpt:c1:queries")
    assert len(asked) == 2 and {c.temperature for c in asked} == {0.7}
    assert [c.seed for c in asked] == [0, 1]
    system = asked[0].messages[0].content
    assert all(e.claim in system for e in query_examples())
    assert "Who pays the 3.8% tax when a home is sold?" in system
    assert verdict.usage.searches == 3 + 1
    old = {"query_rounds": 1, "query_temperature": 0.0, "query_examples": False}
    llm = gpt_script(c1_verify=verified(True), c2_verify=verified(True))
    await gpt_method(llm, **old).check(CLAIM)
    asked = llm.calls_tagged("factcheck_gpt:c1:queries")
    assert len(asked) == 1 and "Affordable Care Act" not in asked[0].messages[0].content


@pytest.mark.data
def test_factcheck_gpt_query_examples_come_from_liar_training_split(benchmark_data_dir):
    import csv

    from veracity.methods.factcheck_gpt.examples import query_examples

    with open(benchmark_data_dir / "liar" / "train.tsv", newline="", encoding="utf-8") as f:
        train = {r[0]: r[2] for r in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}
    for e in query_examples():
        assert train[f"{e.id}.json"] == e.claim
