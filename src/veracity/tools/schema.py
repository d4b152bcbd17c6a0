"""Pydantic argument models from the JSON input schemas of remote (MCP) tools.

An agent's step model embeds each tool's argument model, so that constrained decoding
and validation apply to remote tools exactly as to local ones. The flat object schemas
tools publish are translated field by field (strings, numbers, integers, booleans,
enums, arrays and objects, with their length and range limits); a construct this
module does not know becomes ``Any`` for that field, and the tool server, which
validates its own arguments, reports anything wrong as a tool error.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

_SIMPLE = {"string": str, "integer": int, "number": float, "boolean": bool}
_LIMITS = {
    "minLength": "min_length",
    "maxLength": "max_length",
    "minimum": "ge",
    "maximum": "le",
    "exclusiveMinimum": "gt",
    "exclusiveMaximum": "lt",
    "minItems": "min_length",
    "maxItems": "max_length",
}


def _type_of(schema: dict[str, Any]) -> Any:
    if schema.get("enum"):
        return Literal[tuple(schema["enum"])]  # type: ignore[valid-type]
    kind = schema.get("type")
    if isinstance(kind, list):  # e.g. ["string", "null"]
        kinds = [k for k in kind if k != "null"]
        base = _type_of({**schema, "type": kinds[0]}) if len(kinds) == 1 else Any
        return base | None if "null" in kind and base is not Any else base
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    if kind == "array":
        return list[_type_of(schema.get("items") or {})]  # type: ignore[misc]
    if kind == "object":
        return dict[str, Any]
    for key in ("anyOf", "oneOf"):
        options = [s for s in schema.get(key, []) if s.get("type") != "null"]
        if len(options) == 1:
            return _type_of(options[0]) | None
    return Any


def _field(schema: dict[str, Any], required: bool) -> tuple[Any, Any]:
    limits = {ours: schema[theirs] for theirs, ours in _LIMITS.items() if theirs in schema}
    description = schema.get("description")
    annotation = _type_of(schema)
    if required:
        return annotation, Field(..., description=description, **limits)
    default = schema.get("default")
    if default is None and annotation is not Any:
        annotation = annotation | None
    return annotation, Field(default=default, description=description, **limits)


def model_from_schema(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """An argument model for a tool whose input schema is `schema` (an object schema)."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    fields: dict[str, Any] = {}
    for prop, sub in properties.items():
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", prop) or prop.startswith("model_"):
            continue  # not a valid Python name: the server sees what the model sent anyway
        fields[prop] = _field(sub if isinstance(sub, dict) else {}, prop in required)
    title = re.sub(r"\W+", "_", name).strip("_") or "tool"
    return create_model(
        f"{title}_arguments",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
