"""Quote verification (veracity.evidence.quotes)."""

from __future__ import annotations

import pytest

from veracity.core.types import Document, Evidence
from veracity.evidence.quotes import (
    QuoteError,
    find_quote,
    normalise,
    verify_evidence,
)

SOURCE = (
    "The study, published in 2019, found that “vitamin D supplements” did not reduce "
    "fractures — in fact, falls rose slightly. Participants (n = 2,000) were followed "
    "for five years."
)


def test_normalise_maps_back_to_original_offsets():
    text = "A “Quote”  —\tdash…"
    norm, where = normalise(text)
    assert norm == 'a "quote" - dash...'
    assert len(where) == len(norm)
    assert text[where[norm.index("dash")]] == "d"


def test_verbatim_match_ignores_case_quotes_dashes_and_spacing():
    m = find_quote('"Vitamin D supplements" did not reduce  fractures - in fact', SOURCE)
    assert m.found and m.exact and m.score == 1.0
    assert m.span == "“vitamin D supplements” did not reduce fractures — in fact"
    assert SOURCE[m.start : m.end] == m.span


def test_punctuation_insensitive_match_is_found_but_not_exact():
    m = find_quote("the study published in 2019 found that vitamin D supplements", SOURCE)
    assert m.found and not m.exact and m.score == 1.0
    assert m.span.startswith("The study, published in 2019")


def test_match_respects_word_boundaries():
    assert not find_quote("min D", SOURCE).found


def test_small_wording_change_is_found_fuzzily():
    m = find_quote("Participants were followed for five years", SOURCE)
    assert m.found and not m.exact and 0.8 <= m.score < 1.0
    assert m.span == "Participants (n = 2,000) were followed for five years"


def test_changed_figure_is_not_a_match():
    m = find_quote("Participants were followed for ten years", SOURCE)
    assert not m.found
    m = find_quote("published in 2018, found that vitamin D supplements did not reduce", SOURCE)
    assert not m.found
    assert m.span is not None and "2019" in m.span  # shows what the source says


def test_dropped_or_added_negation_is_not_a_match():
    assert not find_quote("vitamin D supplements did reduce fractures in fact", SOURCE).found
    source = "The panel said the vaccine is safe for adults over sixty."
    assert not find_quote("the vaccine is not safe for adults over sixty", source).found
    assert find_quote("the vaccine is safe for all adults over sixty", source).found


def test_invented_quote_is_not_found():
    m = find_quote("vitamin C cures cancer in most patients", SOURCE)
    assert not m.found and m.score < 0.5


def test_ellipsis_quotes_are_checked_part_by_part_in_order():
    m = find_quote("The study, published in 2019 ... were followed for five years", SOURCE)
    assert m.found and m.span.startswith("The study") and m.span.endswith("five years")
    assert find_quote("The study […] did not reduce fractures", SOURCE).found
    backwards = find_quote("were followed for five years ... The study, published in 2019", SOURCE)
    assert not backwards.found


def test_threshold_controls_fuzzy_acceptance():
    quote = "Participants were followed for five years"
    assert not find_quote(quote, SOURCE, threshold=0.9).found
    assert find_quote(quote, SOURCE, threshold=0.75).found


@pytest.mark.parametrize("bad", ["", "   ", "...", "—"])
def test_empty_quote_is_an_error(bad):
    with pytest.raises(QuoteError):
        find_quote(bad, SOURCE)


def test_bad_threshold_is_an_error():
    with pytest.raises(QuoteError):
        find_quote("fractures", SOURCE, threshold=1.5)


def _evidence(quote, text=SOURCE, title="Vitamin D trial", doc_id="d1"):
    return Evidence(document=Document(id=doc_id, text=text, title=title), quote=quote)


def test_verify_evidence_sets_flags_and_keeps_inputs():
    items = [
        _evidence("did not reduce fractures"),
        _evidence("vitamin D prevents all fractures in children"),
        _evidence(None),
        _evidence("Vitamin D trial"),  # the title counts as part of the source
    ]
    checked = verify_evidence(items)
    assert [e.quote_verified for e in checked] == [True, False, None, True]
    assert items[0].quote_verified is None  # inputs are not modified


def test_verify_evidence_uses_full_texts_when_given():
    snippet = _evidence("were followed for five years", text="The study, published in 2019")
    assert verify_evidence([snippet])[0].quote_verified is False
    full = verify_evidence([snippet], texts={"d1": SOURCE})[0]
    assert full.quote_verified is True


def test_replace_quote_substitutes_the_source_span():
    fixed = verify_evidence(
        [_evidence("Participants were followed for five years")], replace_quote=True
    )[0]
    assert fixed.quote_verified is True
    assert fixed.quote == "Participants (n = 2,000) were followed for five years"
