"""`SchemaReplies`: scripted replies that satisfy whatever JSON schema a request sends.

A method-agnostic stand-in model for smoke runs (every experiment config on one example):
each request that carries a JSON schema gets the smallest object valid under it, built
from the schema alone — the first value of an enum, numbers at their lower bound, arrays
at their minimum length (at least one item), every property of an object filled. Free
text comes from the prompt's own words, so checks that a reply must mention the input
pass without knowing the method. A request without a schema gets a short sentence of
prompt words.

It plans nothing about a method's logic: a method whose validators want more than the
schema says (a quote that must occur in a passage, an answer that must differ from the
question) re-asks, and after its retries records the error in the verdict — which is
what a smoke run is there to surface.
"""

from __future__ import annotations

import json
import re
from typing import Any

from veracity.llm.base import LLMRequest
from veracity.testing.scripted import ScriptedLLM, ScriptedReply

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
_FENCE = re.compile(r'</?[a-z][a-z0-9_-]*(?: id="[^"]*")?>')  # a fence's tags are not its words
_DEFAULT_WORDS = ("evidence", "statement", "source", "report", "record")


_LAST_FENCED = re.compile(r'<([a-z][a-z0-9_-]*)(?: id="[^"]*")?>\n(.*?)\n</\1>', re.S)


def prompt_words(request: LLMRequest, limit: int = 24) -> list[str]:
    """Distinct words of the request's last user message (the input it is about), the
    fences' tag names left out. The last fenced part's words come first — the material the
    prompt asks about, as a model's reply would speak of it (a claim extracted from a
    sentence shares that sentence's words, so the anchoring of claims keeps it)."""
    users = [m.content for m in request.messages if m.role == "user"]
    text = users[-1] if users else request.messages[-1].content
    fenced = _LAST_FENCED.findall(text)
    if fenced:
        text = f"{fenced[-1][1]}\n{text}"
    seen: dict[str, None] = {}
    for word in _WORD.findall(_FENCE.sub(" ", text)):
        seen.setdefault(word, None)
        if len(seen) >= limit:
            break
    return list(seen) or list(_DEFAULT_WORDS)


class _Filler:
    def __init__(self, schema: dict[str, Any], words: list[str]):
        self.defs = schema.get("$defs", {})
        self.words = words
        self.turn = 0

    def text(self, low: int = 1, high: int | None = None) -> str:
        """A few prompt words (rotating, so list items differ), within the length bounds."""
        start = self.turn % len(self.words)
        self.turn += 3
        picked = (self.words[start:] + self.words[:start])[:3]  # short: names take 3-4 words
        out = " ".join(picked)
        while len(out) < low:
            out += " " + " ".join(self.words)
        return out[:high] if high is not None else out

    def value(self, schema: dict[str, Any]) -> Any:
        if "$ref" in schema:
            return self.value(self.defs[schema["$ref"].rsplit("/", 1)[-1]])
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return schema["enum"][0]
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
                return self.value(options[0])
        if "allOf" in schema:
            return self.value(schema["allOf"][0])
        if "default" in schema and schema.get("type") not in ("object", "array"):
            return schema["default"]
        return self._typed(schema)

    def _typed(self, schema: dict[str, Any]) -> Any:
        kind = schema.get("type", "object" if "properties" in schema else "string")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        if kind == "string":
            return self.text(schema.get("minLength", 1), schema.get("maxLength"))
        if kind in ("integer", "number"):
            low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
            if "exclusiveMinimum" in schema:
                low = low + 1 if kind == "integer" else low + 0.5
            high = schema.get("maximum")
            value = low if high is None else min(max(low, 0), high)
            return int(value) if kind == "integer" else float(value)
        if kind == "boolean":
            return False
        if kind == "null":
            return None
        if kind == "array":
            n = max(schema.get("minItems", 1), 1)
            if "maxItems" in schema:
                n = min(n, schema["maxItems"])
            items = schema.get("items", {})
            return [self.value(items) for _ in range(n)]
        props = schema.get("properties", {})
        return {name: self.value(sub) for name, sub in props.items()}


def fill_schema(schema: dict[str, Any], words: list[str] | None = None) -> Any:
    """The smallest value valid under `schema` (see the module docstring)."""
    return _Filler(schema, words or list(_DEFAULT_WORDS)).value(schema)


def schema_reply(request: LLMRequest) -> ScriptedReply:
    """A reply to `request`: a schema-valid JSON object, or a sentence of prompt words."""
    words = prompt_words(request)
    if request.json_schema is not None:
        return ScriptedReply(json.dumps(fill_schema(request.json_schema, words)))
    return ScriptedReply(" ".join(words[:12]).capitalize() + ".")


def schema_llm(**kwargs: Any) -> ScriptedLLM:
    """A ScriptedLLM that answers every request with `schema_reply` (rules may be added)."""
    return ScriptedLLM(default=schema_reply, **kwargs)


__all__ = ["fill_schema", "prompt_words", "schema_llm", "schema_reply"]
