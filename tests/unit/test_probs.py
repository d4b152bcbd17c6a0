import math

import pytest

from veracity.llm.base import LLMResponse, TokenLogprob, TopLogprob
from veracity.llm.probs import choice_probabilities, sampled_choice_probabilities


def _tok(token, p, alts):
    return TokenLogprob(
        token=token,
        logprob=math.log(p),
        top=[TopLogprob(token=t, logprob=math.log(q)) for t, q in alts],
    )


def test_first_token_with_leading_space_and_partial_tokens():
    # " STOP" and "ST" both count for STOP; "CONT" for CONTINUE; "Maybe" for nothing
    resp = LLMResponse(
        text=" STOP",
        logprobs=[_tok(" STOP", 0.5, [(" STOP", 0.5), ("ST", 0.1), ("CONT", 0.2), ("Maybe", 0.2)])],
    )
    probs = choice_probabilities(resp, ["STOP", "CONTINUE"])
    assert probs.probs["STOP"] == pytest.approx(0.6 / 0.8)
    assert probs.probs["CONTINUE"] == pytest.approx(0.2 / 0.8)
    assert probs.mass == pytest.approx(0.8)
    assert probs.best == "STOP" and probs.method == "logprobs"


def test_json_field_locates_the_answer_token_even_with_a_stripped_fence():
    tokens = [
        _tok("```", 0.9, []),
        _tok("{", 0.9, []),
        _tok('"label', 0.9, []),
        _tok('":', 0.9, []),
        _tok(' "', 0.9, []),
        _tok("FALSE", 0.7, [("FALSE", 0.7), ("TR", 0.2), ("HAL", 0.05)]),
        _tok('"}', 0.9, []),
    ]
    resp = LLMResponse(text='{"label": "FALSE"}', logprobs=tokens)
    probs = choice_probabilities(resp, ["TRUE", "HALF-TRUE", "FALSE"], field="label")
    assert probs.best == "FALSE"
    assert probs.probs["TRUE"] == pytest.approx(0.2 / 0.95)
    assert probs.probs["HALF-TRUE"] == pytest.approx(0.05 / 0.95)


def test_token_shared_by_several_choices_is_ignored():
    # "T" starts TRUE and nothing else here, but "F" would start both FALSE and FAKE
    resp = LLMResponse(text="F", logprobs=[_tok("F", 0.6, [("F", 0.6), ("T", 0.4)])])
    probs = choice_probabilities(resp, ["TRUE", "FALSE", "FAKE"])
    assert probs.probs == {"TRUE": 1.0, "FALSE": 0.0, "FAKE": 0.0}


def test_no_logprobs_or_no_match_gives_none():
    assert choice_probabilities(LLMResponse(text="STOP"), ["STOP"]) is None
    resp = LLMResponse(text="x", logprobs=[_tok("x", 1.0, [("x", 1.0)])])
    assert choice_probabilities(resp, ["STOP", "CONTINUE"]) is None
    assert choice_probabilities(resp, ["STOP"], field="decision") is None


async def test_sampled_estimate_counts_usable_answers():
    answers = ["STOP", "STOP", "CONTINUE", None, "STOP"]

    async def sample(i):
        return answers[i]

    probs = await sampled_choice_probabilities(sample, ["STOP", "CONTINUE"], k=5)
    assert probs.probs == {"STOP": 0.75, "CONTINUE": 0.25}
    assert probs.mass == 0.8 and probs.samples == 5 and probs.method == "sampling"

    async def useless(i):
        return None

    with pytest.raises(ValueError, match="none of 3"):
        await sampled_choice_probabilities(useless, ["STOP"], k=3)
