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


def _json_reply(tokens, at, alts):
    """A constrained JSON reply; `alts` are the alternatives reported at token `at`."""
    logprobs = [_tok(t, 0.9, alts if i == at else [(t, 0.9)]) for i, t in enumerate(tokens)]
    return LLMResponse(text="".join(tokens), logprobs=logprobs)


def test_exact_schema_counts_only_tokens_the_grammar_allows():
    # backends report alternatives before the grammar applies: "False", "True" and "The"
    # could never follow here, yet case-insensitive matching counted them
    alts = [("true", 0.30), ("False", 0.40), ("false", 0.10), ("The", 0.15), ("True", 0.05)]
    reply = _json_reply(['{"', "label", '":', ' "', "true", '"}'], 4, alts)
    loose = choice_probabilities(reply, ["true", "false"], field="label")
    assert loose.probs["false"] > 0.5  # the defect: label true, p(false) above one half
    exact = choice_probabilities(reply, ["true", "false"], field="label", exact=True)
    assert exact.probs["true"] == pytest.approx(0.30 / 0.40)
    assert exact.mass == pytest.approx(0.40)


def test_exact_schema_when_the_quote_and_value_share_a_token():
    # before the opening quote, only the quote (after optional blanks) may start the value
    alts = [(' "true', 0.5), ('"false', 0.2), ("false", 0.2), ('"False', 0.1)]
    reply = _json_reply(['{"', "label", '":', ' "true', '"}'], 3, alts)
    exact = choice_probabilities(reply, ["true", "false"], field="label", exact=True)
    assert exact.probs == pytest.approx({"true": 0.5 / 0.7, "false": 0.2 / 0.7})


def test_exact_schema_accepts_a_whole_value_with_its_closing_quote():
    alts = [('SUPPORTED"', 0.6), ("REF", 0.3), ("SUPPORTEDX", 0.1)]
    reply = _json_reply(['{"label": "', 'SUPPORTED"', "}"], 1, alts)
    exact = choice_probabilities(reply, ["SUPPORTED", "REFUTED"], field="label", exact=True)
    assert exact.probs == pytest.approx({"SUPPORTED": 2 / 3, "REFUTED": 1 / 3})


def test_schema_choices_reads_literal_enum_const_and_unions():
    from enum import Enum
    from typing import Literal

    from pydantic import BaseModel

    from veracity.llm.probs import schema_choices
    from veracity.llm.structured import schema_for

    class Colour(str, Enum):
        red = "red"
        blue = "blue"

    class Reply(BaseModel):
        label: Literal["true", "false"]
        colour: Colour
        fixed: Literal["only"]
        either: Literal["a"] | Literal["b"]
        free: str
        maybe: Literal["x"] | None

    schema = schema_for(Reply)
    assert schema_choices(schema, "label") == {"true", "false"}
    assert schema_choices(schema, "colour") == {"red", "blue"}
    assert schema_choices(schema, "fixed") == {"only"}
    assert schema_choices(schema, "either") == {"a", "b"}
    assert schema_choices(schema, "free") is None
    assert schema_choices(schema, "maybe") is None  # null is another value
    assert schema_choices(schema, "missing") is None
