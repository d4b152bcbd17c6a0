"""The service every front end checks through (`veracity.runtime.service.Veracity`): its
rules run once per check whatever the front end, refusals read the same everywhere, one
listing feeds every front end, and it owns the models it builds."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from typer.testing import CliRunner

import veracity
from veracity.core.config import RunConfig
from veracity.core.errors import InputError, problem_text, problems
from veracity.llm.client import ManagedLLM
from veracity.runtime import rules, service
from veracity.runtime.listing import list_methods
from veracity.runtime.service import CheckRefused, Veracity, error_text
from veracity.testing import ScriptedLLM, ScriptedReply

REPLY = ScriptedReply('{"label": "false"}', alternatives={"false": 0.8, "true": 0.2}, at="false")


def scripted() -> ScriptedLLM:
    return ScriptedLLM(default=REPLY)


class Spy:
    """Counts the calls of a function it wraps."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


@pytest.fixture
def built(monkeypatch):
    """Every model the composition root builds (a scripted one each time)."""
    made: list[ManagedLLM] = []

    def fake_build(cfg=None, **kw):
        made.append(ManagedLLM(scripted(), cache=Closable()))
        return made[-1]

    monkeypatch.setattr("veracity.llm.factory.build_llm", fake_build)
    monkeypatch.setattr("veracity.cli.check.ensure_model", lambda cfg: None)
    return made


class Closable:
    """A stand-in LLM cache that records being closed (and never holds a reply)."""

    mode = "auto"
    closed = False

    def get(self, request, backend_id):
        return None

    def put(self, request, backend_id, response):
        pass

    def close(self):
        self.closed = True


# ------------------------------------------------------------------ rules, once


@pytest.fixture
def spies(monkeypatch):
    """The input rule, the method lookup and the input-kind rule, counted."""
    found = {
        "read_input": Spy(service.read_input),
        "method_class": Spy(service.method_class),
        "require_kind": Spy(service.require_kind),
    }
    for name, spy in found.items():
        monkeypatch.setattr(service, name, spy)
    return found


def _each_rule_ran_once(spies):
    assert {name: spy.calls for name, spy in spies.items()} == {
        "read_input": 1,
        "method_class": 1,
        "require_kind": 1,
    }


def test_the_python_api_checks_through_the_service_once(spies):
    verdict = veracity.check("The moon is made of cheese.", "direct", llm=scripted())
    assert verdict.label == "false"
    _each_rule_ran_once(spies)


def test_the_cli_checks_through_the_service_once(spies, built):
    from veracity.cli import app

    result = CliRunner().invoke(app, ["check", "The moon is made of cheese.", "--json"])
    assert result.exit_code == 0, result.output
    _each_rule_ran_once(spies)


def test_the_rest_adapter_checks_through_the_service_once(spies):
    from veracity.server.runs import RunBuilder
    from veracity.server.schemas import CheckRequest
    from veracity.server.settings import ServerSettings

    builder = RunBuilder(RunConfig(), ServerSettings(), llm=scripted())
    body = {"input": {"kind": "claim", "text": "The moon is made of cheese."}}
    plan = builder.build(CheckRequest.model_validate(body))
    run, item = plan.run, plan.item
    assert run.method.name == "direct" and item.text == "The moon is made of cheese."
    _each_rule_ran_once(spies)


def test_the_mcp_adapter_checks_through_the_service_once(spies):
    from veracity.mcp.server import McpTools

    async def progress(*args):
        pass

    tools = McpTools(RunConfig(), llm=scripted())
    result = asyncio.run(tools.check("The moon is made of cheese.", "claim", None, None, progress))
    assert result.label == "false"
    _each_rule_ran_once(spies)


# ------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("choices", "title", "words"),
    [
        ({"method": "nope"}, rules.UNKNOWN_METHOD, ["unknown method 'nope'", "direct"]),
        ({"labels": "nope"}, rules.UNKNOWN_LABELS, ["unknown label space"]),
        ({"method": "s2mad"}, rules.KIND_REFUSED, ["s2mad checks post inputs, not a claim"]),
        ({"sources": ["web"]}, rules.UNKNOWN_SOURCE, ["['web'] not configured", "none"]),
        ({"model": "gpt-x"}, rules.MODEL_NOT_ALLOWED, ["choose one of"]),
        ({"options": {"prompt_dir": "/x"}}, rules.OPTION_REFUSED, ["cannot set 'prompt_dir'"]),
    ],
)
def test_a_refusal_comes_before_any_model_with_its_title(built, choices, title, words):
    with Veracity(RunConfig()) as v, pytest.raises(CheckRefused) as refused:
        v.plan("The moon is made of cheese.", **choices)
    assert refused.value.title == title
    assert all(w in str(refused.value) for w in words), str(refused.value)
    assert built == []  # refused before a model was built


def test_refused_options_carry_what_a_request_may_set():
    v = Veracity(RunConfig(), llm=scripted())
    with pytest.raises(CheckRefused) as refused:
        v.plan("x", options={"prompt_dir": "/x", "temperature": 0.1})
    assert refused.value.refused == ["prompt_dir"]
    assert "temperature" in refused.value.allowed


def test_an_operator_that_takes_no_options_refuses_them_with_its_words():
    v = Veracity(RunConfig(), llm=scripted(), options_refusal="not on this server")
    with pytest.raises(CheckRefused, match="not on this server") as refused:
        v.plan("x", options={"temperature": 0.1})
    assert refused.value.title == rules.OPTIONS_NOT_TAKEN
    assert v.plan("x", options={}).run.method.name == "direct"  # no options: nothing to refuse


@pytest.mark.parametrize(
    ("item", "kind", "message"),
    [
        ("   ", "claim", "empty"),
        ("x", "tweet", "unknown input kind 'tweet'"),
        ({"kind": "tweet", "text": "x"}, "claim", "unknown input kind 'tweet'"),
        ({"kind": ["a"], "text": "x"}, "claim", "unknown input kind ['a']"),
        ({"text": "x", "colour": "red"}, "claim", "not a valid claim: colour: Extra inputs"),
    ],
)
def test_a_bad_input_is_an_input_error_before_any_model(built, item, kind, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")):
        Veracity(RunConfig()).plan(item, kind=kind)
    assert built == []


def test_a_combination_that_does_not_build_is_refused_with_the_roots_message():
    v = Veracity(RunConfig(method="radar"), llm=scripted())
    with pytest.raises(CheckRefused) as refused:
        v.plan("x", labels="true_false")  # RADAR answers in its three-way space only
    assert refused.value.title == rules.NOT_BUILT and "radar" in str(refused.value)


# ------------------------------------------------------------------ error text


class _Row(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str
    n: int = 0

    @field_validator("text")
    @classmethod
    def _not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the text is empty")
        return v


def _invalid(data) -> ValidationError:
    with pytest.raises(ValidationError) as caught:
        _Row.model_validate(data)
    return caught.value


def test_a_validation_error_reads_as_field_and_message():
    exc = _invalid({"text": " ", "n": "many", "extra": 1})
    assert problem_text(exc) == (
        "text: the text is empty; n: Input should be a valid integer, unable to parse "
        "string as an integer; extra: Extra inputs are not permitted"
    )
    assert error_text(exc) == problem_text(exc)
    assert problem_text(exc, limit=1) == "text: the text is empty"
    assert problem_text(exc, where=False, limit=1) == "the text is empty"
    assert problem_text(exc, unknown="unknown key").endswith("extra: unknown key")
    assert [p["type"] for p in problems(exc)] == ["value_error", "int_parsing", "extra_forbidden"]


def test_any_other_error_reads_as_its_message():
    assert error_text(ValueError("no such file")) == "no such file"
    assert problems(ValueError("x")) == []


def test_the_config_and_method_errors_use_the_same_words():
    from veracity.core.config import validation_message
    from veracity.core.errors import MethodConfigError
    from veracity.methods.baselines import DirectMethod

    with pytest.raises(ValidationError) as caught:
        RunConfig.model_validate({"seed": "x", "nonsense": 1})
    text = validation_message(caught.value)
    assert "seed: Input should be a valid integer" in text
    assert "nonsense: unknown key (not one of this section's options)" in text
    with pytest.raises(MethodConfigError, match="direct: invalid method_config: temperature: "):
        DirectMethod(llm=scripted(), config={"temperature": "hot"})


# ------------------------------------------------------------------ listing


def test_one_listing_feeds_the_cli_rest_and_mcp():
    from veracity.mcp.server import McpTools
    from veracity.server.runs import RunBuilder
    from veracity.server.settings import ServerSettings

    listed = {m.name: m for m in list_methods() if not m.error}
    assert {"direct", "cot", "radar", "s2mad"} <= set(listed)
    assert listed["s2mad"].input_kinds == ("post",)
    assert "temperature" in listed["direct"].options
    rest = RunBuilder(RunConfig(), ServerSettings(), llm=scripted()).methods_info()
    mcp = McpTools(RunConfig(), llm=scripted()).methods()
    assert {m.name: m.options for m in rest.methods} == {
        n: list(m.options) for n, m in listed.items()
    }
    assert {m.name: m.options for m in mcp.methods} == {
        n: list(m.options) for n, m in listed.items()
    }
    assert {m.name: m.inputs for m in mcp.methods}["zofia"] == ", ".join(
        listed["zofia"].input_kinds
    )


def test_the_source_listing_says_what_each_type_needs(monkeypatch):
    monkeypatch.delenv("BRAVE_API_KEY", raising=False)
    types = {t.name: t.note for t in Veracity.source_types()}
    assert types["brave"] == "needs BRAVE_API_KEY" and types["duckduckgo"] == "ready"
    cfg = RunConfig(sources={"web": {"type": "duckduckgo"}})
    assert Veracity(cfg, llm=scripted()).configured_sources() == {"web": "duckduckgo"}


# ------------------------------------------------------------------ lifetimes


def test_one_model_per_name_shared_by_every_run_and_closed_on_close(built):
    v = Veracity(RunConfig(), models=["other-model"])
    first = v.plan("a claim").run
    second = v.plan("another claim", method="cot").run
    assert len(built) == 1 and first.llm is second.llm is built[0]
    v.plan("a claim", model="other-model")
    assert len(built) == 2 and v.models() == [RunConfig().llm.model, "other-model"]
    v.close()
    assert all(m.cache.closed for m in built)
    v.plan("a claim")  # closed models are let go: the next check builds afresh
    assert len(built) == 3


def test_a_model_given_is_shared_and_never_closed():
    given = ManagedLLM(scripted(), cache=Closable())
    with Veracity(RunConfig(), llm=given) as v:
        assert v.plan("a claim").run.llm is given
    assert not given.cache.closed


def test_runs_are_kept_by_spec(built):
    kept = Veracity(RunConfig())
    assert kept.plan("a").run is kept.plan("b").run
    assert kept.plan("a").run is not kept.plan("a", method="cot").run
    assert len(built) == 1  # one model per service, whatever the runs


def test_search_refuses_what_is_not_configured():
    v = Veracity(RunConfig(), llm=scripted())
    with pytest.raises(CheckRefused, match="no sources are configured"):
        asyncio.run(v.search("moon"))


def test_search_uses_the_sources_built_once(monkeypatch):
    from veracity.core.types import Document
    from veracity.testing.sources import InMemorySource

    docs = [Document(id="d1", text="The moon is rock.", source="mem")]
    builds = Spy(lambda sources, **how: {"mem": InMemorySource(docs)})
    monkeypatch.setattr(service, "managed_sources", builds)
    v = Veracity(RunConfig(), llm=scripted())
    assert [d.id for d in asyncio.run(v.search("moon rock"))] == ["d1"]
    with pytest.raises(CheckRefused, match="unknown source 'web'"):
        asyncio.run(v.search("moon", source="web"))
    with pytest.raises(CheckRefused, match="greater than or equal to 1"):
        asyncio.run(v.search("moon", top_k=0))
    assert builds.calls == 1
