"""The shared claim-extraction stage on a scripted model, in sentence mode: sentences,
atomic claims, self-contained rewrites, check-worthiness, de-duplication, and the spans
kept (window mode: test_claims_window.py)."""

import json

import pytest

from veracity.core.labels import get_label_space
from veracity.evidence.claims import (
    ClaimExtractor,
    ExtractionConfig,
    conjunction_label,
    word_overlap,
)
from veracity.llm.base import StructuredOutputError
from veracity.testing import ScriptedLLM

TEXT = (
    "Marie Curie was born in Warsaw in 1867. Born in Warsaw, she won two Nobel Prizes. "
    "I love her story."
)


def claims(*items):
    return json.dumps({"claims": list(items)})


def scripted():
    llm = ScriptedLLM()
    llm.on(".*", claims("Marie Curie was born in Warsaw.", "Marie Curie was born in 1867."),
           tag="claims:decompose:0")  # fmt: skip
    llm.on(".*", claims("She won two Nobel Prizes.", "Marie Curie was born in Warsaw."),
           tag="claims:decompose:1")  # fmt: skip
    llm.on(".*", claims(), tag="claims:decompose:2")
    llm.on(".*", claims("Marie Curie was born in Warsaw.", "Marie Curie was born in 1867."),
           tag="claims:decontextualise:0")  # fmt: skip
    llm.on(".*", claims("Marie Curie won two Nobel Prizes.", "Marie Curie was born in Warsaw."),
           tag="claims:decontextualise:1")  # fmt: skip
    llm.on(".*", claims("factual", "factual", "opinion", "factual"), tag="claims:checkworthy")
    return llm


async def test_claims_are_atomic_self_contained_sorted_and_deduplicated_with_spans():
    llm = scripted()
    found = await ClaimExtractor(llm, ExtractionConfig(mode="sentence")).extract(TEXT)
    texts = [c.text for c in found.claims]
    # the repeated Warsaw claim of sentence 2 was merged into sentence 1's
    assert texts == [
        "Marie Curie was born in Warsaw.",
        "Marie Curie was born in 1867.",
        "Marie Curie won two Nobel Prizes.",
    ]
    assert found.duplicates == 1 and [c.id for c in found.claims] == ["c1", "c2", "c3"]
    first, second = found.sentences[0], found.sentences[1]
    assert TEXT[first[0] : first[1]] == "Marie Curie was born in Warsaw in 1867."
    warsaw = found.claims[0]
    assert warsaw.spans == [first, second] and warsaw.merged == 1
    nobel = found.claims[2]
    assert nobel.atomic == "She won two Nobel Prizes." and nobel.spans == [second]
    start, end = nobel.spans[0]
    assert TEXT[start:end] == "Born in Warsaw, she won two Nobel Prizes."
    # the script called it an opinion, but it names a number and names: not confidently
    # non-factual, so it is checked, the model's category kept beside
    assert nobel.category == "factual" and nobel.model_category == "opinion"
    assert [c.text for c in found.checkworthy] == texts
    # the sentence with no claims made no decontextualisation call
    assert not llm.calls_tagged("claims:decontextualise:2")
    # untrusted text is fenced in the prompts; the rewrite schema fixes the count
    decon = llm.calls_tagged("claims:decontextualise:1")[0]
    assert '<claim id="1">' in decon.messages[-1].content
    items = decon.json_schema["properties"]["claims"]
    assert items["minItems"] == items["maxItems"] == 2


async def test_steps_can_be_turned_off():
    llm = ScriptedLLM()
    config = ExtractionConfig(decompose=False, decontextualise=False, checkworthiness=False)
    found = await ClaimExtractor(llm, config).extract("One fact. Another fact.")
    assert [c.text for c in found.claims] == ["One fact.", "Another fact."]
    assert llm.calls == [] and all(c.category is None for c in found.claims)


async def test_a_wrong_count_of_rewrites_is_an_error_not_a_guess():
    llm = ScriptedLLM()
    llm.on(".*", claims("A is B.", "C is D."), tag="claims:decompose")
    llm.on(".*", claims("only one"), tag="claims:decontextualise")
    with pytest.raises(StructuredOutputError):
        config = ExtractionConfig(mode="sentence", checkworthiness=False)
        await ClaimExtractor(llm, config).extract("A is B, C is D.")


async def test_blank_text_is_refused():
    with pytest.raises(ValueError, match="non-empty"):
        await ClaimExtractor(ScriptedLLM()).extract("  \n ")


def test_conjunction_label_and_overlap():
    tf = get_label_space("true_false")
    assert conjunction_label(tf, [True, True]) == "true"
    assert conjunction_label(tf, [True, False]) == "false"
    three = get_label_space("true_half_false")
    assert conjunction_label(three, [True, False]) == "HALF-TRUE"
    assert conjunction_label(three, [False, False]) == "FALSE"
    assert word_overlap("A b c", "c B a") == 1.0 and word_overlap("a", "b") == 0.0
