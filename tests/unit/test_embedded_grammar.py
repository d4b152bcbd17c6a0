"""The embedded model gets reply schemas as llguidance grammars (`veracity.llm.grammar`),
read as llama.cpp's GBNF converter read them, and falls back to GBNF where llguidance did
not constrain a reply. With a stand-in llama.cpp server; the real one is in
tests/integration/test_embedded_grammar.py."""

import json

from test_embedded_unit import OK, FakeServer

from veracity.llm.base import LLMRequest, user
from veracity.llm.embedded import EmbeddedLLM
from veracity.llm.grammar import PREFIX, grammar_applied, llguidance_schema

SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "maxLength": 1000},
        "scores": {"type": "array", "items": {"$ref": "#/$defs/Score"}, "maxItems": 3},
    },
    "required": ["reason", "scores"],
    "additionalProperties": False,
    "$defs": {
        # a nested model that does not forbid extra keys (S2MAD's CommentScore did not)
        "Score": {
            "type": "object",
            "properties": {"properties": {"type": "integer"}, "value": {"type": "number"}},
        }
    },
}


def _reply(text):
    return {**OK, "choices": [{**OK["choices"][0], "message": {"content": text}}]}


def _llm(tmp_path, text):
    llm = EmbeddedLLM(str(tmp_path / "m.gguf"), models_dir=tmp_path)
    llm._server = FakeServer(_reply(text))
    return llm


def _schema_in(grammar):
    head, _, rest = grammar.partition("start: %json ")
    assert head.startswith(PREFIX)
    return json.loads(rest)


async def test_a_reply_schema_goes_to_llama_cpp_as_an_llguidance_grammar(tmp_path):
    llm = _llm(tmp_path, '{"reason": "r", "scores": []}')
    request = LLMRequest(messages=[user("q")], json_schema=SCHEMA, max_tokens=50)
    response = await llm.complete(request)
    assert response.text == '{"reason": "r", "scores": []}'
    [body] = llm._server.bodies
    assert "response_format" not in body
    sent = _schema_in(body["grammar"])
    assert sent == llguidance_schema(SCHEMA)
    # what GBNF enforced, llguidance enforces too: no keys beyond those named, nested too
    assert sent["$defs"]["Score"]["additionalProperties"] is False
    assert sent["properties"]["scores"]["maxItems"] == 3
    assert sent["properties"]["reason"]["maxLength"] == 1000
    # and white space cannot run on between tokens
    assert sent["x-guidance"]["whitespace_flexible"] is False
    # the endpoint body is unchanged: an OpenAI-compatible server gets response_format
    assert llm.payload(request)["response_format"]["json_schema"]["schema"] == SCHEMA


def test_the_schema_is_adapted_without_touching_field_names_or_the_original():
    original = json.loads(json.dumps(SCHEMA))
    adapted = llguidance_schema(SCHEMA)
    assert original == SCHEMA  # not changed in place
    score = adapted["$defs"]["Score"]
    assert set(score["properties"]) == {"properties", "value"}  # a field named "properties"
    assert "additionalProperties" not in score["properties"]["properties"]
    assert llguidance_schema({"type": "object", "additionalProperties": True})[
        "additionalProperties"
    ]  # a schema that allows extra keys keeps allowing them


async def test_a_reply_llguidance_did_not_constrain_goes_again_through_gbnf(tmp_path):
    # llama.cpp decodes unconstrained, silently, when llguidance cannot compile a grammar
    llm = _llm(tmp_path, "Hello! I am")
    request = LLMRequest(messages=[user("q")], json_schema=SCHEMA, max_tokens=50)
    await llm.complete(request)
    first, again = llm._server.bodies
    assert "grammar" in first and "response_format" not in first
    assert again["response_format"]["json_schema"]["schema"] == SCHEMA
    assert "grammar" not in again
    await llm.complete(request)  # that schema now goes straight to GBNF
    assert len(llm._server.bodies) == 3 and "grammar" not in llm._server.bodies[2]


async def test_a_request_without_a_schema_gets_no_grammar(tmp_path):
    llm = _llm(tmp_path, "Hello")
    await llm.complete(LLMRequest(messages=[user("q")], max_tokens=5))
    [body] = llm._server.bodies
    assert "grammar" not in body and "response_format" not in body


def test_a_constrained_reply_opens_with_a_json_value():
    assert grammar_applied(_reply('{"a": 1}')) and grammar_applied(_reply(' ["x"]'))
    assert grammar_applied(_reply(""))  # nothing written yet (e.g. stopped at once)
    assert grammar_applied({"error": {"message": "context"}})
    assert not grammar_applied(_reply("```json\n{}"))
    assert not grammar_applied(_reply("Hello"))


def test_a_root_of_alternatives_is_not_closed_to_every_key():
    # schema_for closes every root; beside anyOf and no properties that would allow only
    # {} under llguidance (a ReAct step's schema: llguidance failed to compile it)
    step = {
        "anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}],
        "additionalProperties": False,
        "$defs": {
            "A": {"type": "object", "properties": {"a": {"type": "string"}}},
            "B": {"type": "object", "properties": {"b": {"type": "string"}}},
        },
    }
    adapted = llguidance_schema(step)
    assert "additionalProperties" not in adapted
    assert adapted["$defs"]["A"]["additionalProperties"] is False
    assert adapted["$defs"]["B"]["additionalProperties"] is False
