"""Document scores that mean what they say (issue 40, items 8-12): FActScore's factuality,
one rule for a checked claim's support, extraction that reads the question and the
sentence's neighbourhood, de-duplication that keeps contradictions, and the headline
answer accuracy with check-worthiness scored over the annotated claims."""

from __future__ import annotations

import json
import math

import pytest

from veracity.core.types import Claim, Document
from veracity.documents import DocumentChecker, from_text
from veracity.documents.annotate import view
from veracity.documents.report import ClaimOutcome, factscore, length_penalty, summarise
from veracity.evaluation.batch import document_totals
from veracity.evaluation.document_metrics import document_metrics, headline
from veracity.evaluation.document_task import _outcome_row
from veracity.evidence.claims import ClaimExtractor, ExtractedClaim, ExtractionConfig, dedupe
from veracity.llm.client import ManagedLLM
from veracity.methods.base import BaseMethod
from veracity.methods.safe import SafeMethod
from veracity.testing import InMemorySource, ScriptedLLM


class Fixed(BaseMethod):
    """Answers every claim with the label (and score) its text names, e.g. ``[false 0.67]``."""

    name = "fixed"
    default_labels = "true_false"
    input_kinds = ("claim",)

    async def run(self, item, ctx):
        if "[abstain]" in item.text:
            return self.verdict(label=None, abstained=True, abstain_reason="no evidence")
        label, _, score = item.text.split("[", 1)[1].split("]", 1)[0].partition(" ")
        return self.verdict(label=label, score=float(score) if score else None)


def plain(llm, **config):
    off = {"decompose": False, "decontextualise": False, "checkworthiness": False}
    return ClaimExtractor(ManagedLLM(llm), ExtractionConfig(**{**off, **config}))


def _claim(n: int) -> ExtractedClaim:
    return ExtractedClaim(id=f"c{n}", text=f"c{n}", atomic=f"c{n}", spans=[(0, 1)], sentence=0)


# ------------------------------------------------------------------ 8: FActScore


async def _report(text: str):
    llm = ScriptedLLM()
    return await DocumentChecker(Fixed(llm), plain(llm)).report(from_text(text))


async def test_factuality_is_factscore_per_document_macro_averaged_with_the_penalty():
    # a: 1 supported of its 4 facts (two refuted, one abstained on); b: 3 of 3
    a = await _report("One [true]. Two [false]. Three [abstain]. Four [false].")
    b = await _report("Five [true]. Six [true]. Seven [true].")
    s = a.summary
    assert (s.factuality, s.supported_share_of_decided) == (0.25, pytest.approx(1 / 3))
    assert s.factuality_penalised == pytest.approx(0.25 * math.exp(1 - 10 / 4))
    assert length_penalty(11) == 1.0 and length_penalty(10) == 1.0
    a.summary.dropped_unanchored, b.summary.dropped_unanchored = 2, 1
    batch = document_totals([a, b])
    assert batch.dropped_unanchored == 3  # the claims no sentence anchored, summed too
    # macro: (1/4 + 3/3) / 2, not the pooled 4 supported of 7 facts nor 4 of 6 decided
    assert batch.factuality == pytest.approx(0.625)
    assert batch.factuality_penalised == pytest.approx(
        (0.25 * math.exp(1 - 10 / 4) + math.exp(1 - 10 / 3)) / 2
    )
    assert batch.respond_ratio == 1.0 and batch.supported_share_of_decided == pytest.approx(4 / 6)
    none = factscore([(1, 3, 4), (3, 3, 3), (0, 0, 0)])
    assert (none.documents, none.responded) == (3, 2)
    assert none.respond_ratio == pytest.approx(2 / 3) and none.factuality == pytest.approx(0.625)
    assert none.facts_per_response == 3.5


# ------------------------------------------------------------------ 9: one rule for support


async def test_the_label_decides_support_in_the_report_the_views_and_the_metrics():
    # SAFE-like: 2 of 3 sub-facts held (score 0.67) but the conjunction's label is false
    report = await _report("Curie won three prizes [false 0.67]. Curie was Polish [true 0.5].")
    refuted, supported = report.claims
    assert (refuted.support, supported.support) == ("refuted", "supported")
    assert (report.summary.refuted, report.summary.supported) == (1, 1)
    shown = view(report)
    assert [r.verdict for r in shown.claims] == ["refuted", "supported"]  # the colours
    legend = dict(shown.legend)
    assert "label" in legend["refuted"] and "label" in legend["supported"]
    rows = [_outcome_row(o) for o in report.claims]
    assert [r["truth"] for r in rows] == ["false", "true"]  # the metrics read the same


async def test_a_middle_label_is_mixed_and_not_supported():
    llm = ScriptedLLM()

    class Half(Fixed):
        default_labels = "true_half_false"

    report = await DocumentChecker(Half(llm), plain(llm)).report(from_text("X [HALF-TRUE 0.9]."))
    assert report.claims[0].support == "mixed" and report.summary.factuality == 0.0
    assert _outcome_row(report.claims[0])["truth"] is None


# ------------------------------------------------------------------ 10: question, window


LONG = " ".join(f"Sentence number {n} says fact {n}." for n in range(1, 13))


async def test_extraction_sees_the_question_and_the_sentences_around_the_one_split():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"claims": []}), tag="claims:decompose")
    split = plain(llm, decompose=True, window_sentences=2, mode="sentence")
    checker = DocumentChecker(Fixed(llm), split)
    question = "Which facts do the sentences state?"
    await checker.report(from_text(LONG, question=question))
    prompt = llm.calls_tagged("claims:decompose:5")[0].messages[-1].content
    assert question in prompt
    assert "fact 4." in prompt and "fact 8." in prompt  # two sentences either side of 6
    assert "fact 3." not in prompt and "fact 9." not in prompt and "fact 12." not in prompt
    assert "[…]" in prompt  # text left out is marked


async def test_a_claim_handed_over_atomic_is_not_split_again_by_the_method():
    llm = ScriptedLLM()
    llm.on(".*", json.dumps({"reasoning": "ok", "rating": "SUPPORTED"}), tag="safe:c1:rate")
    llm.on(".*", json.dumps({"query": "Curie prizes"}), tag="safe:c1")
    web = InMemorySource([Document(id="d", text="Curie won two prizes.")], name="web")
    method = SafeMethod(llm=llm, config={"max_searches": 1}, sources={"web": web})
    text = "Marie Curie, born in Warsaw, won two Nobel Prizes."
    report = await DocumentChecker(method, plain(llm)).report(from_text(text))
    assert not llm.calls_tagged("safe:facts")  # SAFE did not decompose it again
    facts = report.claims[0].verdict.metadata["facts"]
    assert [f["text"] for f in facts] == [text] and report.claims[0].support == "supported"
    # on its own, the same method still splits its input
    llm.on(".*", json.dumps({"claims": ["Marie Curie won two Nobel Prizes."]}), tag="safe:facts")
    await method.check(Claim(text=text))
    assert llm.calls_tagged("safe:facts:decompose")


# ------------------------------------------------------------------ 11: de-duplication


def test_dedupe_keeps_claims_that_differ_in_a_negation_a_number_or_a_name():
    def texts(*items: str) -> list[str]:
        found = [
            ExtractedClaim(id="", text=t, atomic=t, spans=[(i, i + 1)], sentence=i)
            for i, t in enumerate(items)
        ]
        return [c.text for c in dedupe(found, 0.8)[0]]

    profit = (
        "The company did report a profit in 2020.",
        "The company did not report a profit in 2020.",
    )
    assert texts(*profit) == list(profit)
    people = (
        "The city has a population of 2.1 million.",
        "The city has a population of 2.2 million.",
    )
    assert texts(*people) == list(people)
    names = (
        "The prize was won by Marie Curie in Paris.",
        "The prize was won by Pierre Curie in Paris.",
    )
    assert texts(*names) == list(names)
    # a true repeat is still merged
    same = (
        "The city has a population of 2.1 million.",
        "The city has a population of 2.1 million people.",
    )
    assert texts(*same) == [same[0]]


# ------------------------------------------------------------------ 12: headline, worth


def test_the_headline_is_accuracy_with_abstentions_as_misses():
    names = [name for name, _ in headline({"extraction.recall": 0.5, "response.accuracy": 0.4})]
    first = next(n for n in names if "accuracy" in n)
    assert first.startswith("answer accuracy (abstentions and errors count as misses)")
    assert dict(headline({"extraction.recall": 0.5, "response.accuracy": 0.4}))[first] == 0.4


class _Record:
    def __init__(self, task):
        from veracity.core.types import Usage, Verdict

        self.gold = self.gold_original = "true"
        self.predicted, self.status, self.latency_s = "true", "ok", 1.0
        self.verdict = Verdict(
            label="true", label_space="true_false", method="direct", usage=Usage(llm_calls=1),
            metadata={"document_task": task},
        )  # fmt: skip
        self.usage = self.verdict.usage


def test_checkworthiness_is_scored_over_every_annotated_claim_not_the_matched_ones():
    # two annotated claims: a factual one the extraction found, and an opinion it did not
    # extract at all but that the check-worthiness step calls factual when asked
    gold = [
        {"text": "a", "label": "true", "category": "factual", "checkworthy": True,
         "check": None, "predicted_category": "factual"},
        {"text": "b", "label": None, "category": "opinion", "checkworthy": False,
         "check": None, "predicted_category": "factual"},
    ]  # fmt: skip
    extracted = [{"status": "checked", "truth": "true", "checkworthy": True}]
    task = {"matcher": "lexical", "similarity": [[0.9, 0.0]], "gold": gold,
            "extracted": extracted}  # fmt: skip
    worth = document_metrics([_Record(task)], 0.5).checkworthiness
    assert worth["claims"] == 2 and worth["f1_factual"] == pytest.approx(2 / 3)
    assert worth["matched_pairs"] == 1 and worth["matched_pairs_f1_factual"] == 1.0


def test_the_metrics_report_factscore_recomputed_from_the_stored_claims():
    rows = [{"status": s, "truth": t, "checkworthy": s != "not_checkworthy"}
            for s, t in [("checked", "true"), ("checked", "false"), ("abstained", None),
                         ("error", None), ("not_checkworthy", None)]]  # fmt: skip
    task = {"matcher": "lexical", "similarity": [[] for _ in rows], "gold": [], "extracted": rows}
    found = document_metrics([_Record(task)], 0.5).factuality
    assert found["factuality"] == 0.25 and found["supported_share_of_decided"] == 0.5
    assert found["respond_ratio"] == 1.0 and found["facts_per_response"] == 4


def test_summarise_counts_only_check_worthy_claims_as_facts():
    outcomes = [ClaimOutcome(claim=_claim(1), status="not_checkworthy")]
    s = summarise(outcomes)
    assert s.factuality is None and s.supported_share_of_decided is None
