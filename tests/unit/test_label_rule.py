"""One rule for shown probabilities (issue 11): the label is the most probable label,
probabilities sum to 1 over the label space, and a tie or unreadable distribution is
stated — whatever method produced the verdict."""

import pytest
from rich.console import Console

from veracity.cli.render import verdict_panel
from veracity.core import context
from veracity.core.labels import get_label_space
from veracity.methods.labelling import settle_probabilities

BINARY = get_label_space("real_fake")


def test_a_label_the_probabilities_contradict_is_replaced_and_noted():
    fields = {"label": "REAL", "probabilities": {"REAL": 0.47, "FAKE": 0.53}}
    with context.check_context() as ctx:
        out = settle_probabilities(fields, BINARY)
    assert out["label"] == "FAKE" and out["confidence"] == pytest.approx(0.53)
    assert out["metadata"] == {"answer_label": "REAL"}
    assert "replaced by the most probable label FAKE" in out["probability_note"]
    assert ctx.trace.of_kind("note")  # the trace says so too
    assert out["score"] == pytest.approx(BINARY.expected_score(out["probabilities"]))


def test_a_tie_is_stated():
    out = settle_probabilities(
        {"label": "REAL", "probabilities": {"REAL": 0.5, "FAKE": 0.5}}, BINARY
    )
    assert out["label"] == "REAL" and "tie at 0.50" in out["probability_note"]


def test_mass_outside_the_label_space_is_dropped_and_the_rest_sums_to_one():
    # ZoFia's judge: REAL 0.00, FAKE 0.75 and INSUFFICIENT 0.25
    probs = {"REAL": 0.0, "FAKE": 0.75, "INSUFFICIENT": 0.25}
    out = settle_probabilities({"label": "FAKE", "probabilities": probs}, BINARY)
    assert out["probabilities"] == {"REAL": 0.0, "FAKE": 1.0}
    assert sum(out["probabilities"].values()) == pytest.approx(1.0)
    assert "without INSUFFICIENT 0.25" in out["probability_note"]


def test_an_unreadable_distribution_is_stated_not_shown():
    out = settle_probabilities({"label": "FAKE", "probabilities": {"MAYBE": 1.0}}, BINARY)
    assert out["probabilities"] is None and out["confidence"] is None
    assert out["label"] == "FAKE" and "no readable probabilities" in out["probability_note"]


def test_the_verdict_panel_shows_the_note():
    from veracity.core.types import Verdict

    fields = settle_probabilities(
        {"label": "REAL", "probabilities": {"REAL": 0.4, "FAKE": 0.6}}, BINARY
    )
    verdict = Verdict(method="zofia", label_space="real_fake", **fields)
    console = Console(record=True, width=120)
    console.print(verdict_panel(verdict, "a claim"))
    text = console.export_text()
    assert " FAKE " in text and "FAKE 0.60" in text and "note: the answer REAL" in text
