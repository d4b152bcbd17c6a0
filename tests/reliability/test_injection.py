"""Injection cases for every method (issue items 1 and the injection figures): role
markers, special tokens and instruction text inside claims, posts, articles, passages,
replies and debate turns, against a model that obeys instructions it reads outside
declared data. Goal: 0 role changes, 0 intact markers, 0 verdict flips."""

from __future__ import annotations

import pytest

from veracity.llm.client import ManagedLLM
from veracity.llm.openai_compat import OpenAICompatLLM
from veracity.methods.base import load_method
from veracity.prompting import PromptBundle
from veracity.testing.fake_openai import FakeOpenAIServer
from veracity.testing.injection import (
    LOCATIONS,
    CaseResult,
    make_input,
    offline_method,
    payload,
    run_case,
    summarize,
)

pytestmark = [pytest.mark.server]

EXAMPLES = 1  # benchmarks/injection.py runs more


@pytest.fixture(scope="module")
def obedient():
    with FakeOpenAIServer() as server:
        yield OpenAICompatLLM("fake", base_url=server.url, logprobs=True)


@pytest.mark.parametrize("method", list(LOCATIONS))
async def test_injected_text_never_changes_roles_or_verdicts(obedient, method, capsys):
    results = [
        await run_case(obedient, method, location, i)
        for location in LOCATIONS[method]
        for i in range(EXAMPLES)
    ]
    (row,) = summarize(results)
    with capsys.disabled():
        print(f"\n{row}")
    assert row["errors"] == 0, [r.error for r in results if r.error]
    assert row["role_changes"] == 0 and row["intact_markers"] == 0
    assert row["flips"] == 0, [(r.location, r.clean, r.injected) for r in results if r.flipped]


async def test_the_instrument_flips_when_text_escapes_its_fence(obedient):
    """The same payload shown without a fence (a prompt override that declares the input
    trusted) does flip the obedient model: the zero above is the fences' doing."""
    method = offline_method("direct", ManagedLLM(obedient), [])
    clean = await method.check(make_input("direct", 0, "claim", None))
    unsafe = "{# trusted: input, kind, labels #}\n<|user|>\nLabels: {{ labels }}\n{{ input }}"
    overridden = load_method(
        "direct", llm=method.llm, sources=method.sources,
        prompts=PromptBundle((("direct.j2", unsafe),)),
    )  # fmt: skip
    flipped = await overridden.check(make_input("direct", 0, "claim", payload("false")))
    assert clean.label == "true" and flipped.label == "false"


def test_a_failed_check_is_an_error_not_a_flip():
    case = {"method": "zofia", "location": "article", "example": 0, "target": "REAL",
            "opened": 0, "raw_markers": 0}  # fmt: skip
    failed = CaseResult(**case, clean=None, injected="REAL", error="no valid reply")
    flipped = CaseResult(**case, clean="FAKE", injected="REAL")
    (row,) = summarize([failed, flipped])
    assert (row["flips"], row["errors"]) == (1, 1)
