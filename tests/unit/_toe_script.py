"""Scripting helpers for the ToE tests: an invented claim, two small sources, and a
scripted model that answers each ToE agent by its trace tag."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from veracity.core.types import Claim, Document
from veracity.llm.base import LLMRequest
from veracity.testing import InMemorySource, ScriptedLLM

# Our own invented example: no real town or canal.
CLAIM = Claim(text="The town of Brellin opened a 40 km flood canal in 2019 paid by the state.")

FACTCHECK_DOCS = [
    Document(
        id="fc1",
        title="Fact check: the Brellin canal",
        url="https://checks.example.org/brellin-canal",
        text="The Brellin canal is 12 km long, not 40 km. It opened in 2021 after delays.",
    ),
    Document(
        id="fc2",
        title="Brellin council minutes",
        url="https://brellin.gov.example/minutes",
        text="The council paid for the Brellin canal from its own budget. The state gave nothing.",
    ),
]
WIKI_DOCS = [
    Document(
        id="w1",
        title="Brellin",
        url="https://en.wikipedia.org/wiki/Brellin",
        text="Brellin is a town on the river Oss. Its flood canal opened in 2021.",
    ),
]


def sources() -> dict[str, InMemorySource]:
    """A fact-check source and an encyclopedia (web, arXiv and social stay unmapped)."""
    return {
        "factcheck": InMemorySource(FACTCHECK_DOCS, name="factcheck"),
        "wikipedia": InMemorySource(WIKI_DOCS, name="wikipedia"),
    }


def features(category: str = "political", recent: bool = True) -> str:
    return json.dumps(
        {
            "category": category,
            "locale": "local",
            "recent_event": recent,
            "historical_fact": False,
            "factual_statement": True,
            "opinion": False,
            "prediction": False,
            "background_query": "Brellin flood canal",
            "supporting_query": "Brellin canal 40 km 2019",
            "counter_query": "Brellin canal false",
        }
    )


def _clean(request: LLMRequest) -> str:
    """Keep the first sentence of the excerpt, verbatim."""
    excerpt = re.search(r"<excerpt>\n(.*?)\n</excerpt>", request.messages[-1].content, re.S)
    assert excerpt is not None
    first = re.split(r"(?<=\.)\s", excerpt.group(1).strip())[0]
    return json.dumps({"statements": [first]})


def _analyse(request: LLMRequest) -> str:
    text = request.messages[-1].content
    official = ".gov." in text
    return json.dumps(
        {
            "stance": "refutes",
            "official": official,
            "primary": official,
            "relevance": 90,
            "credibility": 80,
            "key_point": "It contradicts the claim's figures.",
        }
    )


def judge(plan: dict[str, tuple[float, float]]) -> Callable[[LLMRequest], str]:
    """The judge's (veracity, reliability) per node id, read from the tag."""

    def reply(request: LLMRequest) -> str:
        node = request.tag.split(":")[2]
        v, r = plan.get(node, plan.get("*", (0.5, 0.5)))
        return json.dumps(
            {"veracity": round(v * 100), "reliability": round(r * 100), "reason": f"[E1] {node}"}
        )

    return reply


DECOMPOSITION = json.dumps(
    {
        "subclaims": [
            {
                "claim": "The Brellin canal is 40 km long.",
                "dimension": "quantitative accuracy",
                "weight": 5,
            },
            {"claim": "The Brellin canal opened in 2019.", "dimension": "core event", "weight": 3},
            {
                "claim": "The state paid for the Brellin canal.",
                "dimension": "source credibility",
                "weight": 2,
            },
        ]
    }
)


def toe_llm(
    plan: dict[str, tuple[float, float]],
    *,
    category: str = "political",
    decomposition: str | Callable[[LLMRequest], str] = DECOMPOSITION,
    features_reply: str | None = None,
) -> ScriptedLLM:
    """A scripted model for every ToE agent; `plan` sets the judge's scores per node."""
    llm = ScriptedLLM()
    llm.on(".", features_reply or features(category), tag="toe:features")
    llm.on(".", json.dumps({"query": "Brellin canal"}), tag="toe:query")
    llm.on(".", _clean, tag="toe:clean")
    llm.on(".", _analyse, tag="toe:analyse")
    llm.on(".", judge(plan), tag="toe:judge")
    llm.on(".", decomposition, tag="toe:decompose")
    return llm
