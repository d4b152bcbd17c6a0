"""Reading the search results recorded in MERMAID's GPT-4o ReAct traces.

Each trace file is a JSON list of records ``{claim, label, decomposition, prediction,
react_trace}``; ``react_trace`` is a list of strings. A search step is an
``Action: Used <tool> with input: <query>`` line followed by an
``Observation: [TextContent(type='text', text='<json>', ...)]`` line, where ``<json>`` is
the tool's answer (``{"query", "results": [...]}``) written as a Python string literal.
The recording cut every observation at about 2,000 characters, so the JSON is often
incomplete: complete result objects are kept, and a cut-off last result is kept when its
title (and link, for web results) survived, marked ``truncated``.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from veracity.retrieval.base import SourceBadResponse

_ACTION = re.compile(r"^Action: Used (\w+) with input: (.*)$", re.S)
_OBSERVATION = re.compile(r"^Observation: \[TextContent\(type='text', text=(['\"])")
_TAIL = ", annotations=None, meta=None)]"
_STRING_FIELD = re.compile(r'"(\w+)":"((?:[^"\\]|\\.)*)"')
_OPEN_FIELD = re.compile(r'"(\w+)":"((?:[^"\\]|\\.)*)$')
_NUMBER_FIELD = re.compile(r'"(\w+)":(-?\d+)')
SEARCH_TOOLS = ("search_google", "search_wikipedia")


@dataclass
class RecordedSearch:
    """One search a recorded run made, with the results it saw."""

    dataset: str
    claim: str
    tool: str
    query: str
    results: list[dict[str, Any]] = field(default_factory=list)
    status: str = "ok"  # ok | no_results | error
    truncated: bool = False


def _python_string(body: str, quote: str) -> str | None:
    """Decode a (possibly cut) Python string literal body."""
    for trim in range(0, 8):
        candidate = body[: len(body) - trim] if trim else body
        try:
            value = ast.literal_eval(quote + candidate + quote)
        except (SyntaxError, ValueError):
            continue
        return value if isinstance(value, str) else None
    return None


def _json_string(raw: str) -> str:
    for trim in range(0, 7):
        try:
            return json.loads('"' + raw[: len(raw) - trim] + '"')
        except ValueError:
            continue
    return ""


def _salvage(fragment: str) -> dict[str, Any] | None:
    """Fields of a cut-off JSON object: complete strings and numbers, plus an open string."""
    item: dict[str, Any] = {k: _json_string(v) for k, v in _STRING_FIELD.findall(fragment)}
    item.update({k: int(v) for k, v in _NUMBER_FIELD.findall(fragment) if k not in item})
    open_field = _OPEN_FIELD.search(fragment)
    if open_field and open_field.group(1) not in item:
        item[open_field.group(1)] = _json_string(open_field.group(2))
    return item or None


def parse_payload(text: str) -> tuple[dict[str, Any], bool]:
    """The tool answer as a dict, and whether it was cut off."""
    try:
        data = json.loads(text)
        return (data if isinstance(data, dict) else {}), False
    except ValueError:
        pass
    payload: dict[str, Any] = {}
    query = re.match(r'^\{"query":"((?:[^"\\]|\\.)*)"', text)
    if query:
        payload["query"] = _json_string(query.group(1))
    start = text.find('"results":[')
    results: list[dict[str, Any]] = []
    if start >= 0:
        pos = start + len('"results":[')
        decoder = json.JSONDecoder()
        while pos < len(text):
            if text[pos] in ", ":
                pos += 1
                continue
            if text[pos] == "]":
                break
            try:
                item, pos = decoder.raw_decode(text, pos)
            except ValueError:
                partial = _salvage(text[pos:])
                if partial and partial.get("title"):
                    partial["truncated"] = True
                    results.append(partial)
                break
            if isinstance(item, dict):
                results.append(item)
    payload["results"] = results
    return payload, True


def parse_observation(line: str) -> tuple[dict[str, Any], bool] | None:
    """The payload of an observation line, or None when it is not a text observation."""
    match = _OBSERVATION.match(line)
    if not match:
        return None
    quote = match.group(1)
    body = line[match.end() :]
    complete = body.endswith(quote + _TAIL)
    if complete:
        body = body[: -len(quote + _TAIL)]
    text = _python_string(body, quote)
    if text is None:
        return None
    payload, cut = parse_payload(text)
    return payload, cut or not complete


def searches_in_record(record: Any, dataset: str, tools: tuple[str, ...]) -> list[RecordedSearch]:
    """The searches of one trace record.

    Raises:
        SourceBadResponse: the record is not shaped like a MERMAID trace record.
    """
    if not isinstance(record, dict) or not isinstance(record.get("react_trace"), list):
        raise SourceBadResponse("recorded", f"{dataset}: a record without a react_trace list")
    claim = record.get("claim")
    if not isinstance(claim, str):
        raise SourceBadResponse("recorded", f"{dataset}: a record without a claim")
    steps = record["react_trace"]
    found = []
    for i, step in enumerate(steps[:-1]):
        action = _ACTION.match(step) if isinstance(step, str) else None
        if not action or action.group(1) not in tools:
            continue
        parsed = parse_observation(steps[i + 1]) if isinstance(steps[i + 1], str) else None
        if parsed is None:
            continue
        payload, truncated = parsed
        if "error" in payload:
            status = "error"
        elif payload.get("status") == "no_results" or (
            not payload.get("results") and not truncated
        ):
            status = "no_results"
        else:
            status = "ok"
        found.append(
            RecordedSearch(
                dataset=dataset,
                claim=claim,
                tool=action.group(1),
                query=action.group(2).strip(),
                results=[r for r in payload.get("results", []) if isinstance(r, dict)],
                status=status,
                truncated=truncated,
            )
        )
    return found


def load_trace_file(path: Path, tools: tuple[str, ...] = SEARCH_TOOLS) -> list[RecordedSearch]:
    """Every search recorded in one trace file.

    Raises:
        SourceBadResponse: the file is not a JSON list of trace records.
    """
    dataset = path.stem.removesuffix("_gpt-4o")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SourceBadResponse("recorded", f"cannot read {path.name}: {exc}") from exc
    if not isinstance(records, list):
        raise SourceBadResponse("recorded", f"{path.name}: expected a JSON list of records")
    found: list[RecordedSearch] = []
    for record in records:
        found += searches_in_record(record, dataset, tools)
    return found
