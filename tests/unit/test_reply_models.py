"""Every reply model's constraints are visible to the constrained decoder.

Three checks per reply model (found from the source, see `_reply_models`):

1. every validator is marked ``schema_safe`` (it rejects nothing the schema allows) or
   exempted in its model's ``schema_exempt`` with the reason;
2. the JSON schema uses only what llama.cpp's converter enforces (anchored patterns it
   can translate, no ignored keywords);
3. every reply the embedded decoder could write under the schema validates: replies
   are generated from the schema as the converter enforces it (a pattern without its
   length bounds, numbers without their bounds unless whole), and any rejection not made
   by an exempted validator fails the test.

The bad models at the end show that each check fails when it should. The embedded test
sends every distinct reply schema to the real decoder once.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, ClassVar

import pytest
from _grammar_lint import pattern_findings
from _reply_models import (
    REPLY_MODELS,
    all_reply_models,
    exempt_fields,
    structured_call_sites,
    validator_findings,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AfterValidator, BaseModel, Field, ValidationError, field_validator

from veracity.llm.reply_schema import clamped, phrase, schema_safe, short_name
from veracity.llm.structured import schema_for
from veracity.runtime.home import home_paths

MODELS = all_reply_models()
IDS = sorted(MODELS)


def test_every_structured_call_site_is_known():
    sites = structured_call_sites()
    unknown = {k: v for k, v in sites.items() if k not in REPLY_MODELS}
    assert not unknown, f"add these reply models to _reply_models.REPLY_MODELS: {unknown}"
    stale = set(REPLY_MODELS) - set(sites)
    assert not stale, f"no call sends these any more; drop them from REPLY_MODELS: {stale}"
    assert len(MODELS) > 100  # every label space, tool set and variant of each


def test_validators_are_schema_safe_or_exempt_with_a_reason():
    findings = {key: validator_findings(MODELS[key]) for key in IDS}
    assert {k: v for k, v in findings.items() if v} == {}


def test_schemas_use_only_what_the_embedded_decoder_enforces():
    findings = {key: pattern_findings(schema_for(MODELS[key])) for key in IDS}
    assert {k: v for k, v in findings.items() if v} == {}


# ----------------------------------------------------------------------- generation


def decoded(schema: dict[str, Any], root: dict[str, Any] | None = None) -> st.SearchStrategy:
    """JSON values llama.cpp's grammar for `schema` lets a model write."""
    root = root or schema
    if "$ref" in schema:
        return decoded(root["$defs"][schema["$ref"].rsplit("/", 1)[-1]], root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return st.one_of([decoded(s, root) for s in schema[key]])
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type", "object" if "properties" in schema else None)
    if isinstance(kind, list):
        return st.one_of([decoded({**schema, "type": k}, root) for k in kind])
    return _TYPED.get(kind, _any)(schema, root)


def _string(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    if "pattern" in schema:  # the converter drops minLength and maxLength beside a pattern
        return st.from_regex(schema["pattern"], fullmatch=True)
    return st.text(min_size=schema.get("minLength", 0), max_size=schema.get("maxLength", 80))


def _integer(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    low = schema.get("minimum", schema.get("exclusiveMinimum", -(10**15) - 1) + 1)
    high = schema.get("maximum", schema.get("exclusiveMaximum", 10**15 + 1) - 1)
    return st.integers(min_value=math.ceil(low), max_value=math.floor(high))


def _number(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    # the converter ignores the bounds of non-integer numbers
    return st.integers(-1000, 1000) | st.floats(allow_nan=False, allow_infinity=False)


def _array(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    low = schema.get("minItems", 0)
    high = schema.get("maxItems", low + 4)
    return st.lists(decoded(schema.get("items", {}), root), min_size=low, max_size=high)


def _object(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    props = schema.get("properties", {})
    required = set(schema.get("required", []))
    return st.fixed_dictionaries(
        {k: decoded(v, root) for k, v in props.items() if k in required},
        optional={k: decoded(v, root) for k, v in props.items() if k not in required},
    )


def _any(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy:
    return st.none() | st.booleans() | st.integers() | st.text(max_size=20)


_TYPED = {
    "string": _string,
    "integer": _integer,
    "number": _number,
    "boolean": lambda s, r: st.booleans(),
    "null": lambda s, r: st.none(),
    "array": _array,
    "object": _object,
}


def _rejections(model: type[BaseModel], value: Any) -> list[dict[str, Any]]:
    """The errors `model` gives `value` that no exempted validator accounts for."""
    try:
        model.model_validate(json.loads(json.dumps(value)))
    except ValidationError as exc:
        exempt = exempt_fields(model)
        return [
            e
            for e in exc.errors()
            if not (
                e["type"] == "value_error"
                and ({str(x) for x in e["loc"]} & exempt or ("" in exempt and not e["loc"]))
            )
        ]
    return []


def _accepts_what_the_decoder_writes(model: type[BaseModel], examples: int = 25) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(decoded(schema_for(model)))
    def accepted(value: Any) -> None:
        assert _rejections(model, value) == [], f"rejected {value!r}"

    accepted()


def _shape(schema: Any) -> Any:
    """`schema` with its enums' values left out (label spaces differ only there)."""
    if isinstance(schema, dict):
        return {k: len(v) if k == "enum" else _shape(v) for k, v in schema.items()}
    return [_shape(v) for v in schema] if isinstance(schema, list) else schema


def distinct_models(shape: bool = True) -> dict[str, type[BaseModel]]:
    """One model per distinct reply schema (per shape of schema, with `shape`)."""
    seen: dict[str, str] = {}
    for key in IDS:
        schema = schema_for(MODELS[key])
        seen.setdefault(json.dumps(_shape(schema) if shape else schema, sort_keys=True), key)
    return {key: MODELS[key] for key in sorted(seen.values())}


def test_every_reply_the_decoder_can_write_is_accepted():
    failures = {}
    for key, model in distinct_models().items():
        try:
            _accepts_what_the_decoder_writes(model)
        except AssertionError as exc:
            failures[key] = str(exc).splitlines()[0]
    assert failures == {}


# ----------------------------------------------------------------------- bad models


class LettersOnly(BaseModel):
    """The old ExpertTriage: a letters-only check its schema did not state."""

    @staticmethod
    def _letters(value: str) -> str:
        if not value.replace(" ", "").isalpha():
            raise ValueError("the name must be made of letters only")
        return value

    expert: Annotated[str, AfterValidator(_letters)] = Field(max_length=60)


class FloatWeight(BaseModel):
    weight: float = Field(gt=0.0, le=100.0)  # the decoder ignores these bounds


class CrossCheck(BaseModel):
    parts: list[str] = Field(max_length=3)
    schema_exempt: ClassVar[dict[str, str]] = {"_distinct": "ok"}  # a reason of one word

    @field_validator("parts")
    @classmethod
    def _distinct(cls, v: list[str]) -> list[str]:
        if len(set(v)) != len(v):
            raise ValueError("the parts must differ")
        return v


class FalselySafe(BaseModel):
    topic: str = Field(max_length=20)

    @field_validator("topic")
    @classmethod
    @schema_safe
    def _not_blank(cls, v: str) -> str:  # claims to be safe, yet rejects "" and " "
        if not v.strip():
            raise ValueError("give a topic")
        return v


def test_a_validator_the_schema_does_not_express_is_found():
    (finding,) = validator_findings(LettersOnly)
    assert "LettersOnly._letters: a validator the JSON schema does not express" in finding
    assert len(validator_findings(CrossCheck)) == 1  # exempt, but with no real reason
    assert validator_findings(FalselySafe) == []  # marked: the generated replies catch it


def test_replies_the_decoder_can_write_but_the_model_rejects_are_found():
    for bad in (LettersOnly, FloatWeight, FalselySafe):
        with pytest.raises(AssertionError, match="rejected"):
            _accepts_what_the_decoder_writes(bad, examples=200)


def test_patterns_the_converter_cannot_enforce_are_found():
    cases = {
        "[a-z]+": "not anchored",
        "^a.*$": "'.' admits",
        r"^\w+$": "escape",
        "^[^,]+$": "character class admits",
        "^(?=a)a$": "not supported",
    }
    for pattern, problem in cases.items():
        found = pattern_findings({"type": "string", "pattern": pattern})
        assert found and problem in found[0], (pattern, found)
    assert pattern_findings({"type": "array", "uniqueItems": True}) == [
        "keyword 'uniqueItems' is not enforced"
    ]


# ----------------------------------------------------------------------- the helpers


def test_short_names_are_repaired_where_safe_and_spelled_in_the_schema():
    class Triage(BaseModel):
        expert: short_name(5, 110)  # type: ignore[valid-type]

    value = Triage.model_validate({"expert": "Mark Cole, Virginia Republican"})
    assert value.expert == "Mark Cole Virginia Republican"  # the reply of issue 27
    assert Triage.model_validate({"expert": "& Arts & & Culture. &"}).expert == "Arts & Culture"
    for bad in ("1990", "&", "one two three four five six"):
        with pytest.raises(ValidationError):
            Triage.model_validate({"expert": bad})
    schema = schema_for(Triage)["properties"]["expert"]
    assert schema["pattern"].startswith("^[A-Za-z]") and schema["maxLength"] == 110
    with pytest.raises(ValueError):
        short_name(5, 40)  # no room for words of 8 letters


def test_phrases_and_clamped_numbers():
    class Part(BaseModel):
        text: str = phrase(12)
        confidence: clamped(0.0, 1.0)  # type: ignore[valid-type]

    schema = schema_for(Part)["properties"]
    assert schema["text"]["maxLength"] == 12 and schema["text"]["pattern"].endswith("{0,11}$")
    assert schema["confidence"]["minimum"] == 0.0 and schema["confidence"]["maximum"] == 1.0
    assert Part.model_validate({"text": "a", "confidence": 7}).confidence == 1.0
    assert Part.model_validate({"text": "a", "confidence": -2}).confidence == 0.0


# ----------------------------------------------------------------------- the real decoder


@pytest.mark.embedded
@pytest.mark.slow
async def test_the_embedded_decoder_takes_every_reply_schema(capfd):
    """Each distinct reply schema goes to llama.cpp once: the converter neither fails nor
    warns that it left part of the schema out (it says so on stderr)."""
    from veracity.core.config import LLMConfig
    from veracity.llm.base import LLMRequest, user
    from veracity.llm.factory import build_llm
    from veracity.runtime import resolve_llm

    llm = build_llm(
        resolve_llm(LLMConfig(cache_mode="off", n_parallel=1)), models_dir=home_paths().models
    )
    failures = {}
    for key, model in distinct_models().items():
        request = LLMRequest(
            messages=[user("Reply in JSON.")], max_tokens=4, json_schema=schema_for(model)
        )
        try:
            await llm.complete(request)
        except Exception as exc:  # every failure is reported below
            failures[key] = f"{type(exc).__name__}: {exc}"
        warned = [line for line in capfd.readouterr().err.splitlines() if "schema" in line]
        if warned:
            failures[key] = "; ".join(warned)
    assert failures == {}
