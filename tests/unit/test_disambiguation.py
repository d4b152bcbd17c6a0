"""Context-aware sense disambiguation (ZoFia Eq. 7)."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from veracity.nlp.disambiguation import SenseCandidate, disambiguate, substitute

CONTEXT = "Jordan scored 40 points. Fans cheered Jordan."
PLAYER = SenseCandidate(title="Michael Jordan", description="the basketball player", ref="1")
COUNTRY = SenseCandidate(title="Jordan", description="a country in Western Asia", ref="2")
RIVER = SenseCandidate(title="Jordan River", description="a river in the Levant", ref="3")
M_PLAYER = "the basketball player scored 40 points. Fans cheered the basketball player."
M_COUNTRY = "a country in Western Asia scored 40 points. Fans cheered a country in Western Asia."
M_RIVER = "a river in the Levant scored 40 points. Fans cheered a river in the Levant."


class FixedEmbedder:
    name = "fixed"

    def __init__(self, table):
        self.table = table
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=np.float32)


def test_substitute_replaces_every_whole_word_mention():
    assert substitute(CONTEXT, "Jordan", "X") == "X scored 40 points. Fans cheered X."
    assert substitute("JORDAN and Jordanian food", "jordan", "X") == "X and Jordanian food"
    assert substitute("New  York rises", "New York", r"a \1 city") == r"a \1 city rises"
    with pytest.raises(ValueError, match="does not occur"):
        substitute(CONTEXT, "Pippen", "X")
    with pytest.raises(ValueError):
        substitute(CONTEXT, "  ", "X")


def test_picks_the_candidate_whose_substituted_context_is_closest():
    # v_C = (1, 0): cos with (0.6, 0.8) = 0.6, with (0.8, 0.6) = 0.8, with (0, 3) = 0.0
    embedder = FixedEmbedder(
        {CONTEXT: (1.0, 0.0), M_COUNTRY: (0.6, 0.8), M_PLAYER: (0.8, 0.6), M_RIVER: (0.0, 3.0)}
    )
    result = disambiguate("Jordan", CONTEXT, [COUNTRY, PLAYER, RIVER], embedder=embedder)
    assert result.best == PLAYER and result.best_index == 1
    assert [s.score for s in result.scores] == pytest.approx([0.6, 0.8, 0.0])
    assert [s.modified_context for s in result.scores] == [M_COUNTRY, M_PLAYER, M_RIVER]
    assert embedder.calls == [[CONTEXT, M_COUNTRY, M_PLAYER, M_RIVER]]


def test_ties_go_to_the_first_candidate():
    embedder = FixedEmbedder({CONTEXT: (1.0, 0.0), M_COUNTRY: (1.0, 1.0), M_PLAYER: (2.0, 2.0)})
    result = disambiguate("Jordan", CONTEXT, [COUNTRY, PLAYER], embedder=embedder)
    assert result.best == COUNTRY


def test_bad_inputs_are_errors():
    with pytest.raises(ValueError, match="no candidate"):
        disambiguate("Jordan", CONTEXT, [], embedder=FixedEmbedder({}))
    with pytest.raises(ValidationError):
        SenseCandidate(title="Jordan", description="   ")
    with pytest.raises(ValueError, match="does not occur"):
        disambiguate("Pippen", CONTEXT, [PLAYER], embedder=FixedEmbedder({}))


@pytest.mark.nlp
def test_real_minilm_resolves_mercury():
    candidates = [
        SenseCandidate(
            title="Mercury (element)",
            description="a chemical element, a heavy silvery metal that is liquid at room "
            "temperature",
        ),
        SenseCandidate(
            title="Mercury (planet)",
            description="the smallest planet in the Solar System and the one nearest the Sun",
        ),
        SenseCandidate(
            title="Freddie Mercury",
            description="a British singer and songwriter, lead vocalist of the rock band Queen",
        ),
    ]
    contexts = {
        "Mercury (planet)": "Mercury completes an orbit around the Sun every 88 days, "
        "faster than any other planet.",
        "Freddie Mercury": "The singer Mercury performed with Queen at Live Aid in 1985.",
        "Mercury (element)": "Thermometers once contained mercury, a toxic metal that stays "
        "liquid at room temperature.",
    }
    for title, context in contexts.items():
        result = disambiguate("Mercury", context, candidates)
        assert result.best.title == title
        assert all(-1.0 <= s.score <= 1.0 for s in result.scores)
