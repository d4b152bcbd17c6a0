from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from veracity.llm.base import Capabilities, StructuredOutputError, user
from veracity.llm.structured import complete_structured, extract_json
from veracity.testing import ScriptedLLM


class Answer(BaseModel):
    reason: str
    label: Literal["true", "false"]


def test_extract_json_tolerates_fences_and_prose():
    assert extract_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert extract_json('Sure! {"a": 2} hope that helps') == {"a": 2}
    with pytest.raises(ValueError):
        extract_json("no json here")


async def test_valid_reply_on_first_try_sends_schema():
    llm = ScriptedLLM().queue('{"reason": "r", "label": "false"}')
    result = await complete_structured(llm, [user("q")], Answer, tag="t")
    assert result.value.label == "false" and result.attempts == 1
    assert llm.calls[0].json_schema["properties"]["label"]["enum"] == ["true", "false"]
    assert result.response.parsed == result.value


async def test_invalid_reply_is_reasked_with_the_error():
    llm = ScriptedLLM().queue(
        '{"reason": "r", "label": "maybe"}', '{"reason": "r", "label": "true"}'
    )
    result = await complete_structured(llm, [user("q")], Answer, tag="judge")
    assert result.value.label == "true" and result.attempts == 2
    retry = llm.calls[1]
    assert retry.tag == "judge:retry1"
    assert retry.messages[-2].role == "assistant"
    assert (
        "label" in retry.messages[-1].content and "could not be used" in retry.messages[-1].content
    )


async def test_typed_error_after_all_attempts_never_a_default():
    llm = ScriptedLLM(default="not json at all")
    with pytest.raises(StructuredOutputError) as info:
        await complete_structured(llm, [user("q")], Answer, attempts=3)
    assert len(info.value.attempts) == 3 and len(llm.calls) == 3


async def test_backend_without_json_schema_gets_schema_in_prompt():
    llm = ScriptedLLM(capabilities=Capabilities(json_schema=False)).queue(
        'Here: {"reason": "x", "label": "true"}'
    )
    result = await complete_structured(llm, [user("Check this")], Answer)
    assert result.value.label == "true"
    sent = llm.calls[0]
    assert sent.json_schema is None
    assert "JSON schema" in sent.messages[-1].content and sent.messages[-1].content.startswith(
        "Check this"
    )


class Capped(BaseModel):
    note: str = Field(max_length=100)
    label: Literal["true", "false"]
    tags: list[Annotated[str, Field(max_length=10)]] = Field(max_length=2)


def test_max_json_chars_bounds_capped_schemas_only():
    from veracity.llm.structured import _SPACE, max_json_chars, schema_for

    # {} + per property: quotes/colon/comma (4) + 3 whitespace slots + name + value bound
    note = len("note") + 4 + 3 * _SPACE + 102
    label = len("label") + 4 + 3 * _SPACE + len('"false"')
    tags = len("tags") + 4 + 3 * _SPACE + (2 + 2 * (12 + 1 + _SPACE))
    assert max_json_chars(schema_for(Capped)) == 2 + note + label + tags
    assert max_json_chars(schema_for(Answer)) is None  # Answer.reason has no cap


async def test_constrained_reply_gets_enough_tokens_to_close_capped_strings():
    from veracity.llm.structured import max_json_chars, schema_for

    llm = ScriptedLLM().queue('{"note": "n", "label": "true", "tags": []}')
    await complete_structured(llm, [user("q")], Capped, max_tokens=16)
    assert llm.calls[0].max_tokens == max_json_chars(schema_for(Capped))
    llm = ScriptedLLM().queue('{"reason": "r", "label": "true"}')
    await complete_structured(llm, [user("q")], Answer, max_tokens=16)
    assert llm.calls[0].max_tokens == 16  # unbounded schema: the caller's budget stands


async def test_truncated_reply_is_retried_with_a_larger_budget():
    from veracity.testing import ScriptedReply

    llm = ScriptedLLM().queue(
        ScriptedReply('{"reason": "a very long', finish_reason="length"),
        '{"reason": "short", "label": "false"}',
    )
    result = await complete_structured(llm, [user("q")], Answer, max_tokens=100)
    assert result.value.label == "false"
    assert [c.max_tokens for c in llm.calls] == [100, 200]
    assert "cut off" in llm.calls[1].messages[-1].content
