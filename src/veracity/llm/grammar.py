"""Reply schemas as llguidance grammars for the embedded model.

llama.cpp turns a ``response_format`` JSON schema into a GBNF grammar with its own
converter, and its GBNF sampler is slow where the model's favourite token breaks the
grammar (then every token of the vocabulary is checked against it): on SmolLM2-135M a
constrained token cost up to 1.6× an unconstrained one, most for short replies made of
enums, name patterns and numbers (benchmarks/constrained_decoding.py). The xllamacpp
build ships llguidance, which computes the set of allowed tokens with a lexer and an
Earley parser in about the time of an unconstrained token (1.00-1.07× in the same run).
llama.cpp hands a grammar that starts with ``%llguidance`` to it, and
`xllamacpp.json_schema_to_grammar` writes one for a schema.

The schema is adapted so that llguidance enforces what the GBNF converter enforced:

- an object schema that does not say ``additionalProperties`` allows no other keys (the
  GBNF converter's reading; llguidance follows the JSON-schema default and allows them);
- JSON is written compactly (``{"a": 1, "b": [2, 3]}``): llguidance lets white space
  between tokens repeat without limit, where GBNF allowed at most 22 characters, so a
  model that loops on new lines could otherwise spend its whole budget on them;
- ``lenient``: a keyword llguidance does not know is left out rather than failing the
  grammar (a reply is validated anyway).

llguidance enforces more than GBNF did (the bounds of non-integer numbers, ``minLength``
and ``maxLength`` beside a ``pattern``), never less, so the rules of
`veracity.llm.reply_schema` hold under both.

When llguidance cannot compile a grammar, llama.cpp decodes without any constraint and
reports nothing: `grammar_applied` tells such a reply (it does not open with a JSON
value), and `EmbeddedLLM` then sends that schema through GBNF.
"""

from __future__ import annotations

import copy
import functools
import json
from typing import Any

PREFIX = "%llguidance"
# llguidance's JSON options (x-guidance): compact separators, unknown keywords ignored
OPTIONS = {
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
    "lenient": True,
}
_JSON_START = frozenset('{["-0123456789tfn')


def llguidance_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` that llguidance reads as llama.cpp's GBNF converter does (see
    the module docstring)."""
    out = copy.deepcopy(schema)

    def close(node: Any) -> None:  # `node` is a schema; only its subschemas are walked
        if not isinstance(node, dict):
            return
        if "properties" not in node and any(k in node for k in ("anyOf", "oneOf", "$ref")):
            # ``additionalProperties: false`` beside alternatives and no properties of its
            # own allows only {} (`schema_for` sets it on every root, a ReAct step's
            # anyOf too): GBNF ignored it, llguidance finds the schema unsatisfiable
            if node.get("additionalProperties") is False:
                del node["additionalProperties"]
        elif (node.get("type") == "object" or "properties" in node) and (
            "additionalProperties" not in node
        ):
            node["additionalProperties"] = False
        for key in ("properties", "$defs", "definitions"):
            for sub in (node.get(key) or {}).values():
                close(sub)
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for sub in node.get(key) or []:
                close(sub)
        for key in ("items", "additionalProperties", "not"):
            close(node.get(key))

    close(out)
    out["x-guidance"] = {**OPTIONS, **out.get("x-guidance", {})}
    return out


@functools.lru_cache(maxsize=512)
def _grammar(schema_json: str) -> str | None:
    import xllamacpp

    text = xllamacpp.json_schema_to_grammar(schema_json)
    return text if text.startswith(PREFIX) else None


def llguidance_grammar(schema: dict[str, Any]) -> str | None:
    """The llguidance grammar for `schema`, or None where xllamacpp was built without
    llguidance (its converter then writes GBNF, which ``response_format`` gets as well)."""
    return _grammar(json.dumps(llguidance_schema(schema), sort_keys=True))


def grammar_applied(reply: dict[str, Any]) -> bool:
    """Whether a chat-completion body for a schema-constrained request looks constrained:
    its text opens with a JSON value (or is empty, or the body is an error)."""
    if "error" in reply:
        return True
    try:
        text = reply["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        return True
    text = text.lstrip()
    return not text or text[0] in _JSON_START


__all__ = ["OPTIONS", "PREFIX", "grammar_applied", "llguidance_grammar", "llguidance_schema"]
