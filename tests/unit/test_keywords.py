"""SC-MMR (Eq. 4–5, Algorithm 3) and TF-IDF keywords, against hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pydantic import ValidationError

from veracity.nlp.keywords import SCMMRConfig, lambda_k, sc_mmr, select_keywords, tfidf_keywords


def test_lambda_schedule_k_1_to_8():
    # λ_k = max(0.1, 1 − e^(0.3k − 2.5))
    # k=1: 1 − e^-2.2 = 1 − 0.110803 = 0.889197
    # k=2: 1 − e^-1.9 = 1 − 0.149569 = 0.850431
    # k=3: 1 − e^-1.6 = 1 − 0.201897 = 0.798103
    # k=4: 1 − e^-1.3 = 1 − 0.272532 = 0.727468
    # k=5: 1 − e^-1.0 = 1 − 0.367879 = 0.632121
    # k=6: 1 − e^-0.7 = 1 − 0.496585 = 0.503415
    # k=7: 1 − e^-0.4 = 1 − 0.670320 = 0.329680
    # k=8: 1 − e^-0.1 = 1 − 0.904837 = 0.095163 → below λ_min, so 0.1
    expected = [0.889197, 0.850431, 0.798103, 0.727468, 0.632121, 0.503415, 0.329680, 0.1]
    assert [lambda_k(k) for k in range(1, 9)] == pytest.approx(expected, abs=1e-6)
    assert lambda_k(20) == 0.1
    with pytest.raises(ValueError):
        lambda_k(-1)


def test_config_defaults_and_validation():
    c = SCMMRConfig()
    assert (c.lambda_min, c.lambda_max, c.alpha, c.beta, c.gamma, c.mmr_prev_init) == (
        0.1,
        1.0,
        0.3,
        2.5,
        0.5,
        1.0,
    )
    with pytest.raises(ValidationError):
        SCMMRConfig(gama=0.4)


SIM = np.array(
    [
        # A    B    C    D
        [1.0, 0.9, 0.1, 0.2],  # A
        [0.9, 1.0, 0.2, 0.1],  # B
        [0.1, 0.2, 1.0, 0.3],  # C
        [0.2, 0.1, 0.3, 1.0],  # D
    ]
)


def test_sc_mmr_picks_and_stops_by_decay():
    # Seed A (salience 0.9). MMR*_prev = 1.0.
    # k=1, λ=0.889197: B = 0.889197·0.85 − 0.110803·0.9 = 0.656094
    #                  C = 0.889197·0.60 − 0.110803·0.1 = 0.522438
    #                  D = 0.889197·0.30 − 0.110803·0.2 = 0.244599
    #   B: 0.656094 > 0.5 · 1.0 → selected, MMR*_prev = 0.656094
    # k=2, λ=0.850431: C = 0.850431·0.6 − 0.149569·max(0.1, 0.2) = 0.480345
    #                  D = 0.850431·0.3 − 0.149569·max(0.2, 0.1) = 0.225216
    #   C: 0.480345 > 0.5 · 0.656094 = 0.328047 → selected
    # k=3, λ=0.798103: D = 0.798103·0.3 − 0.201897·0.3 = 0.178862
    #   D: 0.178862 ≤ 0.5 · 0.480345 = 0.240172 → stop
    result = sc_mmr(["A", "B", "C", "D"], [0.9, 0.85, 0.6, 0.3], SIM)
    assert result.keywords == ["A", "B", "C"]
    seed, b, c = result.selected
    assert seed.mmr is None and seed.lambda_k is None and seed.salience == 0.9
    assert b.mmr == pytest.approx(0.656094, abs=1e-6)
    assert b.lambda_k == pytest.approx(0.889197, abs=1e-6)
    assert c.mmr == pytest.approx(0.480345, abs=1e-6)
    assert result.stop_reason == "decay"
    assert result.rejected == "D"
    assert result.rejected_mmr == pytest.approx(0.178862, abs=1e-6)
    assert result.stop_bound == pytest.approx(0.240172, abs=1e-6)


def test_sc_mmr_prefers_diverse_candidate():
    # A–B near duplicates (0.95), A–C unrelated (0.0), B–C 0.1.
    # k=1: B = 0.889197·0.70 − 0.110803·0.95 = 0.517175
    #      C = 0.889197·0.65 − 0.110803·0.00 = 0.577978 → C wins despite lower salience
    # k=2: B = 0.850431·0.70 − 0.149569·max(0.95, 0.1) = 0.453211 > 0.288989 → selected
    sim = np.array([[1.0, 0.95, 0.0], [0.95, 1.0, 0.1], [0.0, 0.1, 1.0]])
    result = sc_mmr(["A", "B", "C"], [0.9, 0.7, 0.65], sim)
    assert result.keywords == ["A", "C", "B"]
    assert [k.mmr for k in result.selected[1:]] == pytest.approx([0.577978, 0.453211], abs=1e-6)
    assert result.stop_reason == "exhausted" and result.rejected is None


def test_seed_is_selected_unconditionally_and_second_needs_half():
    result = sc_mmr(["only"], [0.01], np.array([[1.0]]))
    assert result.keywords == ["only"]
    # Second candidate: 0.889197 · 0.3 = 0.266759 ≤ 0.5 · 1.0 → stop after the seed.
    result = sc_mmr(["a", "b"], [0.4, 0.3], np.array([[1.0, 0.0], [0.0, 1.0]]))
    assert result.keywords == ["a"]
    assert result.rejected_mmr == pytest.approx(0.266759, abs=1e-6)
    assert result.stop_bound == 0.5


def test_termination_is_inclusive_and_ties_go_to_first():
    flat = SCMMRConfig(lambda_min=1.0, lambda_max=1.0)  # λ_k = 1: MMR = salience
    result = sc_mmr(["a", "b"], [0.9, 0.5], np.eye(2), flat)
    assert result.keywords == ["a"]  # 0.5 ≤ 0.5 · 1.0 stops
    result = sc_mmr(["x", "y", "z"], [0.7, 0.7, 0.7], np.eye(3), flat)
    assert result.keywords == ["x", "y", "z"]  # seed and each pick: first of equals


def test_sc_mmr_input_errors():
    assert sc_mmr([], [], np.zeros((0, 0))).selected == []
    with pytest.raises(ValueError):
        sc_mmr(["a", "b"], [0.5], np.eye(2))
    with pytest.raises(ValueError):
        sc_mmr(["a"], [math.nan], np.eye(1))


class FixedEmbedder:
    name = "fixed"

    def __init__(self, table):
        self.table = table
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_select_keywords_builds_similarity_matrix_once():
    # cos(A, B) = 0.95, cos(A, C) = 0, cos(B, C) = 0: the picks of the diversity case
    # above (B's MMR at k=2 uses max(0.95, 0) = 0.95, as there).
    table = {"A": (1.0, 0.0, 0.0), "B": (0.95, math.sqrt(1 - 0.95**2), 0.0), "C": (0, 0, 1)}
    embedder = FixedEmbedder(table)
    result = select_keywords({"A": 0.9, "B": 0.7, "C": 0.65}, embedder=embedder)
    assert result.keywords == ["A", "C", "B"]
    assert embedder.calls == [["A", "B", "C"]]
    assert select_keywords({}, embedder=embedder).keywords == []


def test_tfidf_on_sentences_hand_computed():
    text = "Mars rover lands. Rover sends photos. Scientists cheer rover."
    # N = 3 sentences. rover: tf 3, df 3, idf = ln(4/4) + 1 = 1 → 3.0
    # others: tf 1, df 1, idf = ln(4/2) + 1 = 1.693147
    terms = tfidf_keywords(text, top_n=3)
    assert [t.term for t in terms] == ["rover", "mars", "lands"]
    assert [t.score for t in terms] == pytest.approx([3.0, 1.693147, 1.693147], abs=1e-6)
    assert (terms[0].tf, terms[0].df) == (3, 3)


def test_tfidf_with_background_and_bigrams():
    text = "Mars rover lands. Rover sends photos. Scientists cheer rover."
    # N = 2 background docs; rover df 1 → idf ln(3/2) + 1 = 1.405465 → 3 · 1.405465
    # lands df 0 → ln(3/1) + 1 = 2.098612
    terms = tfidf_keywords(text, top_n=2, background=["Rover news today.", "Mars is red."])
    assert [t.term for t in terms] == ["rover", "lands"]
    assert [t.score for t in terms] == pytest.approx([4.216395, 2.098612], abs=1e-6)
    bigrams = {t.term for t in tfidf_keywords(text, top_n=50, max_ngram=2)}
    assert "mars rover" in bigrams and "rover lands" in bigrams
    with pytest.raises(ValueError):
        tfidf_keywords("  ")
    with pytest.raises(ValueError):
        tfidf_keywords(text, top_n=0)


@pytest.mark.nlp
def test_real_stage_one_keywords():
    from veracity.nlp.entities import extract_entities
    from veracity.nlp.ner_backends import SpacyNER
    from veracity.nlp.salience import hierarchical_salience

    text = (
        "Pfizer and BioNTech asked the Food and Drug Administration on Friday to authorise "
        "their vaccine for children aged five to eleven. Pfizer said trials in the United "
        "States showed a strong immune response. The FDA will meet later this month."
    )
    selected = extract_entities(text, SpacyNER()).filtered.selected
    scores = hierarchical_salience(text, selected)
    result = select_keywords({s.text: s.salience for s in scores})
    assert 1 <= len(result.keywords) <= len(scores)
    top = max(scores, key=lambda s: s.salience)
    assert result.keywords[0] == top.text


def test_seed_relative_stop_rule_hand_computed():
    """mmr_prev_init="seed": the 2nd pick is compared with the seed's own MMR.

    λ_0 = 1 − e^−2.5 = 0.917915 → seed MMR = 0.917915 · 0.3 = 0.275374, bound 0.137687.
    λ_1 = 1 − e^−2.2 = 0.889197; cand B: 0.889197·0.2 − 0.110803·0.1 = 0.166759 > bound.
    λ_2 = 1 − e^−1.9 = 0.850431; cand C: 0.850431·0.1 − 0.149569·0.2 = 0.055129
    ≤ 0.5 · 0.166759 = 0.083380 → stop. With Algorithm 3's literal 1.0, B (0.1668 ≤ 0.5)
    is rejected and only the seed is returned.
    """
    sim = np.array([[1.0, 0.1, 0.2], [0.1, 1.0, 0.2], [0.2, 0.2, 1.0]])
    seeded = sc_mmr(["A", "B", "C"], [0.3, 0.2, 0.1], sim, SCMMRConfig(mmr_prev_init="seed"))
    assert seeded.keywords == ["A", "B"] and seeded.stop_reason == "decay"
    assert seeded.selected[0].mmr == pytest.approx(0.275374, abs=1e-6)
    assert seeded.selected[1].mmr == pytest.approx(0.166759, abs=1e-6)
    assert seeded.rejected_mmr == pytest.approx(0.055129, abs=1e-6)
    assert seeded.stop_bound == pytest.approx(0.083380, abs=1e-6)
    literal = sc_mmr(["A", "B", "C"], [0.3, 0.2, 0.1], sim, SCMMRConfig())
    assert literal.keywords == ["A"] and literal.stop_bound == pytest.approx(0.5)


def test_fixed_k_selects_exactly_k_without_the_decay_stop():
    # with λ fixed at 0.5 (section 5.5): D would fail the γ rule (see above) but is taken
    fixed = SCMMRConfig(lambda_min=0.5, lambda_max=0.5, fixed_k=4)
    result = sc_mmr(["A", "B", "C", "D"], [0.9, 0.85, 0.6, 0.3], SIM, fixed)
    # (λ = 0.5 weighs diversity more: C and D, far from A, come before B)
    assert result.keywords == ["A", "C", "D", "B"] and result.stop_reason == "exhausted"
    assert all(s.lambda_k == 0.5 for s in result.selected[1:])
    two = sc_mmr(
        ["A", "B", "C", "D"], [0.9, 0.85, 0.6, 0.3], SIM, fixed.model_copy(update={"fixed_k": 2})
    )
    assert two.keywords == ["A", "C"] and two.stop_reason == "fixed_k"
    with pytest.raises(ValidationError):
        SCMMRConfig(fixed_k=0)
