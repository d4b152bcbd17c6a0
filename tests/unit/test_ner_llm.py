"""LLM-based NER: prompt, structured output, confidences from logprobs or self-report."""

from __future__ import annotations

import json
import math

import pytest

from veracity.llm.base import (
    Capabilities,
    LLMRequest,
    LLMResponse,
    StructuredOutputError,
    TokenLogprob,
)
from veracity.nlp.entities import NERError, ThresholdConfig
from veracity.nlp.ner_llm import (
    LLMNER,
    aextract_entities,
    arecognise,
    locate_entities,
)
from veracity.testing import ScriptedLLM

TEXT = "Joe Biden flew to Paris. Biden met Macron in Paris."


class TokenLLM:
    """Replies with fixed tokens and per-token probabilities."""

    capabilities = Capabilities(json_schema=True, logprobs=True, max_top_logprobs=5)
    backend_id = "fake:tokens"

    def __init__(self, pieces: list[tuple[str, float]], *, with_logprobs: bool = True):
        self.pieces = pieces
        self.with_logprobs = with_logprobs
        self.requests: list[LLMRequest] = []

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        logprobs = [TokenLogprob(token=t, logprob=math.log(p)) for t, p in self.pieces]
        return LLMResponse(
            text="".join(t for t, _ in self.pieces),
            logprobs=logprobs if self.with_logprobs else None,
        )


PIECES = [
    ('{"entities": [{"text": "', 1.0),
    ("Joe", 0.9),
    (" Biden", 0.7),
    ('", "label": "', 1.0),
    ("PERSON", 0.8),
    ('"}, {"text": "', 1.0),
    ("Paris", 0.6),
    ('", "label": "', 1.0),
    ("LOC", 0.5),
    ("ATION", 1.0),
    ('"}]}', 1.0),
]


async def test_confidence_is_mean_token_probability_of_each_entity():
    llm = TokenLLM(PIECES)
    result = await LLMNER(llm).apredict(TEXT)
    assert result.confidence_source == "logprobs"
    assert llm.requests[0].logprobs is True
    assert "confidence" not in llm.requests[0].messages[-1].content
    by_text = {(s.text, s.start): s for s in result.spans}
    # Joe Biden: tokens "Joe" 0.9, " Biden" 0.7, "PERSON" 0.8 → 0.8
    assert by_text[("Joe Biden", 0)].confidence == pytest.approx(0.8)
    # Paris: "Paris" 0.6, "LOC" 0.5, "ATION" 1.0 → 0.7, both occurrences
    assert by_text[("Paris", 18)].confidence == pytest.approx(0.7)
    assert by_text[("Paris", 45)].sentence == 1
    assert ("Biden", 25) not in by_text  # "Joe Biden" does not match the bare "Biden"
    assert result.unmatched == [] and not result.truncated


async def test_entities_are_merged_and_thresholded():
    entities = await arecognise(TEXT, LLMNER(TokenLLM(PIECES)))
    assert [(e.text, e.sentences) for e in entities] == [("Joe Biden", [0]), ("Paris", [0, 1])]
    extraction = await aextract_entities(TEXT, LLMNER(TokenLLM(PIECES)), ThresholdConfig())
    assert extraction.filtered.threshold == 0.8
    assert [e.text for e in extraction.filtered.selected] == ["Joe Biden"]


async def test_missing_logprobs_is_an_error_not_a_default():
    with pytest.raises(NERError, match="logprobs"):
        await LLMNER(TokenLLM(PIECES, with_logprobs=False)).apredict(TEXT)


async def test_self_reported_confidence_when_backend_has_no_logprobs():
    reply = {
        "entities": [
            {"text": "Joe Biden", "label": "PERSON", "confidence": 0.9},
            {"text": "Macron", "label": "PERSON", "confidence": 0.4},
            {"text": "Kamala Harris", "label": "PERSON", "confidence": 0.8},
        ]
    }
    llm = ScriptedLLM(
        default=json.dumps(reply), capabilities=Capabilities(json_schema=True, logprobs=False)
    )
    ner = LLMNER(llm)
    result = await ner.apredict(TEXT)
    assert result.confidence_source == "self_reported"
    assert "confidence" in llm.calls[0].messages[-1].content
    assert TEXT in llm.calls[0].messages[-1].content
    assert [(s.text, s.confidence) for s in result.spans] == [("Joe Biden", 0.9), ("Macron", 0.4)]
    assert result.unmatched == ["Kamala Harris"]
    with pytest.raises(ValueError, match="logprobs"):
        LLMNER(llm, confidence="logprobs")


async def test_invalid_label_is_re_asked_then_fails():
    bad = json.dumps({"entities": [{"text": "Paris", "label": "CITY", "confidence": 0.5}]})
    good = json.dumps({"entities": [{"text": "Paris", "label": "LOCATION", "confidence": 0.5}]})
    caps = Capabilities(json_schema=True, logprobs=False)
    llm = ScriptedLLM(capabilities=caps).queue(bad, good)
    result = await LLMNER(llm).apredict(TEXT)
    assert len(llm.calls) == 2 and [s.label for s in result.spans] == ["LOCATION", "LOCATION"]
    with pytest.raises(StructuredOutputError):
        await LLMNER(ScriptedLLM(default=bad, capabilities=caps)).apredict(TEXT)


async def test_auto_uses_logprobs_of_a_scripted_model():
    reply = json.dumps({"entities": [{"text": "Macron", "label": "PERSON"}]})
    result = await LLMNER(ScriptedLLM(default=reply)).apredict(TEXT)
    assert result.confidence_source == "logprobs"
    assert [(s.text, s.confidence) for s in result.spans] == [("Macron", 1.0)]


async def test_blank_text_is_rejected():
    with pytest.raises(ValueError):
        await LLMNER(ScriptedLLM(default="{}")).apredict("  ")


def test_locate_entities_longest_first_and_case_fallback():
    spans, unmatched = locate_entities(
        TEXT, [("Biden", "PERSON"), ("Joe Biden", "PERSON"), ("paris", "LOCATION")], [0.5, 0.9, 0.7]
    )
    assert [(s.text, s.start, s.confidence) for s in spans] == [
        ("Joe Biden", 0, 0.9),
        ("Paris", 18, 0.7),
        ("Biden", 25, 0.5),
        ("Paris", 45, 0.7),
    ]
    assert unmatched == []
