"""Replies for the fake OpenAI-compatible server: any JSON schema, and obedience on purpose.

`SchemaResponder` answers every chat request with a value that satisfies the request's
JSON schema (sent as ``response_format`` or spelled out in the prompt), or with a short
text when there is none. Where the schema offers options (labels, stances, verdicts) it
takes the first one, so a run is deterministic.

It also *follows instructions* found in its input, on purpose: a line of the form
``OVERRIDE: <value>`` anywhere it reads as instruction makes it pick `<value>` wherever
the schema offers it (and say OVERRIDDEN in free text). Text the prompt declares to be
data — the spans inside the tags a data note lists (see `veracity.core.untrusted`) — is not
read as instruction, exactly as a model that respects the prompt's structure would read
it. So an injected ``OVERRIDE`` changes the answer only when untrusted text escapes its
fence or becomes a message of its own: a test with this responder measures the prompt's
structure, not a model's obedience.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

OVERRIDE = re.compile(r"OVERRIDE:\s*\"?([A-Za-z][\w -]{0,40}?)\"?\s*(?:$|[.;\n])", re.M)
_NOTE_TAGS = re.compile(r"enclosed in tags \(([^)]*)\)")
_SCHEMA_IN_PROMPT = re.compile(r"validate against this JSON schema:\s*(\{.*\})\s*$", re.S)


def data_tags(messages: list[Mapping[str, Any]]) -> list[str]:
    """The fence tags a prompt's data note declares (none when it has no note)."""
    tags: list[str] = []
    for m in messages:
        for block in _NOTE_TAGS.findall(str(m.get("content") or "")):
            tags += re.findall(r"<([a-z][a-z0-9_-]*)>", block)
    return tags


def instruction_text(messages: list[Mapping[str, Any]]) -> str:
    """Everything the prompt gives as instruction: its text minus the declared data spans."""
    text = "\n".join(str(m.get("content") or "") for m in messages)
    for tag in set(data_tags(messages)):
        text = re.sub(rf"<{tag}(?: [^>]*)?>.*?</{tag}>", " ", text, flags=re.S)
    return text


def overrides(messages: list[Mapping[str, Any]]) -> list[str]:
    """The values that ``OVERRIDE:`` lines in the instruction text ask for."""
    return [v.strip() for v in OVERRIDE.findall(instruction_text(messages))]


def request_schema(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a request asks for: its response_format, else one in the prompt."""
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema") or {}
    messages = body.get("messages") or []
    last = str(messages[-1].get("content") or "") if messages else ""
    m = _SCHEMA_IN_PROMPT.search(last)
    if m:
        try:
            return json.loads(m.group(1))
        except json.JSONDecodeError:
            return None
    if isinstance(fmt, dict) and fmt.get("type") == "json_object":
        return {"type": "object"}
    return None


class SchemaResponder:
    """Reply text for a chat-completion request body (see the module docstring).

    Args:
        text: the reply when the request asks for no JSON.
        obey: follow ``OVERRIDE:`` lines in the instruction text (default on).
    """

    def __init__(self, text: str = "The evidence is mixed; see the passages.", obey: bool = True):
        self.text = text
        self.obey = obey
        self.obeyed = 0  # requests whose answer an OVERRIDE changed

    def __call__(self, body: Mapping[str, Any]) -> str:
        wanted = overrides(body.get("messages") or []) if self.obey else []
        schema = request_schema(body)
        if schema is None:
            if wanted:
                self.obeyed += 1
                return f"OVERRIDDEN: {wanted[0]}"
            return self.text
        builder = _Builder(schema, wanted)
        value = builder.value(schema)
        self.obeyed += int(builder.used)
        return json.dumps(value)


class _Builder:
    def __init__(self, root: dict[str, Any], wanted: list[str]):
        self.defs = root.get("$defs") or root.get("definitions") or {}
        self.wanted = [w.lower() for w in wanted]
        self.used = False

    def _pick(self, options: list[Any]) -> Any:
        for w in self.wanted:
            for option in options:
                if isinstance(option, str) and option.lower() == w:
                    self.used = self.used or option != options[0]
                    return option
        return options[0]

    def value(self, schema: Mapping[str, Any]) -> Any:
        if "$ref" in schema:
            return self.value(self.defs[schema["$ref"].rsplit("/", 1)[-1]])
        for key in ("anyOf", "oneOf", "allOf"):
            if key in schema:
                subs = [s for s in schema[key] if s.get("type") != "null"] or schema[key]
                return self.value(subs[0])
        if "enum" in schema:
            return self._pick(list(schema["enum"]))
        if "const" in schema:
            return schema["const"]
        kind = schema.get("type", "object")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        return getattr(self, f"_{kind}", self._string)(schema)

    def _object(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        return {name: self.value(sub) for name, sub in (schema.get("properties") or {}).items()}

    def _array(self, schema: Mapping[str, Any]) -> list[Any]:
        items = schema.get("items") or {}
        if "$ref" in items:
            items = self.defs[items["$ref"].rsplit("/", 1)[-1]]
        ids = (items.get("properties") or {}).get("id") or {}
        if "$ref" in ids:
            ids = self.defs[ids["$ref"].rsplit("/", 1)[-1]]
        if "enum" in ids:  # one entry per id (e.g. a score for every listed reply)
            return [{**self._object(items), "id": i} for i in ids["enum"]]
        return [self.value(items) for _ in range(int(schema.get("minItems", 0)))]

    def _string(self, schema: Mapping[str, Any]) -> str:
        text = "OVERRIDDEN" if self.wanted else "a short answer"
        if self.wanted:
            self.used = True
        text = text[: schema.get("maxLength", len(text))]
        return text.ljust(schema.get("minLength", 0), ".")

    def _number(self, schema: Mapping[str, Any]) -> float:
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0.0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", 1.0))
        return max(min(0.5, high), low) if low <= high else low

    def _integer(self, schema: Mapping[str, Any]) -> int:
        return int(schema.get("minimum", 1))

    def _boolean(self, schema: Mapping[str, Any]) -> bool:
        return False

    def _null(self, schema: Mapping[str, Any]) -> None:
        return None
