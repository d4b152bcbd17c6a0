"""Every registered method completes on the embedded default for the README's inputs.

The claims, the article and a post with replies (the README shows ``--kind post`` without
a text; the post here follows the S2MAD README's shape) go through every method the
registry lists, on the real SmolLM2-135M model, offline. Retrieving methods search the
default local index (``default``), built here from a few documents, as a user's
``veracity index build`` would; ToE, MERMAID and D2D (whose evidence comes from the
sources it is given) name it as their source.

The 135M model cannot fact-check: the test asks that each check ends with a label of
the method's label space or a reasoned abstention — never an error (no
`StructuredOutputError` from a reply the schema allowed). Settings are cut down (rounds,
steps, documents, tokens) so the whole file runs in a few minutes on two cores; the
timings of one run are in the report of issue 27.
"""

from __future__ import annotations

import time

import pytest
from test_toe_embedded import BOUNDED as TOE_BOUNDED  # its bounded search

from veracity.core import registry
from veracity.core.config import LLMConfig
from veracity.core.labels import get_label_space
from veracity.core.types import Article, Claim, Document, Post, Reply
from veracity.llm.factory import build_llm
from veracity.retrieval.local.corpus import build_local_corpus
from veracity.runtime import build_run, resolve_llm, resolve_spec
from veracity.runtime.home import home_paths

pytestmark = [pytest.mark.embedded, pytest.mark.slow]

CLAIMS = [Claim(text="The Eiffel Tower is in Berlin."), Claim(text="Vaccines cause autism.")]
ARTICLE = Article(title="Moon landing faked", body="An article's text.")
POST = Post(
    text="Vaccines cause autism, a new study shows. Share this before it is deleted!",
    replies=[
        Reply(id="1", text="Which study? Every large study found no link at all."),
        Reply(id="2", text="My nephew changed after his shots, so it is true."),
        Reply(id="3", text="The 1998 paper behind this claim was retracted for fraud."),
    ],
)
DOCS = [
    Document(
        id="eiffel",
        title="Eiffel Tower",
        text="The Eiffel Tower is a wrought-iron lattice tower on the Champ de Mars in "
        "Paris, France. It was completed in 1889 for the World's Fair.",
    ),
    Document(
        id="berlin",
        title="Berlin",
        text="Berlin is the capital of Germany. Its landmarks include the Brandenburg Gate "
        "and the Berlin TV Tower.",
    ),
    Document(
        id="vaccines",
        title="Vaccines and autism",
        text="Large studies of millions of children found no link between vaccines and "
        "autism. The 1998 paper that claimed one was retracted.",
    ),
    Document(
        id="apollo",
        title="Apollo 11",
        text="Apollo 11 landed on the Moon in July 1969. Rock samples and retroreflectors "
        "left on the surface confirm the landings.",
    ),
]
LOCAL = {"docs": {"type": "local", "index": "default"}}

# Inputs and cut-down settings per method: (inputs, method config, sources).
SMALL = {"max_tokens": 200}
# the claim-extraction stage as one step: each sentence is a claim, no rewrite, no sorting
ONE_CLAIM = {"decompose": False, "decontextualise": False, "checkworthiness": False}
PLAN = {
    "direct": ([*CLAIMS, ARTICLE, POST], {}, None),
    "cot": ([CLAIMS[0], ARTICLE, POST], {"max_tokens": 300, "max_reasoning_words": 60}, None),
    "rag": ([*CLAIMS, ARTICLE, POST], {"top_k": 2}, None),
    "react": ([CLAIMS[1]], {"max_steps": 2, "top_k": 2, **SMALL}, None),
    "zofia": (  # its main input; a claim goes through the same stages
        [ARTICLE],
        {"max_rounds": 1, "max_sub_claims": 1, "rag_top_k": 2, "web_top_k": 3, "max_tokens": 64},
        None,
    ),
    "radar": (
        [CLAIMS[0]],
        {"top_m": 3, "rounds": 2, "max_tokens_turn": 32, "max_tokens_judge": 128},
        None,
    ),
    "radar_single": (
        [CLAIMS[1]],
        {"top_m": 3, "max_tokens_turn": 64, "max_tokens_judge": 128},
        None,
    ),
    "toe": ([CLAIMS[0]], TOE_BOUNDED, {"factcheck": LOCAL["docs"]}),
    "s2mad": (
        [POST],
        {"top_k": 2, "rounds": 0, "stance_tokens_per_reply": 24, "stance_reasons": False},
        None,
    ),
    "fire": ([CLAIMS[0]], {"max_steps": 2, "top_k": 2, **SMALL}, None),
    "d2d": (  # all four stages, each turn and ruling cut short; two of the five judges
        [CLAIMS[1]],
        {
            "top_k": 2,
            "free_rounds": 1,
            "profiles": False,
            "max_tokens_turn": 48,
            "max_tokens_judge": 96,
            "max_tokens_summary": 64,
            "dimensions": ["accuracy", "reasoning"],
        },
        LOCAL,
    ),
    "mermaid": ([ARTICLE], {"max_steps": 2, **SMALL}, LOCAL),
    "mermaid_single": ([CLAIMS[0]], {"max_steps": 2, **SMALL}, LOCAL),
    # issue 28's baselines (part A), each on its own input kind, cut down
    "hiss": ([CLAIMS[0]], {"max_subclaims": 1, "max_questions": 1, "top_k": 2, **SMALL}, None),
    "factagent": ([ARTICLE], {"tools": ["phrase", "search"], "top_k": 2, "max_tokens": 400}, None),
    "steel": ([CLAIMS[1]], {"max_rounds": 2, "top_k": 2, **SMALL}, None),
    "defgen": ([CLAIMS[0]], SMALL, None),
    "afacta": ([CLAIMS[1]], SMALL, None),
    "teller": ([CLAIMS[0]], {}, None),
    "adsent": ([CLAIMS[1]], SMALL, None),
    # issue 28's baselines (part B): one fact, one search, no decomposition, cut down
    "safe": (
        [CLAIMS[0]],
        {"max_facts": 1, "max_searches": 1, "top_k": 2, "extraction": ONE_CLAIM, **SMALL},
        None,
    ),
    "folk": ([CLAIMS[1]], {"max_predicates": 1, "top_k": 2, **SMALL}, None),
    "programfc": ([CLAIMS[0]], {"max_program_steps": 2, "top_k": 2, **SMALL}, None),
    "self_ask": ([CLAIMS[1]], {"max_follow_ups": 1, "top_k": 2, **SMALL}, None),
    "factool": (
        [CLAIMS[0]],
        {"max_claims": 1, "queries_per_claim": 1, "top_k": 2, "extraction": ONE_CLAIM, **SMALL},
        None,
    ),
    "factcheck_gpt": (
        [CLAIMS[1]],
        {"max_claims": 1, "queries_per_claim": 1, "top_k": 2, "extraction": ONE_CLAIM, **SMALL},
        None,
    ),
}


@pytest.fixture(scope="module")
def llm():
    # one llama.cpp thread and slot: several stall badly on a busy shared CPU
    cfg = LLMConfig(cache_mode="off", n_threads=1, n_parallel=1)
    return build_llm(resolve_llm(cfg), models_dir=home_paths().models)


def installed() -> list[str]:
    """The installed methods (other tests register extra ones in this process)."""
    return sorted(registry.methods.entry_point_names())


def default_plan(method: str) -> tuple[list, dict, None]:
    """A method without a plan: its defaults, on one input of the first kind it takes (so
    a new method is covered without an entry in `PLAN`)."""
    kind = registry.methods.get(method).input_kinds[0]
    return [{"claim": CLAIMS[0], "article": ARTICLE, "post": POST}[kind]], {}, None


def test_every_plan_is_for_an_installed_method():
    assert set(PLAN) <= set(installed())


@pytest.mark.parametrize("method", installed())
async def test_method_completes_on_the_embedded_default(method, llm, tmp_path):
    build_local_corpus("default", DOCS, mode="bm25", indexes_dir=home_paths().indexes)
    inputs, config, sources = PLAN.get(method) or default_plan(method)
    if method.startswith("mermaid"):
        config = {**config, "memory": {"path": str(tmp_path / "memory.sqlite"), "embedder": None}}
    flags = {"method": method, "method_config": config, "sources": sources}
    run = build_run(resolve_spec(flags=flags), llm=llm)
    labels = get_label_space(run.method.label_space).labels
    try:
        for item in inputs:
            started = time.perf_counter()
            verdict = await run.check(item)
            what = f"{method} on a {item.kind} ({time.perf_counter() - started:.0f} s)"
            print(f"{what}: {verdict.label or verdict.abstain_reason or verdict.error}")
            assert verdict.error is None, f"{what}: {verdict.error}"
            assert verdict.label in labels or (verdict.abstained and verdict.abstain_reason)
            assert verdict.usage.llm_calls >= 1, what
    finally:
        toolbox = getattr(run.method, "toolbox", None)
        if toolbox is not None:
            await toolbox.aclose()
