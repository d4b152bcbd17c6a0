"""Structured output: ask for JSON matching a pydantic model, validate, re-ask on failure.

Where the backend supports JSON-schema-constrained decoding the schema is sent with the
request; otherwise the schema is spelled out in the prompt. Either way the reply is
validated with pydantic, and an invalid reply is sent back to the model with the
validation error for another try. After the last try a `StructuredOutputError` is raised:
there is never a silent default.
"""

from __future__ import annotations

import copy
import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ValidationError

from veracity.llm.base import (
    LLM,
    LLMRequest,
    LLMResponse,
    Message,
    StructuredOutputError,
    assistant,
    user,
)
from veracity.llm.client import complete_accepted

T = TypeVar("T", bound=BaseModel)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


@dataclass
class Structured(Generic[T]):
    """A validated object with the response that produced it (for logprobs and usage)."""

    value: T
    response: LLMResponse
    attempts: int


def schema_for(model: type[BaseModel]) -> dict[str, Any]:
    """A JSON schema for `model` that constrained decoders accept (a copy of the one
    made for the class the first time: generating it costs more than the rest of a
    cached call)."""
    return copy.deepcopy(_schema(model))


@functools.lru_cache(maxsize=256)
def _schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.setdefault("additionalProperties", False)
    return schema


MAX_RETRY_TOKENS = 8192  # ceiling when a truncated reply is retried with a larger budget
_SPACE = 22  # llama.cpp's JSON grammar allows up to ~21 whitespace chars between tokens


def max_json_chars(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> int | None:
    """Upper bound on the length of a JSON value valid under `schema`, or None if unbounded.

    Strings need ``maxLength`` and arrays ``maxItems`` for a bound. Used to give
    constrained decoding enough tokens to finish (a token is at least one character, so
    the bound in characters is also a bound in tokens, escapes aside).
    """
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return max_json_chars(defs[schema["$ref"].rsplit("/", 1)[-1]], defs)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            bounds = [max_json_chars(s, defs) for s in schema[key]]
            return None if None in bounds else max(bounds)  # type: ignore[type-var]
    if "enum" in schema or "const" in schema:
        values = schema.get("enum", [schema.get("const")])
        return max(len(json.dumps(v)) for v in values)
    kind = schema.get("type")
    if kind == "string":
        return schema["maxLength"] + 2 if "maxLength" in schema else None
    if kind in ("number", "integer", "boolean", "null"):
        return 24
    if kind == "array":
        item = max_json_chars(schema.get("items", {}), defs)
        if item is None or "maxItems" not in schema:
            return None
        return 2 + schema["maxItems"] * (item + 1 + _SPACE)
    if kind == "object":
        total = 2
        for name, sub in schema.get("properties", {}).items():
            bound = max_json_chars(sub, defs)
            if bound is None:
                return None
            total += len(name) + 4 + 3 * _SPACE + bound
        return total
    return None


def extract_json(text: str) -> Any:
    """Parse the JSON object in a reply, tolerating code fences and surrounding prose.

    Raises:
        ValueError: no JSON object could be parsed.
    """
    candidates = [text.strip()]
    candidates += [m.strip() for m in _FENCE.findall(text)]
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    raise ValueError("the reply contains no parseable JSON object")


def _schema_instruction(schema: dict[str, Any]) -> str:
    return (
        "Answer with one JSON object and nothing else. It must validate against this "
        f"JSON schema:\n{json.dumps(schema, indent=1)}"
    )


async def complete_structured(
    llm: LLM,
    messages: list[Message],
    output: type[T],
    *,
    temperature: float = 0.0,
    max_tokens: int = 512,
    attempts: int = 3,
    logprobs: bool = False,
    top_logprobs: int | None = None,
    tag: str = "",
    seed: int | None = None,
    repeat_penalty: float | None = None,
) -> Structured[T]:
    """Complete `messages` into a validated `output` object.

    Args:
        llm: any LLM (usually a `ManagedLLM`).
        messages: the prompt.
        output: the pydantic model the reply must validate against.
        attempts: total tries, including the first.
        logprobs, top_logprobs: forwarded, for callers that read token probabilities.
        tag: trace label (agent role or step name).
        seed, repeat_penalty: forwarded (see `LLMRequest`).

    Raises:
        StructuredOutputError: no valid object after `attempts` tries.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    schema = schema_for(output)
    constrained = llm.capabilities.json_schema
    if constrained:
        # Give constrained decoding room to close every (length-capped) string: a reply
        # cut off by max_tokens can never be valid JSON.
        bound = max_json_chars(schema)
        if bound is not None and bound > max_tokens:
            max_tokens = bound
    convo = list(messages)
    if not constrained:
        convo = [*convo[:-1], user(f"{convo[-1].content}\n\n{_schema_instruction(schema)}")]
    replies: list[str] = []
    for attempt in range(1, attempts + 1):
        request = LLMRequest(
            messages=convo,
            temperature=temperature,
            max_tokens=max_tokens,
            json_schema=schema if constrained else None,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            seed=seed,
            repeat_penalty=repeat_penalty,
            tag=tag if attempt == 1 else f"{tag}:retry{attempt - 1}",
        )
        response = await complete_accepted(
            llm, request, lambda r: output.model_validate(extract_json(r.text))
        )
        replies.append(response.text)
        try:
            value = output.model_validate(extract_json(response.text))
        except (ValueError, ValidationError) as exc:
            problem = _describe(exc)
            if response.finish_reason == "length":
                # Cut off by the token limit: the same request would be cut off again, so
                # the retry gets twice the budget and is told to be brief.
                max_tokens = min(2 * max_tokens, MAX_RETRY_TOKENS)
                problem = f"it was cut off at the length limit ({problem}); be much shorter"
            convo = [
                *convo,
                assistant(response.text),
                user(
                    "That reply could not be used: "
                    f"{problem}\nReply again with only the corrected JSON object."
                ),
            ]
            continue
        response.parsed = value
        return Structured(value=value, response=response, attempts=attempt)
    raise StructuredOutputError(
        f"{tag or output.__name__}: no valid {output.__name__} after {attempts} attempts; "
        f"last reply: {replies[-1][:300]!r}",
        attempts=replies,
    )


def _describe(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = []
        for err in exc.errors()[:5]:
            loc = ".".join(str(x) for x in err["loc"]) or "(root)"
            parts.append(f"{loc}: {err['msg']}")
        return "; ".join(parts)
    return str(exc)
