"""Hierarchical salience (Eq. 3) and sentence salience, against hand-computed cosines."""

from __future__ import annotations

import numpy as np
import pytest

from veracity.nlp.entities import EntitySpan, merge_duplicates
from veracity.nlp.salience import (
    hierarchical_salience,
    local_context,
    most_salient_sentence,
    sentence_salience,
)

TEXT = "Alpha met Beta. Gamma rose. Delta fell. Beta left."
S = ["Alpha met Beta.", "Gamma rose.", "Delta fell.", "Beta left."]
C0 = "Alpha met Beta. Gamma rose."  # s0 ⊕ s1 (no s_-1)
C2 = "Gamma rose. Delta fell. Beta left."  # s1 ⊕ s2 ⊕ s3
C3 = "Delta fell. Beta left."  # s2 ⊕ s3 (no s4)


class FixedEmbedder:
    """Known vectors for known strings; any other string is a test error."""

    name = "fixed"

    def __init__(self, table: dict[str, tuple[float, ...]]):
        self.table = table
        self.calls: list[list[str]] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=np.float32)


# Cosines by hand: v_T = (1, 0, 0).
#   C0 = (3, 4, 0)/5        → S_global = 0.6
#   C2 = (0.6, 0.8, 0)      → S_global = 0.6
#   C3 = (0.8, 0, 0.6)      → S_global = 0.8
#   Alpha = (0, 1, 0)       → S_local(C0) = 0.8                 S_hier = 0.8 · 0.6 = 0.48
#   Beta  = (2, 0, 0)       → S_local(C0) = 0.6, (C3) = 0.8      S_hier = 0.36 and 0.64
#   Delta = (0, -1, 0)      → S_local(C2) = -0.8                 S_hier = -0.48 (no clipping)
TABLE = {
    TEXT: (1.0, 0.0, 0.0),
    C0: (3.0, 4.0, 0.0),
    C2: (0.6, 0.8, 0.0),
    C3: (0.8, 0.0, 0.6),
    "Alpha": (0.0, 1.0, 0.0),
    "Beta": (2.0, 0.0, 0.0),
    "Delta": (0.0, -1.0, 0.0),
}


def _entities():
    def span(word: str, start: int) -> EntitySpan:
        assert TEXT[start : start + len(word)] == word
        return EntitySpan(text=word, label="X", start=start, end=start + len(word), confidence=1)

    return merge_duplicates(
        [span("Alpha", 0), span("Beta", 10), span("Delta", 28), span("Beta", 40)]
    )


def test_local_context_joins_neighbours():
    assert local_context(S, 0) == C0
    assert local_context(S, 2) == C2
    assert local_context(S, 3) == C3
    with pytest.raises(IndexError):
        local_context(S, 4)


def test_hierarchical_salience_hand_computed():
    embedder = FixedEmbedder(TABLE)
    scores = hierarchical_salience(TEXT, _entities(), embedder=embedder)
    got = {s.text: s for s in scores}
    assert [s.text for s in scores] == ["Alpha", "Beta", "Delta"]
    assert got["Alpha"].local == pytest.approx(0.8)
    assert got["Alpha"].global_ == pytest.approx(0.6)
    assert got["Alpha"].salience == pytest.approx(0.48)
    assert got["Beta"].salience == pytest.approx(0.64)  # max over its two sentences
    assert got["Beta"].sentence == 3 and got["Beta"].context == C3
    assert got["Delta"].salience == pytest.approx(-0.48)
    assert got["Delta"].context == C2
    # One batched embedding call: names, then distinct contexts, then the text.
    assert embedder.calls == [["Alpha", "Beta", "Delta", C0, C2, C3, TEXT]]


def test_hierarchical_salience_mean_over_occurrences():
    scores = hierarchical_salience(
        TEXT, _entities(), embedder=FixedEmbedder(TABLE), aggregate="mean"
    )
    beta = next(s for s in scores if s.text == "Beta")
    assert beta.salience == pytest.approx((0.36 + 0.64) / 2)
    assert beta.local == pytest.approx(0.7) and beta.global_ == pytest.approx(0.7)


def test_hierarchical_salience_input_errors():
    embedder = FixedEmbedder(TABLE)
    assert hierarchical_salience(TEXT, [], embedder=embedder) == []
    assert embedder.calls == []
    with pytest.raises(ValueError):
        hierarchical_salience(" ", _entities(), embedder=embedder)
    with pytest.raises(ValueError):
        hierarchical_salience(TEXT, _entities(), embedder=embedder, aggregate="median")
    far = merge_duplicates(
        [EntitySpan(text="Omega", label="X", start=100, end=105, confidence=0.5)]
    )
    with pytest.raises(ValueError, match="outside"):
        hierarchical_salience(TEXT, far, embedder=embedder)
    zero = FixedEmbedder({**TABLE, "Alpha": (0.0, 0.0, 0.0)})
    with pytest.raises(ValueError, match="zero vector"):
        hierarchical_salience(TEXT, _entities(), embedder=zero)


def test_sentence_salience_hand_computed():
    # cos with v_T = (1, 0, 0): s0 0.6, s1 0.0, s2 0.8, s3 -1.0
    table = {
        TEXT: (1.0, 0.0),
        S[0]: (3.0, 4.0),
        S[1]: (0.0, 2.0),
        S[2]: (0.8, 0.6),
        S[3]: (-1.0, 0.0),
    }
    embedder = FixedEmbedder(table)
    scores = sentence_salience(TEXT, embedder=embedder)
    assert [s.text for s in scores] == S
    assert [s.salience for s in scores] == pytest.approx([0.6, 0.0, 0.8, -1.0])
    assert embedder.calls == [[*S, TEXT]]
    best = most_salient_sentence(TEXT, embedder=embedder)
    assert (best.index, best.text) == (2, "Delta fell.")


@pytest.mark.nlp
def test_real_minilm_salience_on_news():
    from veracity.nlp.entities import extract_entities
    from veracity.nlp.ner_backends import SpacyNER

    text = (
        "NASA said on Monday that its Perseverance rover had collected a rock sample in "
        "Jezero Crater on Mars. Scientists at the Jet Propulsion Laboratory in Pasadena "
        "hope the sample contains traces of ancient microbial life. The European Space "
        "Agency plans to help bring the samples back to Earth in the 2030s."
    )
    extraction = extract_entities(text, SpacyNER())
    scores = hierarchical_salience(text, extraction.filtered.selected)
    assert len(scores) == len(extraction.filtered.selected) >= 4
    values = [s.salience for s in scores]
    assert all(-1.0 <= v <= 1.0 for v in values)
    assert len({round(v, 6) for v in values}) > 1
    assert all(s.salience == pytest.approx(s.local * s.global_) for s in scores)
    top = most_salient_sentence(text)
    assert top.text in text
