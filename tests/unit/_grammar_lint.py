"""What llama.cpp's JSON-schema-to-grammar converter (the embedded model's constrained
decoder) cannot enforce: `pattern_findings` lists the ``pattern`` values it cannot take as
they are (it needs ``^...$``, copies character classes and escapes into the grammar
unchanged, and maps ``.`` to a class that admits ``"``) and the keywords it ignores.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

try:  # Python 3.11+
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10
    import sre_parse  # type: ignore[no-redef]

_UNSAFE_IN_STRING = ('"', "\\", "\n", "\x00", "\x1f")


def _class_admits(items: list[Any], char: str) -> bool:
    code, negate, hit = ord(char), False, False
    for op, arg in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            hit = hit or arg == code
        elif name == "RANGE":
            hit = hit or arg[0] <= code <= arg[1]
        else:  # CATEGORY (\w, \d, \s) and the like: the converter cannot take them
            raise ValueError(f"unsupported class item {name}")
    return hit != negate


def _pattern_nodes(parsed: Any) -> Iterator[tuple[str, Any]]:
    for op, arg in parsed:
        yield str(op), arg
        if str(op) in ("SUBPATTERN",):
            yield from _pattern_nodes(arg[-1])
        elif str(op) in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            yield from _pattern_nodes(arg[2])
        elif str(op) == "BRANCH":
            for branch in arg[1]:
                yield from _pattern_nodes(branch)


def pattern_problems(pattern: str) -> list[str]:
    """Why llama.cpp's converter cannot enforce `pattern` as written (empty: it can)."""
    if not (pattern.startswith("^") and pattern.endswith("$")):
        return ["not anchored with ^ and $ (the converter then accepts any string)"]
    if re.search(r"\\[dDwWsSbB]", pattern):
        return ["uses a \\d, \\w, \\s or \\b escape, which the converter copies as is"]
    problems = []
    for op, arg in _pattern_nodes(sre_parse.parse(pattern[1:-1])):
        if op == "ANY":
            problems.append("'.' admits '\"' and '\\', which would break the JSON string")
        elif op in ("ASSERT", "ASSERT_NOT", "GROUPREF", "AT"):
            problems.append(f"{op.lower()} is not supported")
        elif op == "IN":
            try:
                bad = [c for c in _UNSAFE_IN_STRING if _class_admits(arg, c)]
            except ValueError as exc:
                problems.append(str(exc))
                continue
            if bad:
                problems.append(f"a character class admits {bad!r} (unescaped in JSON)")
        elif op == "NOT_LITERAL":  # [^x]: admits '"' and '\\'
            problems.append("a character class admits '\"' and '\\' (unescaped in JSON)")
        elif op == "LITERAL" and chr(arg) in _UNSAFE_IN_STRING:
            problems.append(f"the literal {chr(arg)!r} cannot stand unescaped in JSON")
    return problems


def schema_nodes(schema: Any) -> Iterator[dict[str, Any]]:
    """Every sub-schema of a JSON schema (definitions included)."""
    if isinstance(schema, dict):
        yield schema
        for value in schema.values():
            yield from schema_nodes(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from schema_nodes(value)


UNSUPPORTED_KEYWORDS = (
    "uniqueItems", "not", "if", "then", "else", "patternProperties", "dependentRequired",
    "dependentSchemas", "multipleOf", "minProperties", "maxProperties", "contains",
)  # fmt: skip


def pattern_findings(schema: dict[str, Any]) -> list[str]:
    """Patterns and keywords the embedded decoder would not enforce."""
    out = []
    for node in schema_nodes(schema):
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            out += [f"pattern {pattern!r}: {p}" for p in pattern_problems(pattern)]
        out += [f"keyword {k!r} is not enforced" for k in UNSUPPORTED_KEYWORDS if k in node]
        if node.get("type") == "string" and node.get("format"):
            out.append(f"format {node['format']!r} is not enforced")
    return out
