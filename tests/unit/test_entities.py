"""Entity units (Eq. 1–2), duplicate merging and the dynamic threshold (Algorithm 2)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from veracity.nlp.entities import (
    Entity,
    EntitySpan,
    NERError,
    ThresholdConfig,
    TokenTag,
    dynamic_threshold,
    extract_entities,
    merge_duplicates,
    merge_tokens,
    normalise_entity,
    recognise,
    to_spans,
)


def _entities(*confidences: float) -> list[Entity]:
    out = []
    for i, c in enumerate(confidences):
        span = EntitySpan(text=f"E{i}", label="ORG", start=3 * i, end=3 * i + 2, confidence=c)
        out.append(merge_duplicates([span])[0])
    return out


def _tok(text: str, source: str, tag: str, confidence: float, after: int = 0) -> TokenTag:
    start = source.index(text, after)
    return TokenTag(text=text, start=start, end=start + len(text), tag=tag, confidence=confidence)


# --------------------------------------------------------------------------- threshold


def test_threshold_steps_down_until_n_min_pass():
    # 0.8 → only 0.95 passes; 0.7 → still one; 0.6 → 0.95 and 0.62 pass: stop at 0.6.
    result = dynamic_threshold(_entities(0.95, 0.62, 0.31), ThresholdConfig(n_min=2))
    assert result.tried == [0.8, 0.7, 0.6]
    assert result.threshold == 0.6
    assert [e.confidence for e in result.selected] == [0.95, 0.62]
    assert result.satisfied


def test_threshold_default_n_min_one_stops_at_initial_value():
    result = dynamic_threshold(_entities(0.95, 0.62, 0.31))
    assert result.threshold == 0.8
    assert [e.confidence for e in result.selected] == [0.95]


def test_threshold_reaches_the_floor_exactly():
    # Naive float steps give 0.8 - 7*0.1 = 0.09999999999999998 (skips the floor) or, by
    # repeated subtraction, 0.10000000000000014 (rejects a confidence of exactly 0.1).
    config = ThresholdConfig()
    assert config.thresholds() == [0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
    result = dynamic_threshold(_entities(0.1, 0.05), config)
    assert result.threshold == 0.1
    assert len(result.tried) == 8
    assert [e.confidence for e in result.selected] == [0.1]


def test_threshold_below_floor_returns_what_passes_at_floor():
    result = dynamic_threshold(_entities(0.05, 0.02))
    assert result.selected == []
    assert result.threshold == 0.1
    assert not result.satisfied

    result = dynamic_threshold(_entities(0.9, 0.85), ThresholdConfig(n_min=3))
    assert len(result.selected) == 2  # both pass at 0.1, still fewer than 3
    assert result.threshold == 0.1
    assert not result.satisfied


def test_threshold_empty_input_gives_empty_set():
    result = dynamic_threshold([])
    assert result.selected == [] and result.threshold is None and result.tried == []


def test_threshold_config_is_validated():
    with pytest.raises(ValidationError):
        ThresholdConfig(floor=0.9, lambda_init=0.8)
    with pytest.raises(ValidationError):
        ThresholdConfig(n_min=0)
    with pytest.raises(ValidationError):
        ThresholdConfig(lamda_init=0.8)  # typo: extra fields are forbidden
    assert ThresholdConfig(lambda_init=0.5, delta=0.25, floor=0.1).thresholds() == [0.5, 0.25]


# --------------------------------------------------------------------------- units


def test_merge_tokens_averages_token_confidences():
    text = "Tim Cook visited Paris and London."
    tokens = [
        _tok("Tim", text, "B-PER", 0.9),
        _tok("Cook", text, "I-PER", 0.7),
        _tok("visited", text, "O", 0.99),
        _tok("Paris", text, "B-LOC", 0.6),
        _tok("and", text, "O", 0.98),
        _tok("London", text, "I-LOC", 0.5),  # I- after O opens a new unit
        _tok(".", text, "O", 1.0),
    ]
    spans = merge_tokens(text, tokens)
    assert [(s.text, s.label, s.n_tokens) for s in spans] == [
        ("Tim Cook", "PER", 2),
        ("Paris", "LOC", 1),
        ("London", "LOC", 1),
    ]
    assert spans[0].confidence == pytest.approx((0.9 + 0.7) / 2)
    assert spans[0].start == 0 and spans[0].end == 8


def test_merge_tokens_boundaries():
    text = "McDonald Smith Jones Acme"
    tokens = [
        TokenTag(text="Mc", start=0, end=2, tag="B-PER", confidence=0.9),
        TokenTag(text="Donald", start=2, end=8, tag="B-PER", confidence=0.5),  # glued piece
        _tok("Smith", text, "B-PER", 0.8),  # a new B- with a space before it: new unit
        _tok("Jones", text, "I-PER", 0.6),
        _tok("Acme", text, "I-ORG", 0.4),  # label change: new unit
    ]
    spans = merge_tokens(text, tokens)
    assert [s.text for s in spans] == ["McDonald", "Smith Jones", "Acme"]
    assert [s.confidence for s in spans] == pytest.approx([0.7, 0.7, 0.4])


def test_an_entity_never_spans_a_line_break_or_a_sentence_boundary():
    # a tagger that runs a byline into the next heading (seen on PolitiFact++ articles)
    text = "By Bloomberg\n\nThe Best Of Texas. Austin Police said so."
    tokens = [
        _tok("Bloomberg", text, "B-ORG", 0.9),
        _tok("\n\n", text, "I-ORG", 0.8),
        _tok("The", text, "I-ORG", 0.6),
        _tok("Best", text, "I-ORG", 0.6),
        _tok("Of", text, "I-ORG", 0.6),
        _tok("Texas", text, "I-ORG", 0.6),
        _tok(".", text, "O", 1.0),
        _tok("Austin", text, "I-ORG", 0.7),  # continues the label across the full stop
        _tok("Police", text, "I-ORG", 0.7),
    ]
    spans = to_spans(text, tokens)
    assert [s.text for s in spans] == ["Bloomberg", "The Best Of Texas", "Austin Police"]
    assert spans[0].confidence == pytest.approx(0.9) and spans[1].n_tokens == 4
    # without the whitespace token: a line break between two tokens also closes the unit
    glued = [t for t in tokens if t.text != "\n\n"]
    assert [s.text for s in merge_tokens(text, glued)][:2] == ["Bloomberg", "The Best Of Texas"]
    # sentence boundary without punctuation tokens tagged O
    two = "He met Ana Lopez Then Bob left."
    toks = [_tok("Ana", two, "B-PER", 0.9), _tok("Lopez", two, "I-PER", 0.9)]
    toks += [_tok("Then", two, "I-PER", 0.5)]
    cut = merge_tokens(two, toks, sentence_starts=[0, two.index("Then")])
    assert [s.text for s in cut] == ["Ana Lopez", "Then"]


def test_spans_from_span_backends_are_split_at_line_breaks_too():
    text = "Bloomberg\n\nThe Best Of. Other words"
    span = EntitySpan(text=text[:22], label="ORG", start=0, end=22, confidence=0.8)
    pieces = to_spans(text, [span])
    assert [(p.text, p.start, p.confidence) for p in pieces] == [
        ("Bloomberg", 0, 0.8),
        ("The Best Of", 11, 0.8),
    ]
    assert all(text[p.start : p.end] == p.text for p in pieces)


def test_merge_tokens_rejects_bad_offsets_and_tags():
    with pytest.raises(ValueError):
        merge_tokens("short", [TokenTag(text="x", start=3, end=9, tag="B-X", confidence=0.5)])
    with pytest.raises(ValidationError):
        TokenTag(text="x", start=0, end=1, tag="PERSON", confidence=0.5)
    with pytest.raises(ValidationError):
        TokenTag(text="x", start=0, end=1, tag="O", confidence=1.5)


def test_to_spans_refuses_mixed_or_misaligned_predictions():
    text = "Paris is big."
    tag = TokenTag(text="Paris", start=0, end=5, tag="B-LOC", confidence=0.9)
    span = EntitySpan(text="Paris", label="LOC", start=0, end=5, confidence=0.9)
    with pytest.raises(NERError):
        to_spans(text, [tag, span])
    with pytest.raises(NERError):
        to_spans(text, [EntitySpan(text="Lyon", label="LOC", start=0, end=4, confidence=0.9)])
    assert to_spans(text, [span]) == [span]


def test_normalise_entity():
    assert normalise_entity("The European Union") == "european union"
    assert normalise_entity("European Union’s") == "european union"
    assert normalise_entity("  \u201cNASA\u201d ") == "nasa"
    assert normalise_entity("U.S.") == "u s"  # the evidence memory's key for it too
    assert normalise_entity("Theodore") == "theodore"  # only a whole leading "the"


def test_merge_duplicates_keeps_best_mention_and_all_mentions():
    spans = [
        EntitySpan(text="The European Union", label="ORG", start=0, end=18, confidence=0.7),
        EntitySpan(text="Brussels", label="GPE", start=30, end=38, confidence=0.8),
        EntitySpan(text="European Union", label="NORP", start=50, end=64, confidence=0.95),
    ]
    entities = merge_duplicates(spans)
    assert [e.key for e in entities] == ["european union", "brussels"]
    eu = entities[0]
    assert (eu.text, eu.label, eu.confidence) == ("European Union", "NORP", 0.95)
    assert [m.start for m in eu.mentions] == [0, 50]


class _FixedBackend:
    name = "fixed"

    def __init__(self, tokens):
        self.tokens = tokens

    def predict(self, text):
        return self.tokens


def test_recognise_sets_sentence_indexes_and_extract_filters():
    text = "Angela Merkel spoke. The crowd cheered. Merkel left Berlin."
    tokens = [
        _tok("Angela", text, "B-PER", 0.9),
        _tok("Merkel", text, "I-PER", 0.8),
        _tok("Merkel", text, "B-PER", 0.4, after=20),
        _tok("Berlin", text, "B-LOC", 0.65),
    ]
    entities = recognise(text, _FixedBackend(tokens))
    assert [(e.text, e.sentences) for e in entities] == [
        ("Angela Merkel", [0]),
        ("Merkel", [2]),
        ("Berlin", [2]),
    ]
    assert entities[0].confidence == pytest.approx(0.85)
    extraction = extract_entities(text, _FixedBackend(tokens), ThresholdConfig(n_min=2))
    assert extraction.backend == "fixed"
    assert [e.text for e in extraction.filtered.selected] == ["Angela Merkel", "Berlin"]
    assert extraction.filtered.threshold == 0.6
    with pytest.raises(ValueError):
        recognise("   ", _FixedBackend([]))


def test_recognise_with_no_entities_gives_empty_set():
    extraction = extract_entities("nothing here.", _FixedBackend([]))
    assert extraction.raw == [] and extraction.filtered.selected == []
