"""Sentence splitting and chunking (veracity.nlp.text)."""

from __future__ import annotations

import pytest

from veracity.nlp.text import TextError, chunk_text, sentence_spans, split_sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Dr. Smith went to Washington. He arrived at 3.15 p.m. on Monday.",
            ["Dr. Smith went to Washington.", "He arrived at 3.15 p.m. on Monday."],
        ),
        (
            "Prices rose by 2.5 percent. Wages did not.",
            ["Prices rose by 2.5 percent.", "Wages did not."],
        ),
        (
            '"Stop!" he said. "Why?" She left... Then it rained.',
            ['"Stop!" he said.', '"Why?"', "She left...", "Then it rained."],
        ),
        (
            "J. R. R. Tolkien wrote it. See Fig. 3 and No. 5, e.g. the second.",
            ["J. R. R. Tolkien wrote it.", "See Fig. 3 and No. 5, e.g. the second."],
        ),
        (
            "Levels of vitamin D. These were high.",
            ["Levels of vitamin D.", "These were high."],
        ),
        (
            "The trial ran in the U.S. It ended early. The U.S. Senate voted.",
            ["The trial ran in the U.S.", "It ended early.", "The U.S. Senate voted."],
        ),
        (
            'He said "I am done." Then he left. (This is an aside.) Next.',
            ['He said "I am done."', "Then he left.", "(This is an aside.)", "Next."],
        ),
        (
            "A heading without a stop\n\nBody text here. More body",
            ["A heading without a stop", "Body text here.", "More body"],
        ),
    ],
)
def test_rule_splitter(text, expected):
    assert split_sentences(text) == expected


def test_spans_point_into_the_original_text():
    text = "  First one.   Second one?\nThird!  "
    spans = sentence_spans(text)
    assert [text[s:e] for s, e in spans] == ["First one.", "Second one?", "Third!"]


def test_blank_text_has_no_sentences():
    assert split_sentences("") == []
    assert split_sentences("   \n ") == []


def test_non_string_and_unknown_method_are_errors():
    with pytest.raises(TextError):
        split_sentences(None)  # type: ignore[arg-type]
    with pytest.raises(TextError, match="unknown sentence splitting method"):
        split_sentences("A b.", method="nltk")  # type: ignore[arg-type]


@pytest.mark.nlp
def test_spacy_sentencizer_option():
    assert split_sentences("One sentence here. Another one there.", method="spacy") == [
        "One sentence here.",
        "Another one there.",
    ]


def _sentences(n: int) -> str:
    return " ".join(f"Sentence {i} has five words." for i in range(n))


def test_chunks_pack_whole_sentences_and_keep_offsets():
    text = _sentences(6)  # 5 words each
    chunks = chunk_text(text, max_words=12)
    assert [c.n_words for c in chunks] == [10, 10, 10]
    for c in chunks:
        assert text[c.start : c.end] == c.text
        assert c.text.endswith(".")
    assert [c.index for c in chunks] == [0, 1, 2]


def test_overlap_repeats_trailing_sentences():
    text = _sentences(6)
    chunks = chunk_text(text, max_words=15, overlap=5)
    assert [c.n_words for c in chunks] == [15, 15, 10]
    assert chunks[1].text.startswith("Sentence 2 ")  # sentence 2 closed chunk 0
    assert chunks[2].text.startswith("Sentence 4 ")
    assert chunks[-1].text.endswith("Sentence 5 has five words.")


def test_overlong_sentence_is_cut_at_words():
    text = " ".join(f"w{i}" for i in range(25))
    chunks = chunk_text(text, max_words=10)
    assert [c.n_words for c in chunks] == [10, 10, 5]
    assert " ".join(c.text for c in chunks) == text


def test_max_chars_limits_chunks():
    text = _sentences(4)
    chunks = chunk_text(text, max_words=100, max_chars=60)  # two 26-char sentences fit
    assert len(chunks) == 2
    assert all(len(c.text) <= 60 for c in chunks)
    assert len(chunk_text(text, max_words=100, max_chars=30)) == 4


def test_short_text_is_one_chunk_and_blank_text_none():
    assert [c.text for c in chunk_text("Just one. Two.", max_words=50)] == ["Just one. Two."]
    assert chunk_text("   ") == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_words": 0}, "max_words"),
        ({"max_words": 5, "overlap": 5}, "overlap"),
        ({"max_words": 5, "overlap": -1}, "overlap"),
        ({"max_words": 5, "max_chars": 0}, "max_chars"),
    ],
)
def test_bad_chunk_limits_are_errors(kwargs, message):
    with pytest.raises(TextError, match=message):
        chunk_text("Some text.", **kwargs)
