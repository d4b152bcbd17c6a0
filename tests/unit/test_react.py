import json

import pytest

from veracity.core.types import Claim, Document
from veracity.deliberation.react import Observation, SourceTool, Trajectory, react_loop
from veracity.llm.base import user
from veracity.methods.base import MethodConfigError
from veracity.methods.react import ReActMethod
from veracity.retrieval.base import SourceUnreachable
from veracity.testing import InMemorySource, ScriptedLLM, ScriptedReply

DOCS = [
    Document(id="d1", title="Eiffel Tower", text="The Eiffel Tower is a tower in Paris, France."),
    Document(id="d2", title="Berlin", text="Berlin is the capital of Germany."),
]


def step(action, text="", thought="think"):
    return json.dumps({"thought": thought, "action": action, "action_input": text})


def scripted(*steps, label="false", alternatives=None):
    llm = ScriptedLLM()
    for i, s in enumerate(steps, 1):
        llm.on(".*", s, tag=f"react:{i}")
    llm.on(
        ".*",
        ScriptedReply(
            json.dumps({"summary": "it is in Paris", "label": label}),
            alternatives=alternatives,
            at=f'{label}"',
        ),
        tag="react:answer",
    )
    return llm


async def test_react_searches_then_answers_with_evidence_and_trace():
    llm = scripted(
        step("search_wiki", "Eiffel Tower location"),
        step("finish"),
        alternatives={"false": 0.9, "true": 0.1},
    )
    method = ReActMethod(llm=llm, sources={"wiki": InMemorySource(DOCS, name="wiki")})
    verdict = await method.check(Claim(text="The Eiffel Tower is in Berlin."))
    assert verdict.label == "false" and verdict.confidence == pytest.approx(0.9)
    assert [e.document.id for e in verdict.evidence] == ["d1"]
    assert verdict.metadata["steps"] == 2 and verdict.metadata["finished"] is True
    assert verdict.usage.searches == 1 and verdict.usage.llm_calls == 3
    # the second step sees the observation; the final answer sees the whole trajectory
    second = llm.calls_tagged("react:2")[0].messages[-1].content
    assert "Observation 1" in second and "Paris, France" in second
    # shared layout: the answer is one more turn of the chat, which repeats the last step's
    # prompt; the model's finishing reply and the closing question follow it
    steps = llm.calls_tagged("react:2")[0].messages
    final = llm.calls_tagged("react:answer")[0].messages
    assert final[: len(steps)] == steps and [m.role for m in final[len(steps) :]] == [
        "assistant",
        "user",
    ]
    assert "finish" in final[-2].content and "The investigation is over" in final[-1].content
    assert "observation" in final[0].content  # the notice names the observations' fence
    turns = [e for e in verdict.trace.events if e.kind == "agent_turn"]
    assert [t.data["action"] for t in turns] == ["search_wiki", "finish"]
    # the tool list names the source and the step schema only allows real tools
    assert "search_wiki" in llm.calls[0].messages[0].content
    assert llm.calls[0].json_schema["properties"]["action"]["enum"] == ["search_wiki", "finish"]


async def test_paper_layout_quotes_the_trajectory_in_an_answer_prompt_of_its_own():
    llm = scripted(step("search_wiki", "Eiffel Tower location"), step("finish"))
    method = ReActMethod(
        llm=llm, config={"prompt_layout": "paper"}, sources={"wiki": InMemorySource(DOCS)}
    )
    await method.check(Claim(text="The Eiffel Tower is in Berlin."))
    final = llm.calls_tagged("react:answer")[0].messages
    assert [m.role for m in final] == ["system", "user"]
    assert "Action 1: search_wiki[Eiffel Tower location]" in final[-1].content


async def test_an_answer_at_the_step_budget_closes_the_last_observation_turn():
    """Without a finishing reply the closing question takes the place of "Next step?"."""
    llm = scripted(*[step("search_wiki", f"q{i}") for i in range(1, 3)])
    method = ReActMethod(
        llm=llm, config={"max_steps": 2}, sources={"wiki": InMemorySource(DOCS, name="wiki")}
    )
    await method.check(Claim(text="Berlin is in Germany."))
    final = llm.calls_tagged("react:answer")[0].messages
    assert final[-1].role == "user" and final[-1].content.startswith("Observation 2:")
    assert (
        "Next step?" not in final[-1].content and "The investigation is over" in final[-1].content
    )


async def test_step_budget_forces_an_answer():
    llm = scripted(*[step("search_wiki", f"q{i}") for i in range(1, 4)])
    method = ReActMethod(
        llm=llm, config={"max_steps": 3}, sources={"wiki": InMemorySource(DOCS, name="wiki")}
    )
    verdict = await method.check(Claim(text="Berlin is in Germany."))
    assert verdict.metadata["steps"] == 3 and verdict.metadata["finished"] is False
    assert verdict.usage.searches == 3


async def test_failing_source_is_an_observation_not_a_crash():
    bad = InMemorySource([], name="web", fail_with=SourceUnreachable("web", "down"))
    tool = SourceTool(bad, "search_web", "web")
    obs = await tool.run("anything")
    assert obs.error and "down" in obs.text and obs.documents == []
    assert (await tool.run("  ")).error == "empty query"


async def test_loop_validates_tools_and_budget():
    llm = ScriptedLLM()
    with pytest.raises(ValueError, match="finish"):
        await react_loop(llm, [user("x")], [SourceTool(InMemorySource([]), "finish", "x")])
    with pytest.raises(ValueError, match="max_steps"):
        await react_loop(llm, [user("x")], [], max_steps=0)


def test_react_needs_sources():
    with pytest.raises(MethodConfigError, match="react needs sources"):
        ReActMethod(llm=ScriptedLLM())
    with pytest.raises(MethodConfigError, match="asked for"):
        ReActMethod(
            llm=ScriptedLLM(), config={"tools": ["nope"]}, sources={"wiki": InMemorySource(DOCS)}
        )


def test_trajectory_documents_are_unique_and_rendered():
    t = Trajectory()
    from veracity.deliberation.react import Step

    t.steps.append(
        Step(
            index=1,
            thought="a",
            action="s",
            input="q",
            observation=Observation(text="o", documents=DOCS),
        )
    )
    t.steps.append(
        Step(
            index=2,
            thought="b",
            action="s",
            input="q2",
            observation=Observation(text="o2", documents=DOCS[:1]),
        )
    )
    assert [d.id for d in t.documents] == ["d1", "d2"]
    assert t.render().splitlines()[1] == "Action 1: s[q]"
