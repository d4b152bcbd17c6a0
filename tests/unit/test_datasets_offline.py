"""Loader parsing on the miniature data directory in tests/data/datasets (no real data)."""

from __future__ import annotations

from datetime import date, timezone
from pathlib import Path

import pytest

from veracity.core.labels import get_label_space
from veracity.core.types import Article, Claim, Post
from veracity.datasets import (
    BaseDataset,
    DatasetError,
    ExampleList,
    get_dataset,
    list_datasets,
    load_dataset,
)
from veracity.datasets.averitec import article_domain
from veracity.datasets.feverous import strip_wiki_links
from veracity.datasets.scifact import SciFactDataset

FIX = Path(__file__).resolve().parents[1] / "data" / "datasets"

ALL = [(info.name, split) for info in list_datasets(installed_only=True) for split in info.splits]


def load(name: str, split: str | None = None, **kw) -> ExampleList:
    return load_dataset(name, split, data_dir=FIX, **kw)


@pytest.mark.parametrize(("name", "split"), ALL)
def test_every_registered_dataset_parses_its_fixture(name, split):
    ds = get_dataset(name)
    examples = ds.load(split, FIX)
    assert len(examples) >= 1
    space = get_label_space(ds.info.label_space)
    ids = [e.id for e in examples]
    assert len(set(ids)) == len(ids)
    for ex in examples:
        assert ex.label in space.labels
        assert ex.label_space == space.name
        # a document task's answers come as claims (the answer's text), checked claim by claim
        kind = "claim" if ds.info.input_kind == "document" else ds.info.input_kind
        assert ex.input.kind == kind
        assert ex.metadata["split"] == split


def test_registry_lists_every_family():
    names = {info.name for info in list_datasets()}
    expected = {
        "scifact", "liar", "liar_plus", "averitec", "averitec3", "hover", "check_covid",
        "covidfact", "climate_fever", "feverous_s", "factcheck_bench", "factool_qa",
        "fire_bingcheck", "fire_felm_wk", "mermaid_scifact", "mermaid_hover_4hop",
        "politifact_plusplus", "sheepdog_politifact", "gossipcop", "rumoureval2017",
        "politifact_hidden",
    }  # fmt: skip
    assert expected <= names


def test_liar_fields_and_paper_mappings():
    train = load("liar", "train")
    first = train[0]
    assert first.id == "1001"
    assert isinstance(first.input, Claim)
    assert first.input.speaker == "Jane Doe"
    assert first.input.context == "a town-hall meeting"
    assert first.metadata["credit_history"] == {
        "barely_true": 0, "false": 1, "half_true": 2, "mostly_true": 3, "pants_fire": 0,
    }  # fmt: skip
    assert first.metadata["subjects"] == ["education", "libraries"]
    valid = load("liar", "valid")
    assert [e.label for e in valid] == ["half-true", "barely-true", "mostly-true"]
    toe = load("liar", "valid", labels="true_uncertain_false")
    assert [e.label for e in toe] == ["uncertain", "false", "true"]
    assert toe[0].metadata["original_label"] == "half-true"
    assert toe[0].metadata["gold_label_space"] == "liar6"
    radar = load("liar", "valid", labels="true_half_false")
    assert [e.label for e in radar] == ["HALF-TRUE", "FALSE", "HALF-TRUE"]
    binary = load("liar", "valid", labels="true_false")
    assert [e.label for e in binary] == ["true", "false", "true"]
    assert "politifact.com" in get_dataset("liar").info.exclude_domains


def test_liar_plus_justification_is_gold_evidence():
    ex = load("liar_plus")[0]
    assert ex.id == "12134"
    assert ex.input.speaker == "Vicky Hartzler"
    assert ex.metadata["state"] == "Missouri"
    assert ex.evidence[0].id == "12134:justification"
    assert "Hartzler" in ex.evidence[0].text


def test_averitec_dates_evidence_and_leakage_domains():
    examples = load("averitec")
    ex = examples[0]
    assert ex.id == "dev-0"
    assert ex.input.date == date(2021, 3, 5)
    assert ex.input.context == "Facebook"
    assert ex.metadata["exclude_domains"] == ["example-factcheck.org"]
    assert [d.metadata["answer_type"] for d in ex.evidence] == ["Boolean", "Unanswerable"]
    assert ex.evidence[0].url == "https://example.org/report"
    assert "cancelled" in ex.evidence[0].text
    assert examples[1].input.speaker == "A parent"
    assert examples[1].metadata["exclude_domains"] == []
    assert examples[2].metadata["exclude_domains"] == ["factcheck.example.com"]


def test_averitec3_drops_nee_and_maps_to_radar_labels():
    three = load("averitec3")
    assert len(three) == 2
    assert three.skipped == {"Not Enough Evidence (not one of RADAR's three classes)": 1}
    mapped = load("averitec3", labels="true_half_false")
    assert [e.label for e in mapped] == ["FALSE", "HALF-TRUE"]
    with pytest.raises(DatasetError, match="no label map"):
        load("averitec", labels="true_half_false")


def test_article_domain_sees_through_archive_links():
    url = "https://web.archive.org/web/20201130144023/https://checkyourfact.com/2020/x/"
    assert article_domain(url) == "checkyourfact.com"
    assert article_domain("https://www.politifact.com/a") == "politifact.com"
    assert article_domain(None) is None


def test_scifact_labels_rationales_and_corpus():
    examples = load("scifact")
    labels = {e.id: e.label for e in examples}
    assert labels["0"] == "NEI" and labels["2"] == "REFUTED"
    assert sorted(labels.values()) == ["NEI", "REFUTED", "SUPPORTED"]
    contra = next(e for e in examples if e.id == "2")
    assert contra.metadata["original_label"] == "CONTRADICT"
    assert contra.evidence_ids == ["13734012"]
    assert contra.evidence[0].text == "Synthetic sentence 4 of document 13734012."
    assert examples[0].evidence == [] and examples[0].metadata["cited_doc_ids"] == ["31715818"]
    corpus = list(get_dataset("scifact").corpus(FIX))
    assert {d.id for d in corpus} >= {"13734012", "31715818"}
    assert corpus[0].metadata["sentences"][0].startswith("Synthetic sentence 0")
    bare = SciFactDataset(with_evidence_text=False).load(data_dir=FIX)
    assert all(e.evidence == [] for e in bare)


def test_check_covid_evidence_variants_and_toe_mapping():
    dev = load("check_covid", "dev")
    assert len(dev) == 4
    assert [e.metadata["original_label"] for e in dev[:3]] == ["REFUTE", "SUPPORT", "NOTENOUGHINFO"]
    first = dev[0]
    assert first.evidence_ids == ["asnvwu1u"]
    assert [d.id for d in first.evidence] == ["asnvwu1u#0", "asnvwu1u#3"]
    assert first.evidence[1].metadata["type"] == "PRIMARY"
    toe = load("check_covid", "dev", labels="true_uncertain_false")
    assert [e.label for e in toe[:3]] == ["false", "true", "uncertain"]
    assert len(load("check_covid_extracted", "dev")) == 1
    assert len(load("check_covid_composed", "dev")) == 3
    assert load("check_covid_extracted", "dev")[0].metadata["claim_type"] == "extracted"
    corpus = list(get_dataset("check_covid").corpus(FIX))
    assert "asnvwu1u" in {d.id for d in corpus}


def test_covidfact_ids_from_file_and_line():
    examples = load("covidfact")
    assert [e.id for e in examples] == ["COVIDFACT_dataset:1", "COVIDFACT_dataset:2"]
    assert len(examples[0].evidence) == 1  # the blank evidence sentence is not a document
    assert examples[0].metadata["gold_source"] == "https://example.org/a"


def test_climate_fever_four_labels_with_evidence():
    ex = load("climate_fever")[0]
    assert ex.label == "DISPUTED"
    assert [d.metadata["label"] for d in ex.evidence] == ["SUPPORTS", "REFUTES"]
    assert ex.evidence[0].metadata["votes"] == ["SUPPORTS", "SUPPORTS"]


def test_feverous_evidence_lines_lose_wiki_markup():
    ex = load("feverous_s")[0]
    assert ex.label == "SUPPORTED"
    assert ex.evidence[0].title == "Glenn–Thompson Plantation"
    assert "[[" not in ex.evidence[0].text and "Pittsview" in ex.evidence[0].text
    assert strip_wiki_links("a [[B_c|B c]] and [[D]]") == "a B c and D"


def test_hover_hops_and_supporting_titles():
    examples = load("hover")
    assert [e.metadata["num_hops"] for e in examples] == [2, 3, 4]
    assert examples[0].evidence_ids == ["Life Goes On (Fergie song)", "M.I.L.F. $"]
    not_supported = [e for e in examples if e.metadata["original_label"] == "NOT_SUPPORTED"]
    assert all(e.label == "REFUTED" for e in not_supported)


def test_factcheck_bench_claims_responses_and_factbench():
    claims = load("factcheck_bench")
    assert [e.label for e in claims] == ["false", "true", "not_enough_evidence"]
    assert [d.metadata["stance"] for d in claims[0].evidence] == ["irrelevant", "irrelevant"]
    responses = load("factcheck_bench_responses")
    assert len(responses) == 1
    assert responses.skipped == {"response_factuality is NA (no factuality label)": 1}
    assert responses[0].input.context.startswith("answer to the question: Who was")
    bench = load("factbench")
    assert len(bench) == 1
    assert bench.skipped == {
        "no response text (the answer is null)": 1,
        "response_label is NA (no factuality label)": 1,
    }


def test_answers_as_documents_carry_their_annotated_claims():
    [answer] = load("factcheck_bench_documents")
    assert answer.label == "false" and answer.input.context.startswith("answer to the question")
    assert answer.metadata["gold_claims"] == [
        {"text": "In 1980, the oldest justice on the United States Supreme Court was Justice "
         "William O. Douglas.", "category": "factual", "checkworthy": True, "label": "false"}
    ]  # fmt: skip
    corpus = list(get_dataset("factcheck_bench_documents").corpus(FIX))
    assert len(corpus) == 2 and all(d.metadata == {} for d in corpus)  # stances left out
    qa = load("factool_qa_documents")
    assert [len(a.metadata["gold_claims"]) for a in qa] == [6, 7]
    second = qa[0].metadata["gold_claims"][1]
    assert second == {"text": "The United States has 94 operating reactors", "category": None,
                      "checkworthy": None, "label": "false"}  # fmt: skip


def test_factool_claims_answers_and_citations():
    claims = load("factool_qa")
    assert len(claims) == 6 + 7  # claims of the first two answers
    assert claims[1].id == "knowledge_qa:1.1"
    assert claims[1].label == "false"
    assert load("factool_qa_responses")[0].label == "false"
    cite = load("factool_scientific")[0]
    assert cite.input.text.startswith('The paper "BERT: Pre-training')
    assert cite.input.text.endswith("was published in 2018.")


def test_fire_and_mermaid_claim_sets():
    felm = load("fire_felm_wk")
    assert [e.label for e in felm] == ["true", "false"]
    assert felm[0].metadata["original_label"] is True
    four = load("fire_bingcheck4")
    assert [e.label for e in four] == [
        "supported",
        "partially supported",
        "not supported",
        "refuted",
    ]
    sci = load("mermaid_scifact")
    assert [(e.id, e.label) for e in sci] == [("11", "SUPPORTED"), ("12", "REFUTED")]
    assert sci[1].metadata["original_label"] == "CONTRADICT"
    assert load("mermaid_hover_3hop")[0].metadata["num_hops"] == 3


def test_news_sets():
    pf = load("politifact_plusplus")
    assert [e.id for e in pf] == ["HF:0", "HR:0", "HR:1", "MF:0", "MR:0", "MR:1"]
    assert [e.label for e in pf] == ["FAKE", "REAL", "REAL", "FAKE", "REAL", "REAL"]
    assert isinstance(pf[0].input, Article) and pf[0].input.title == "Synthetic headline 1"
    assert {e.metadata["origin"] for e in load("politifact_plusplus", "machine")} == {"machine"}
    assert len(load("politifact_plusplus", "human")) == 3
    sheep = load("sheepdog_politifact")
    assert [e.label for e in sheep] == ["REAL", "FAKE"]
    gossip = load("gossipcop")
    assert [e.id for e in gossip] == ["-101", "-103"]
    body = gossip[0].input.body
    assert body.startswith("First line") and "Second paragraph, with a comma." in body
    assert gossip.skipped == {"empty article content": 1}
    assert "gossipcop.com" in get_dataset("gossipcop").info.exclude_domains


def test_rumoureval_threads_as_posts():
    train = load("rumoureval2017", "train")
    assert [e.id for e in train] == ["100", "200"]
    assert train.skipped == {}
    post = train[0].input
    assert isinstance(post, Post)
    assert post.created_at.tzinfo is not None
    assert post.created_at.astimezone(timezone.utc).hour == 11
    assert [(r.id, r.parent, r.metadata["stance"]) for r in post.replies] == [
        ("101", "100", "comment"),
        ("102", "101", "deny"),
    ]
    assert [r.id for r in post.replies_by_time()] == ["102", "101"]
    assert train[0].label == "true" and train[1].input.replies == []
    dev = load("rumoureval2017", "dev")
    assert [e.id for e in dev] == ["300"]
    assert [e.label for e in load("rumoureval2017", "train", labels="rumor")] == [
        "non-rumor",
        "rumor",
    ]


def test_politifact_hidden():
    examples = load("politifact_hidden")
    assert [e.label for e in examples] == ["HALF-TRUE", "TRUE", "FALSE"]
    assert examples[0].id == "9001"


def test_limit_and_user_file(tmp_path):
    assert len(load("liar", "train", limit=1)) == 1
    own = tmp_path / "mine.tsv"
    own.write_text(
        "x1.json\tfalse\tA statement of mine.\tsubj\tsome-one\t\t\t\t0\t0\t0\t0\t0\t\n",
        encoding="utf-8",
    )
    examples = load("liar", path=own)
    assert [(e.id, e.label, e.input.speaker) for e in examples] == [("x1", "false", "Some One")]
    assert examples.files == (own,)


def test_dataset_objects_satisfy_the_contract():
    for info in list_datasets(installed_only=True):
        ds = get_dataset(info.name)
        assert isinstance(ds, BaseDataset)
        if not info.has_corpus:
            with pytest.raises(DatasetError, match="no retrieval corpus"):
                next(iter(ds.corpus(FIX)))
