"""ZoFia end to end with a scripted model, fake NER, hashing embedder and in-memory sources."""

import json
import re
from datetime import datetime

import pytest

from veracity.core.types import Article, Claim, Document
from veracity.deliberation import INSUFFICIENT
from veracity.methods.base import MethodConfigError
from veracity.methods.zofia import ZoFiaMethod
from veracity.nlp.embeddings import HashingEmbedder
from veracity.nlp.entities import EntitySpan
from veracity.testing import InMemoryEncyclopedia, InMemorySource, ScriptedLLM, ScriptedReply

ARTICLE = Article(
    title="Jamie Foxx to marry Katie Holmes in Paris",
    body=(
        "Jamie Foxx is preparing to marry Katie Holmes, sources say. "
        "The wedding will reportedly take place in Paris this summer. "
        "Insiders claim Katie Holmes has already chosen her dress."
    ),
    published_at=datetime(2019, 5, 3, 12, 0),
)


class FakeNER:
    name = "fake"

    def __init__(self, names):
        self.names = names  # {surface: confidence}

    def predict(self, text):
        spans = []
        for surface, conf in self.names.items():
            for m in re.finditer(re.escape(surface), text):
                spans.append(
                    EntitySpan(
                        text=surface, label="PERSON", start=m.start(), end=m.end(), confidence=conf
                    )
                )
        return sorted(spans, key=lambda s: s.start)


WEB = [
    Document(
        id="w1",
        title="Foxx rep denies rumours",
        url="https://gossipsite.example/foxx",
        text="A representative for Jamie Foxx denied the engagement to Katie Holmes. "
        "The two were described as casual.",
        published_at=datetime(2019, 4, 1),
    ),
    Document(
        id="w2",
        title="Holmes in Paris",
        url="https://blog.example/holmes",
        text="Katie Holmes visited Paris with Jamie Foxx last year for a film premiere.",
        published_at=datetime(2019, 1, 1),
    ),
    Document(
        id="w3",
        title="After the story",
        url="https://late.example/x",
        text="Jamie Foxx and Katie Holmes split, reports say.",
        published_at=datetime(2019, 6, 1),
    ),
    Document(
        id="w4",
        title="Politifact check",
        url="https://www.politifact.com/x",
        text="Jamie Foxx Katie Holmes wedding rumour rated false.",
        published_at=datetime(2019, 1, 1),
    ),
]
ENCYCLOPEDIA = [
    (
        "Jamie Foxx",
        "American actor, singer and comedian",
        "Jamie Foxx is an American actor. "
        "He won an Academy Award. He is also a singer. He hosts a show.",
    ),
    (
        "Katie Holmes",
        "American actress",
        "Katie Holmes is an American actress. She starred in "
        "Dawson's Creek. She directed films. She lives in New York.",
    ),
]


def _reply(obj, at=None, alternatives=None):
    return ScriptedReply(json.dumps(obj), alternatives=alternatives, at=at)


def scripted(judgments=("FAKE",)):
    llm = ScriptedLLM()
    llm.on(".*", _reply({"analysis": "sensational wording", "judgment": "FAKE"}), tag="linguist")
    llm.on(
        ".*",
        _reply({"domain": "entertainment", "expert": "an entertainment journalist"}),
        tag="expert:triage",
    )
    llm.on(
        ".*",
        _reply(
            {
                "knowledge_concordance": "relies on anonymous insiders",
                "logical_integrity": "leaps from dating to marriage",
                "judgment": "FAKE",
            }
        ),
        tag="expert:analysis",
    )
    llm.on(
        ".*",
        _reply(
            {
                "core_claim": "Jamie Foxx will marry Katie Holmes.",
                "sub_claims": ["The wedding will take place in Paris."],
            }
        ),
        tag="claim_extractor",
    )
    llm.on(
        "Jamie Foxx will marry",
        _reply(
            {
                "label": "Refutes",
                "reason": "a representative denied it",
                "quotes": [
                    "A representative for Jamie Foxx denied the engagement to Katie Holmes."
                ],
            }
        ),
        tag="claim_verifier",
    )
    llm.on(
        "wedding will take place",
        _reply(
            {
                "label": "Not Enough Information",
                "reason": "nothing on a wedding venue",
                "quotes": ["The couple married in Rome in 2018."],
            }
        ),
        tag="claim_verifier",
    )
    llm.on(".*", lambda r: f"pro argument {r.tag}", tag="pro")
    llm.on(".*", lambda r: f"con argument {r.tag}", tag="con")
    for j in judgments:
        llm.queue(
            _reply(
                {"reason": f"ruling {j}", "verdict": j},
                at=f'{j}"}}',
                alternatives={j: 0.7, "REAL" if j == "FAKE" else "FAKE": 0.2},
            )
        )
    return llm


def make(llm, **config):
    return ZoFiaMethod(
        llm=llm,
        config=config,
        sources={"web": InMemorySource(WEB, name="web")},
        encyclopedia=InMemoryEncyclopedia(ENCYCLOPEDIA),
        embedder=HashingEmbedder(),
        ner=FakeNER({"Jamie Foxx": 0.97, "Katie Holmes": 0.95, "Paris": 0.55}),
    )


async def test_full_pipeline_decides_after_judge_asks_for_another_round():
    llm = scripted(judgments=(INSUFFICIENT, "FAKE"))
    method = make(llm)
    verdict = await method.check(ARTICLE)
    assert verdict.label == "FAKE" and verdict.error is None
    # stage 1: threshold 0.8 keeps the two people; SC-MMR picks keywords among them
    query = verdict.metadata["query"]
    assert query["operator"] == "AND" and set(query["keywords"]) <= {"Jamie Foxx", "Katie Holmes"}
    assert query["before"] == "2019-05-03"
    web = method.web
    # cutoff and fact-check exclusion applied: the June story and politifact never come back
    urls = {e.document.url for e in verdict.evidence}
    assert "https://late.example/x" not in urls and "https://www.politifact.com/x" not in urls
    assert web.queries[0].exclude_domains and "politifact.com" in web.queries[0].exclude_domains
    # stage 2: five isolated linguist calls, expert triage + analysis, extraction, 2 checks
    tags = [c.tag for c in llm.calls]
    assert sum(t.startswith("linguist:") for t in tags) == 5
    assert tags.count("claim_extractor") == 1 and tags.count("claim_verifier") == 2
    # the expert sees the Wikipedia summaries (first sentences only)
    expert_prompt = llm.calls_tagged("expert:analysis")[0].messages[-1].content
    assert "Jamie Foxx is an American actor." in expert_prompt
    assert "He hosts a show." not in expert_prompt  # 4th sentence is cut (first 3 only)
    # quotes verified against retrieved passages
    quoted = [e for e in verdict.evidence if e.quote]
    assert [e.quote_verified for e in quoted] == [True, False]
    # debate: 2 rounds, con answers pro's argument of the same round
    assert verdict.metadata["debate_rounds"] == 2
    con1 = llm.calls_tagged("con:argument:1")[0].messages[-1].content
    assert "pro argument pro:argument:1" in con1
    assert verdict.confidence == pytest.approx(0.7 / 0.9)
    kinds = {e.name for e in verdict.trace.events if e.kind == "stage"}
    assert {"zofia:keywords", "zofia:retrieval", "debate"} <= kinds


async def test_the_judge_prompt_extends_the_last_debater_prompt():
    """Shared layout: the round's judge reads the debate as the opponent did, so its prompt
    repeats the opponent's up to the end of the proponent's turn (the part a slot's cache
    can reuse); the round count comes after the debate, not in its heading."""
    from veracity.llm.slots import shared_chars

    llm = scripted(judgments=(INSUFFICIENT, "FAKE"))
    await make(llm).check(ARTICLE)

    def text(tag: str) -> str:
        return "".join(m.content for m in llm.calls_tagged(tag)[0].messages)

    for r in (1, 2):
        con, judge = text(f"con:argument:{r}"), text(f"judge:{r}")
        turn = f"pro argument pro:argument:{r}"
        assert shared_chars(judge, con) >= con.index(turn) + len(turn)
        assert f"The debate has run {r} round" in judge[shared_chars(judge, con) :]


async def test_insufficient_after_max_rounds_abstains():
    llm = scripted(judgments=[INSUFFICIENT] * 2)
    verdict = await make(llm, max_rounds=2).check(ARTICLE)
    assert verdict.label is None and verdict.abstained
    assert "insufficient after 2 rounds" in verdict.abstain_reason


async def test_no_debate_variant_rules_once():
    llm = scripted()
    verdict = await make(llm, debate=False).check(ARTICLE)
    assert verdict.label == "FAKE"
    assert not llm.calls_tagged("pro") and len(llm.calls_tagged("judge")) == 1


async def test_or_and_core_claim_query_variants():
    llm = scripted()
    method = make(llm, operator="OR")
    await method.check(ARTICLE)
    assert method.web.queries[0].operator == "OR"

    llm = scripted()
    method = make(llm, query_mode="core_claim")
    verdict = await method.check(ARTICLE)
    assert method.web.queries[0].text == "Jamie Foxx will marry Katie Holmes."
    assert [c.tag for c in llm.calls].count("claim_extractor") == 1  # reused, not repeated
    assert verdict.label == "FAKE"


async def test_no_retrieval_variant_searches_nothing_and_still_decides():
    llm = scripted()
    method = ZoFiaMethod(
        llm=llm, config={"use_web": False, "use_wikipedia": False}, embedder=HashingEmbedder()
    )
    verdict = await method.check(Claim(text="Jamie Foxx will marry Katie Holmes."))
    assert verdict.label == "FAKE" and verdict.usage.searches == 0
    assert verdict.metadata["retrieval_notes"] == ["retrieval is off in this variant"]


def test_missing_sources_and_refused_labels_are_clear():
    with pytest.raises(MethodConfigError, match="open-web source named 'web'"):
        ZoFiaMethod(llm=ScriptedLLM())
    with pytest.raises(MethodConfigError, match="--source wikipedia=wikipedia"):
        ZoFiaMethod(llm=ScriptedLLM(), sources={"web": InMemorySource([])})
    with pytest.raises(MethodConfigError, match="works in"):
        ZoFiaMethod(
            llm=ScriptedLLM(), config={"use_web": False, "use_wikipedia": False}, labels="rumor"
        )


async def test_wikipedia_source_is_adapted_for_stage_one(tmp_path):
    """A (managed) WikipediaSource becomes an Encyclopedia; lookups are traced as searches."""
    from pathlib import Path

    import httpx
    import respx

    from veracity.core import context
    from veracity.methods.zofia.retrieval import WikipediaEncyclopedia, as_encyclopedia
    from veracity.retrieval.engines.wikipedia import WikipediaSource
    from veracity.retrieval.managed import ManagedSource
    from veracity.testing.contract import http_client_for_tests

    data = Path(__file__).resolve().parents[1] / "data" / "http" / "wikipedia"

    def answer(request):
        params = dict(request.url.params)
        if params.get("generator") == "links":
            return httpx.Response(200, json=json.loads((data / "links_mercury.json").read_text()))
        name = (
            "titles_disambiguation.json"
            if params.get("titles") == "Mercury"
            else ("titles_primary.json")
        )
        return httpx.Response(200, json=json.loads((data / name).read_text()))

    wiki = as_encyclopedia(ManagedSource(WikipediaSource(http=http_client_for_tests(tmp_path))))
    assert isinstance(wiki, WikipediaEncyclopedia)
    with respx.mock, context.check_context() as ctx:
        respx.get("https://en.wikipedia.org/w/api.php").mock(side_effect=answer)
        senses = await wiki.candidates("Mercury")
        doc = await wiki.summary("Jaguar", sentences=2)
    assert [s.title for s in senses][:2] == ["Mercury (element)", "Mercury (planet)"]
    assert all(s.description.strip() for s in senses)
    assert doc.title == "Jaguar" and doc.url and doc.text
    assert ctx.usage.searches == 2
    with pytest.raises(TypeError):
        as_encyclopedia(object())


async def test_a_claim_with_no_passage_is_not_enough_information_without_a_call():
    llm = scripted()
    method = ZoFiaMethod(
        llm=llm,
        config={"debate": False},
        sources={"web": InMemorySource([], name="web")},  # the open web finds nothing
        encyclopedia=InMemoryEncyclopedia(ENCYCLOPEDIA),
        embedder=HashingEmbedder(),
        ner=FakeNER({"Jamie Foxx": 0.97, "Katie Holmes": 0.95}),
    )
    verdict = await method.check(ARTICLE)
    assert verdict.ok and not llm.calls_tagged("claim_verifier")
    turns = [e.data for e in verdict.trace.of_kind("agent_turn") if e.name == "claim_verifier"]
    assert turns and all(t["label"] == "Not Enough Information" for t in turns)
    judge = llm.calls_tagged("judge")[0].messages[-1].content
    assert "no material was retrieved for any claim" in judge
    assert "-> Supports" not in judge and "-> Refutes" not in judge


def test_each_pool_section_keeps_its_share_of_the_budget():
    from veracity.methods.zofia.analysis import (
        DIMENSIONS,
        AnalystReports,
        ClaimCheck,
        ExpertReport,
        ExpertTriage,
        LinguistReport,
    )

    long = "word " * 400
    pool = AnalystReports(
        linguist={k: LinguistReport(analysis=long[:590], judgment="FAKE") for k in DIMENSIONS},
        triage=ExpertTriage(domain="politics", expert="an analyst"),
        expert=ExpertReport(knowledge_concordance="fits", logical_integrity="ok", judgment="REAL"),
        claims=[
            ClaimCheck(
                claim="The bill passed.", core=True, label="Refutes", reason="no", passages=2
            )
        ],
    )
    text = pool.render(600)
    assert len(text) <= 600
    # the short expert and claim sections are whole; the long linguist section is cut
    assert "The bill passed. -> Refutes" in text and "expert judgment: REAL" in text
    assert "[…]" in text.split("Expert analysis")[0]


@pytest.mark.parametrize("variant", ["core_claim", "sentence_salience"])
async def test_sentence_query_rows_change_the_web_query_only(variant):
    llm = scripted()
    method = make(llm, query_mode=variant)
    verdict = await method.check(ARTICLE)
    query = method.web.queries[0]
    assert query.text and not query.keywords  # a sentence-level open-web query
    keywords = next(e for e in verdict.trace.of_kind("stage") if e.name == "zofia:keywords")
    assert {k["text"] for k in keywords.data["keywords"]} >= {"Jamie Foxx", "Katie Holmes"}
    retrieval = next(e for e in verdict.trace.of_kind("stage") if e.name == "zofia:retrieval")
    assert retrieval.data["wiki"]  # Wikipedia is still consulted, as in the full method


async def test_tfidf_row_replaces_entity_acquisition_only():
    llm = scripted()
    method = make(llm, query_mode="tfidf")
    verdict = await method.check(ARTICLE)
    stage = next(e for e in verdict.trace.of_kind("stage") if e.name == "zofia:keywords").data
    assert stage["tfidf"] and stage["salience"]  # hierarchical salience scored the terms
    text = f"{ARTICLE.title}\n\n{ARTICLE.body}".lower()
    assert all(term.lower() in text for term in stage["salience"])  # terms found in the text
    assert all(k["salience"] is not None for k in stage["keywords"])
