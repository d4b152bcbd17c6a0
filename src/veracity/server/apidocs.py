"""A readable, offline API reference at ``/docs``, rendered from the app's OpenAPI schema
(no CDN-hosted viewer, so it works on a machine without internet)."""

from __future__ import annotations

from typing import Any

REF = "#/components/schemas/"


def type_name(schema: dict[str, Any]) -> str:
    """A short human type for a JSON schema (refs by name, unions with ``|``)."""
    if "$ref" in schema:
        return schema["$ref"].removeprefix(REF)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(type_name(s) for s in schema[key])
    kind = schema.get("type")
    if kind == "array":
        return f"list of {type_name(schema.get('items', {}))}"
    if "enum" in schema:
        return " | ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    return str(kind or "any")


def _operation(path: str, method: str, op: dict[str, Any]) -> dict[str, Any]:
    params = [
        {
            "name": p["name"],
            "where": p["in"],
            "required": p.get("required", False),
            "type": type_name(p.get("schema", {})),
            "description": p.get("description", ""),
        }
        for p in op.get("parameters", [])
    ]
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {})
    responses = []
    for code, answer in op.get("responses", {}).items():
        content = answer.get("content", {})
        schema = next((c.get("schema") for c in content.values() if c.get("schema")), None)
        named = type_name(schema) if schema and "$ref" in schema else None
        responses.append({"code": code, "description": answer.get("description", ""),
                          "schema": named})  # fmt: skip
    return {
        "method": method.upper(), "path": path, "summary": op.get("summary", ""),
        "description": op.get("description", ""), "parameters": params,
        "body": type_name(body["schema"]) if body.get("schema") else None,
        "responses": responses,
        "anchor": f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", ""),
    }  # fmt: skip


def reference(spec: dict[str, Any]) -> dict[str, Any]:
    """Operations and schemas of `spec`, shaped for the docs template."""
    operations = [
        _operation(path, method, op)
        for path, item in spec.get("paths", {}).items()
        for method, op in item.items()
    ]
    schemas = []
    for name, schema in sorted(spec.get("components", {}).get("schemas", {}).items()):
        required = set(schema.get("required", []))
        fields = [
            {
                "name": k,
                "type": type_name(v),
                "required": k in required,
                "description": v.get("description", ""),
            }
            for k, v in schema.get("properties", {}).items()
        ]
        schemas.append({"name": name, "description": schema.get("description", ""),
                        "fields": fields})  # fmt: skip
    return {"spec": spec, "operations": operations, "schemas": schemas}
