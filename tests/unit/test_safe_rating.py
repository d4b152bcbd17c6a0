"""SAFE's rater rates from the search results alone (issue 40, item 4).

SAFE's release calls a fact supported only when its search results state or strongly
imply it; what the rater knows on its own does not count. The rater here is a scripted
model that does what its prompt's instructions (the text outside the data fences) allow:
it answers SUPPORTED when the results back the fact, and also when the instructions let
it fall back on common knowledge; otherwise NOT_SUPPORTED. So a well-known fact that the
results are silent on shows which rule the prompt gives.
"""

from __future__ import annotations

import json
import re

from veracity.core.types import Claim, Document
from veracity.llm.base import LLMRequest
from veracity.methods.safe import SafeMethod
from veracity.testing import InMemorySource, ScriptedLLM

FACT = "Water boils at 100 degrees Celsius at sea level."
SILENT = [Document(id="tea", title="Tea", text="Green tea is brewed below boiling point.")]
BACKING = [Document(id="boil", title="Boiling", text="At sea level water boils at 100 °C.")]
COMMON_KNOWLEDGE = re.compile(r"common(ly)?\s+know|general knowledge", re.I)


FENCED = re.compile(r'^<([a-z]+)(?: id="[^"]*")?>\n(.*?)\n</\1>$', re.M | re.S)


def _instructions(request: LLMRequest) -> str:
    """The prompt without its fenced data (what a model takes as instructions)."""
    return FENCED.sub(" ", "\n".join(m.content for m in request.messages))


def _results(request: LLMRequest) -> str:
    text = "\n".join(m.content for m in request.messages)
    return " ".join(body for tag, body in FENCED.findall(text) if tag == "knowledge")


def _rater(request: LLMRequest) -> str:
    """The reply of a rater that follows its instructions (see the module docstring)."""
    backed = "boils at 100" in _results(request)
    allowed = bool(COMMON_KNOWLEDGE.search(_instructions(request)))
    rating = "SUPPORTED" if backed or allowed else "NOT_SUPPORTED"
    return json.dumps({"reasoning": f"backed by the results: {backed}.", "rating": rating})


def _llm() -> ScriptedLLM:
    llm = ScriptedLLM()
    facts = json.dumps({"claims": [FACT]})
    llm.on(".*", facts, tag="safe:facts:decompose")
    llm.on(".*", facts, tag="safe:facts:decontextualise")
    llm.on(lambda r: True, lambda r: _rater(r), tag="safe:c1:rate")
    llm.on(".*", json.dumps({"query": "water boiling point sea level"}), tag="safe:c1")
    return llm


async def _check(docs: list[Document], layout: str):
    llm = _llm()
    method = SafeMethod(
        llm=llm,
        config={"max_searches": 1, "prompt_layout": layout},
        sources={"web": InMemorySource(docs, name="web")},
    )
    return await method.check(Claim(text=FACT)), llm


async def test_the_rater_goes_by_the_results_alone():
    """Silent results: not supported, in both layouts; backing results: supported."""
    for layout in ("shared", "paper"):
        verdict, llm = await _check(SILENT, layout)
        assert verdict.error is None
        assert [f["rating"] for f in verdict.metadata["facts"]] == ["NOT_SUPPORTED"], layout
        assert verdict.label == "false"
        instructions = _instructions(llm.calls_tagged("safe:c1:rate")[0])
        assert not COMMON_KNOWLEDGE.search(instructions)
        assert "strongly imply" in instructions  # SAFE's bar: stated or strongly implied
    verdict, _ = await _check(BACKING, "shared")
    assert [f["rating"] for f in verdict.metadata["facts"]] == ["SUPPORTED"]
    assert verdict.label == "true"
