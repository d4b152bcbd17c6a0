"""What a request may tune (`veracity.methods.options`): the declarations on the method
config classes, checked when a class is made, and the one validator of request options."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

import pytest
from pydantic import Field

from veracity.core import registry
from veracity.core.errors import MethodConfigError, RequestOptionError
from veracity.methods.base import ChoiceConfig, MethodConfig
from veracity.methods.options import _unsafe, allowed_options, request_config

# names that would let a request point a method at something outside it
DANGEROUS = re.compile(r"path|dir|url|env|command|args|server|llm|source|tool|index|checkpoint")
REVIEWED = {"on_source_error"}  # ZoFia: "fail" or "continue" when a source fails


def _config_classes() -> dict[str, type]:
    return {n: registry.methods.get(n).config_class for n in registry.methods.names()}


def test_every_registered_method_declares_only_safe_options():
    audited = 0
    for method, config_class in _config_classes().items():
        for name in allowed_options(config_class):
            field = config_class.model_fields[name]
            assert _unsafe(name, field) is None, f"{method}.{name}"
            assert name in REVIEWED or not DANGEROUS.search(name), f"{method}.{name}"
            audited += 1
    assert audited > 40
    assert "temperature" in allowed_options(_config_classes()["cot"])
    mermaid = allowed_options(_config_classes()["mermaid"])
    assert "mcp_servers" not in mermaid and "memory" not in mermaid and "max_steps" in mermaid


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("path: Path | None = None", "has the type Path"),
        ("name: str = 'x'", "has the type str"),
        ("rounds: int = 3", "without both bounds"),
        ("rounds: int = Field(default=3, ge=1)", "without both bounds"),
        ("names: list[str] = []", "has the type list"),
        ("options: dict[str, int] = {}", "has the type dict"),
    ],
)
def test_a_declaration_of_an_unsafe_option_fails_when_the_class_is_made(body, why):
    field = body.split(":")[0]
    code = f"class Bad(MethodConfig):\n    request_options = ({field!r},)\n    {body}\n"
    with pytest.raises(TypeError, match=why):
        namespace = {"MethodConfig": MethodConfig, "Path": Path, "Field": Field}
        exec(compile(code, "<bad config>", "exec", dont_inherit=True), namespace)


def test_declarations_that_hold():
    class Good(ChoiceConfig):
        request_options = ("mode", "rounds", "fast", "temperature")
        mode: Literal["a", "b"] = "a"
        rounds: int = Field(default=2, ge=1, le=5)
        fast: bool | None = None
        temperature: float = 0.0

    assert allowed_options(Good) == (
        "estimator", "fast", "min_matched_mass", "mode", "rounds", "sample_order",
        "sample_temperature", "samples_k", "temperature", "top_logprobs",
    )  # fmt: skip
    with pytest.raises(TypeError, match="'nope' is not one of its fields"):

        class Missing(MethodConfig):
            request_options = ("nope",)

    with pytest.raises(TypeError, match="'top_logprobs' is a number without both bounds"):

        class Loosened(ChoiceConfig):  # a base's option redefined without its bounds
            top_logprobs: int = 10


def test_allowed_values_pass_and_are_validated():
    assert request_config("cot", None) == {}
    assert request_config("cot", {"temperature": "0.5", "estimator": "sampling"}) == {
        "temperature": 0.5,
        "estimator": "sampling",
    }
    assert request_config("radar", {"rounds": 2, "early_stop": False, "agents": 3}) == {
        "rounds": 2,
        "early_stop": False,
        "agents": 3,
    }


@pytest.mark.parametrize(
    ("method", "options", "match"),
    [
        ("mermaid", {"mcp_servers": [{"name": "x", "command": "/bin/sh"}]}, "'mcp_servers'"),
        ("mermaid", {"memory": {"path": "/etc/x"}}, "cannot set 'memory'"),
        ("s2mad", {"scorer_llm": {"base_url": "http://x", "api_key_env": "K"}}, "'scorer_llm'"),
        ("toe", {"checkpoints_dir": "/tmp"}, "cannot set 'checkpoints_dir'"),
        ("radar", {"corpus": {"index": "x", "indexes_dir": "/"}}, "cannot set 'corpus'"),
        ("zofia", {"hf_ner_model": "/models/ner", "embedder": "/x"}, "'embedder', 'hf_ner_model'"),
        ("rag", {"source": "web"}, "cannot set 'source'"),
        ("cot", {"labels": "true_false"}, "request's `labels`"),
        ("cot", {"temperature": 7}, "less than or equal to 2"),
        ("cot", {"temperature": float("nan")}, "finite"),
        ("cot", {"temperature": [0.1]}, "takes a single value, not list"),
        ("radar", {"rounds": 99}, "rounds"),
        ("radar", {"agents": 5}, "agents"),
        ("cot", ["temperature"], "must be an object"),
    ],
)  # fmt: skip
def test_refused_options_name_what_a_request_may_set(method, options, match):
    with pytest.raises(RequestOptionError, match=re.escape(match)) as err:
        request_config(method, options)
    assert err.value.allowed == list(allowed_options(_config_classes()[method]))
    if "cannot set" in str(err.value):
        assert "it may set: " in str(err.value) and "operator's run config" in str(err.value)


def test_an_unknown_method_is_a_config_error():
    with pytest.raises(MethodConfigError, match="unknown method"):
        request_config("nope", {"temperature": 0.1})
