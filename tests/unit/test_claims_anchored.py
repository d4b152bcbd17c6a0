"""Claims anchored in their text (issue 41, item 4): a scripted model that invents claims
and attaches a claim to the wrong sentence; the invented ones are dropped and shown, the
mis-attached one moves to its sentence; a plain fact the model calls advice is checked."""

from __future__ import annotations

import json

from rich.console import Console

from veracity.documents import DocumentChecker, from_text
from veracity.documents.annotate import live_view, view
from veracity.documents.html_report import render_report
from veracity.evidence.claims import (
    ClaimExtractor,
    ExtractedClaim,
    ExtractionConfig,
    anchor,
    anchored,
    confident_not_factual,
)
from veracity.llm.client import ManagedLLM
from veracity.methods.base import BaseMethod
from veracity.testing import ScriptedLLM

SENTENCE = ExtractionConfig(mode="sentence")  # the model is scripted per sentence

TEXT = (
    "Marie Curie was born in Warsaw in 1867. She won two Nobel Prizes. "
    "The Eiffel Tower is in Berlin."
)
INVENTED = [
    "The whole text is broken into claims.",
    "2021-03-28 14:59:57",
    "The whole text is written by other people or programs.",
]


def claims(*items):
    return json.dumps({"claims": list(items)})


def inventing_model(categories=("factual", "factual", "factual", "factual")):
    """The issue's failures: three claims in no sentence, and Curie's birthplace put on
    the Eiffel Tower's sentence."""
    llm = ScriptedLLM()
    per_sentence = {
        0: ["Marie Curie was born in 1867.", INVENTED[0]],
        1: ["She won two Nobel Prizes.", INVENTED[1]],
        2: ["Marie Curie was born in Warsaw.", INVENTED[2], "The Eiffel Tower is in Berlin."],
    }
    for i, items in per_sentence.items():
        llm.on(".*", claims(*items), tag=f"claims:decompose:{i}")
        rewritten = [c.replace("She won", "Marie Curie won") for c in items]
        llm.on(".*", claims(*rewritten), tag=f"claims:decontextualise:{i}")
    llm.on(".*", claims(*categories), tag="claims:checkworthy")
    return llm


class Agrees(BaseMethod):
    """Every claim true: the extraction is what is tested."""

    name = "agrees"
    default_labels = "true_false"
    input_kinds = ("claim",)

    async def run(self, item, ctx):
        return self.verdict(label="true")


async def test_invented_claims_are_dropped_and_a_mis_mapped_one_moves_to_its_sentence():
    llm = inventing_model()
    found = await ClaimExtractor(ManagedLLM(llm), SENTENCE).extract(TEXT)
    assert [c.text for c in found.dropped] == INVENTED
    assert found.reattached == 1
    by_text = {c.text: TEXT[c.spans[0][0] : c.spans[0][1]] for c in found.claims}
    assert by_text == {
        "Marie Curie was born in 1867.": "Marie Curie was born in Warsaw in 1867.",
        "Marie Curie was born in Warsaw.": "Marie Curie was born in Warsaw in 1867.",
        "Marie Curie won two Nobel Prizes.": "She won two Nobel Prizes.",
        "The Eiffel Tower is in Berlin.": "The Eiffel Tower is in Berlin.",
    }
    assert [c.id for c in found.claims] == ["c1", "c2", "c3", "c4"]  # text order
    # the check-worthiness step was asked about the four kept claims only
    (asked,) = llm.calls_tagged("claims:checkworthy")
    assert "whole text" not in asked.messages[-1].content


async def test_dropped_claims_are_counted_and_shown_in_every_view():
    llm = inventing_model()
    checker = DocumentChecker(Agrees(llm), ClaimExtractor(ManagedLLM(llm), SENTENCE))
    report = await checker.report(from_text(TEXT, title="Curie"))
    assert report.dropped_unanchored == INVENTED and report.reattached == 1
    assert report.summary.dropped_unanchored == 3 and report.summary.claims == 4
    assert report.summary.factuality == 1.0  # dropped claims are no facts of the text
    assert json.loads(report.model_dump_json())["dropped_unanchored"] == INVENTED
    # the terminal
    from veracity.cli.render_document import document_view

    console = Console(width=200, record=True, color_system=None)
    console.print(document_view(report))
    shown = console.export_text()
    assert "3 dropped (not in the text)" in shown
    assert all(text in shown for text in INVENTED)
    # the HTML report and the web UI (finished, and live from the progress event)
    page = render_report(report)
    assert "Dropped: not in the text (3)" in page and INVENTED[2] in page
    assert view(report).dropped == INVENTED
    live = live_view(TEXT, [], {}, dropped=INVENTED)
    assert live.dropped == INVENTED


async def test_a_plain_fact_called_advice_without_confidence_is_still_checked():
    llm = inventing_model(categories=("factual", "advice", "factual", "trivial"))
    checker = DocumentChecker(Agrees(llm), ClaimExtractor(ManagedLLM(llm), SENTENCE))
    report = await checker.report(from_text(TEXT))
    warsaw = next(o for o in report.claims if o.claim.text == "Marie Curie was born in Warsaw.")
    assert warsaw.status == "checked" and warsaw.claim.model_category == "advice"
    assert warsaw.claim.category == "factual" and warsaw.claim.checkworthy
    assert report.summary.checked == 4 and report.summary.not_checkworthy == 0


def test_confident_means_the_claim_names_nothing_checkable():
    assert confident_not_factual("Drink more water every day.", "advice")
    assert confident_not_factual("It is a lovely story.", "opinion")
    assert confident_not_factual("Is Paris in France?", "question")
    assert not confident_not_factual("Marie Curie was born in Warsaw.", "advice")
    assert not confident_not_factual("The tower is 330 metres tall.", "trivial")
    assert not confident_not_factual("She won two prizes.", "opinion")
    assert not confident_not_factual("Anything at all.", "factual")
    # or the wording has the category's form, whatever names it holds
    assert confident_not_factual("I love Paris.", "opinion")
    assert confident_not_factual("You should visit Paris in May.", "advice")
    assert not confident_not_factual("Paris is the capital of France.", "opinion")


def test_decontextualised_claims_stay_anchored():
    window = "Marie Curie was a physicist. She won two Nobel Prizes. It was in Paris."
    # names resolved from the window, the sentence's own words kept
    assert anchored("Marie Curie won two Nobel Prizes.", "She won two Nobel Prizes.", window)
    assert anchored("Marie Curie's prizes were awarded in Paris.", "It was in Paris.", window)
    assert anchored("Jupiter's density is 1.33 g/cm3.", "Its density is 1.33 g/cm3.", "Jupiter")
    # a number the text does not have, or no word of the sentence itself
    assert not anchored("Marie Curie won two Nobel Prizes in 1911.", "She won two.", window)
    assert not anchored("Marie Curie was a physicist.", "It was in Paris.", window)
    assert anchored("1,000 people came.", "1000 people came.")  # separators ignored


def test_a_claim_anchored_nowhere_is_dropped_not_moved():
    sentences = ["The sky is blue.", "Grass is green."]
    spans = [(0, 16), (17, 32)]
    claim = ExtractedClaim(id="", text="Bananas are yellow.", atomic="x", spans=[spans[0]],
                           sentence=0)  # fmt: skip
    done = anchor([claim], sentences, ["", ""], spans)
    assert done.kept == [] and done.dropped == [claim] and done.reattached == 0
