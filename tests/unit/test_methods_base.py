import pytest

import veracity
from veracity.core.registry import RegistryError
from veracity.core.types import Article, Claim, Post
from veracity.llm.base import LLMAuthError, LLMServerError
from veracity.llm.client import ManagedLLM, RetryPolicy
from veracity.methods.base import MethodConfigError, load_method
from veracity.methods.baselines import CoTMethod, DirectMethod
from veracity.testing import ScriptedLLM, ScriptedReply


def _answer(label, alternatives=None, reasoning=None):
    body = (
        f'{{"label": "{label}"}}'
        if reasoning is None
        else (f'{{"reasoning": "{reasoning}", "label": "{label}"}}')
    )
    return ScriptedReply(body, alternatives=alternatives, at=label)


async def test_direct_uses_label_probabilities_for_score_and_confidence():
    llm = ScriptedLLM().queue(_answer("false", {"false": 0.6, "true": 0.2}))
    verdict = await DirectMethod(llm=llm).check(Claim(text="The moon is cheese."))
    assert verdict.label == "false"
    assert verdict.probabilities == pytest.approx({"true": 0.25, "false": 0.75})
    assert verdict.confidence == pytest.approx(0.75)
    assert verdict.score == pytest.approx(0.25)  # expected veracity
    assert verdict.usage.llm_calls == 1 and verdict.usage.completion_tokens > 0
    assert [e.kind for e in verdict.trace.events] == ["stage", "llm_call", "decision", "stage"]
    prompt = llm.calls[0].messages[-1].content
    assert "The moon is cheese." in prompt and "- true:" in prompt


async def test_any_label_space_and_no_logprobs_backend():
    llm = ScriptedLLM().queue('{"label": "HALF-TRUE"}')
    llm.capabilities = llm.capabilities.model_copy(update={"logprobs": False})
    verdict = await DirectMethod(llm=llm, labels="true_half_false").check(
        Article(title="T", body="B")
    )
    assert verdict.label == "HALF-TRUE" and verdict.score == 0.5
    assert verdict.probabilities is None and verdict.confidence is None
    assert llm.calls[0].logprobs is False


async def test_cot_returns_reasoning_as_rationale():
    llm = ScriptedLLM().queue(_answer("REAL", reasoning="checked the facts"))
    verdict = await CoTMethod(llm=llm, labels="real_fake").check(Post(text="p"))
    assert verdict.label == "REAL" and verdict.rationale == "checked the facts"


async def test_unusable_output_becomes_an_error_verdict_not_a_label():
    llm = ScriptedLLM(default="I think it is probably true")
    verdict = await DirectMethod(llm=llm).check(Claim(text="x"))
    assert verdict.label is None and "StructuredOutputError" in verdict.error
    assert verdict.trace.of_kind("error")[-1].data["fatal"] is True
    assert verdict.usage.llm_calls == 3


async def test_transient_fault_after_retries_is_recorded_config_faults_raise():
    class Down:
        capabilities = ScriptedLLM().capabilities
        backend_id = "down"

        def __init__(self, exc):
            self.exc = exc

        async def complete(self, request):
            raise self.exc

    fast = RetryPolicy(max_attempts=2, base_delay_s=0, max_delay_s=0)
    verdict = await DirectMethod(llm=ManagedLLM(Down(LLMServerError("503")), retry=fast)).check(
        Claim(text="x")
    )
    assert verdict.error.startswith("LLMServerError")
    with pytest.raises(LLMAuthError):
        await DirectMethod(llm=ManagedLLM(Down(LLMAuthError("bad key")))).check(Claim(text="x"))


def test_config_errors_are_clear():
    with pytest.raises(MethodConfigError, match="invalid method_config"):
        DirectMethod(llm=ScriptedLLM(), config={"temprature": 0.2})
    with pytest.raises(Exception, match="unknown label space"):
        DirectMethod(llm=ScriptedLLM(), labels="nope")
    with pytest.raises(RegistryError, match="unknown method 'nope'"):
        load_method("nope")


async def test_input_kind_is_checked():
    class ClaimsOnly(DirectMethod):
        input_kinds = ("claim",)

    with pytest.raises(TypeError, match="checks claim inputs, not a post"):
        await ClaimsOnly(llm=ScriptedLLM()).check(Post(text="p"))


def test_public_api_check_and_as_input():
    llm = ScriptedLLM(default='{"label": "true"}')
    verdict = veracity.check("Water is wet.", llm=llm)
    assert verdict.label == "true" and verdict.method == "direct"
    assert veracity.as_input("body", kind="article").kind == "article"
    assert veracity.as_input({"kind": "post", "text": "hi"}).kind == "post"
    with pytest.raises(ValueError, match="unknown input kind"):
        veracity.as_input({"kind": "tweet", "text": "hi"})
    with pytest.raises(TypeError):
        veracity.as_input(42)  # type: ignore[arg-type]


async def test_sync_check_inside_event_loop_points_to_acheck():
    with pytest.raises(RuntimeError, match="acheck"):
        veracity.check("x", llm=ScriptedLLM())
    verdict = await veracity.acheck("x", llm=ScriptedLLM(default='{"label": "false"}'))
    assert verdict.label == "false"


def test_methods_are_registered_through_entry_points():
    from veracity.core import registry

    assert {"direct", "cot"} <= set(registry.methods.names())
    assert registry.methods.get("cot") is CoTMethod


def test_pick_source_by_name_or_the_only_one():
    from veracity.testing import InMemorySource

    a, b = InMemorySource([], name="a"), InMemorySource([], name="b")
    one = DirectMethod(llm=ScriptedLLM(), sources={"a": a})
    assert one.pick_source() is one.sources["a"] and one.pick_source("a") is one.sources["a"]
    two = DirectMethod(llm=ScriptedLLM(), sources={"a": a, "b": b})
    assert two.pick_source("b") is two.sources["b"]
    with pytest.raises(MethodConfigError, match="several sources"):
        two.pick_source()
    with pytest.raises(MethodConfigError, match="no source named 'c'"):
        two.pick_source("c")
    with pytest.raises(MethodConfigError, match="needs a source"):
        DirectMethod(llm=ScriptedLLM()).pick_source()
    with pytest.raises(MethodConfigError, match="my message"):
        two.pick_source(missing="my message")
