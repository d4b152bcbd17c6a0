"""A ReAct loop: the model alternates thoughts and tool calls until it is ready to answer.

Each step the model returns JSON with a thought, the action (a tool name or ``finish``)
and the action's input; the tool's observation is appended to the trajectory and the
next step sees everything so far. The loop ends when the model chooses ``finish`` or the
step budget runs out. What the answer looks like is left to the caller, which asks a
final, label-constrained question over the trajectory (see `methods/react.py`).

Tools are small objects with a name, a description and an async ``run(input)`` returning
an `Observation`; `SourceTool` turns any evidence `Source` into one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity import context
from veracity.llm.base import LLM, Message, assistant, user
from veracity.llm.structured import complete_structured
from veracity.prompting import truncate_chars
from veracity.retrieval.base import Query, Source, SourceAuthError, SourceError
from veracity.retrieval.guards import guard_query
from veracity.types import Document
from veracity.untrusted import fence

FINISH = "finish"


class Observation(BaseModel):
    """What a tool returned: text for the model and the documents behind it."""

    model_config = ConfigDict(extra="forbid")

    text: str
    documents: list[Document] = Field(default_factory=list)
    error: str | None = None


class Tool(Protocol):
    name: str
    description: str

    async def run(self, tool_input: str) -> Observation: ...


class SourceTool:
    """A search tool over an evidence source.

    Args:
        source: the source.
        name: tool name shown to the model (letters, digits, underscores).
        description: what the tool is good for.
        top_k: results per search.
        max_chars: each result's text is cut to this length in the observation.
        before: evidence cutoff applied to every search (the claim's date).
    """

    def __init__(
        self,
        source: Source,
        name: str,
        description: str,
        *,
        top_k: int = 3,
        max_chars: int = 500,
        before=None,
    ):
        self.source = source
        self.name = name
        self.description = description
        self.top_k = top_k
        self.max_chars = max_chars
        self.before = before

    async def run(self, tool_input: str) -> Observation:
        if not tool_input.strip():
            return Observation(text="(empty search query)", error="empty query")
        query = guard_query(Query(text=tool_input, top_k=self.top_k, before=self.before))
        try:
            docs = await self.source.search(query)
        except SourceAuthError:
            raise
        except SourceError as exc:  # the model sees the failure and may try another tool
            return Observation(text=f"(search failed: {exc})", error=str(exc))
        if not docs:
            return Observation(text="(no results)")
        lines = [
            f"[{d.id}] {d.title + ': ' if d.title else ''}{truncate_chars(d.text, self.max_chars)}"
            for d in docs
        ]
        return Observation(text="\n".join(lines), documents=docs)


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")

    index: int
    thought: str
    action: str
    input: str
    observation: Observation | None = None


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: list[Step] = Field(default_factory=list)
    finished: bool = False  # the model chose to finish (not stopped by the budget)

    @property
    def documents(self) -> list[Document]:
        seen: dict[str, Document] = {}
        for step in self.steps:
            for doc in step.observation.documents if step.observation else []:
                seen.setdefault(doc.id, doc)
        return list(seen.values())

    def render(self, max_chars: int = 6000) -> str:
        parts = []
        for s in self.steps:
            parts.append(f"Thought {s.index}: {s.thought}")
            parts.append(f"Action {s.index}: {s.action}[{s.input}]")
            if s.observation is not None:
                parts.append(f"Observation {s.index}: {s.observation.text}")
        return truncate_chars("\n".join(parts), max_chars)


def step_model(tools: Sequence[str], max_chars: int = 600) -> type[BaseModel]:
    """The JSON a step answers with: thought, action (a tool or finish), action input."""
    return create_model(
        "ReActStep",
        thought=(str, Field(max_length=max_chars, description="what to find out next and why")),
        action=(Literal[(*tools, FINISH)], Field(description="a tool name, or finish")),
        action_input=(str, Field(max_length=300, description="the tool's input")),
    )


async def react_loop(
    llm: LLM,
    opening: list[Message],
    tools: Sequence[Tool],
    *,
    max_steps: int = 5,
    temperature: float = 0.0,
    max_tokens: int = 400,
    tag: str = "react",
    on_step: Callable[[Step], None] | None = None,
) -> Trajectory:
    """Run thought → action → observation steps until ``finish`` or `max_steps`.

    Args:
        opening: the task prompt (system + user messages describing tools and goal).
        tools: available tools; names must be unique and not ``finish``.
    """
    by_name = {t.name: t for t in tools}
    if len(by_name) != len(tools) or FINISH in by_name:
        raise ValueError("tool names must be unique and must not be 'finish'")
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    model = step_model(list(by_name))
    convo = list(opening)
    trajectory = Trajectory()
    for index in range(1, max_steps + 1):
        result = await complete_structured(
            llm, convo, model, temperature=temperature, max_tokens=max_tokens, tag=f"{tag}:{index}"
        )
        reply = result.value
        step = Step(
            index=index, thought=reply.thought, action=reply.action, input=reply.action_input
        )
        if reply.action == FINISH:
            trajectory.steps.append(step)
            trajectory.finished = True
            _record(step, tag, on_step)
            break
        step.observation = await by_name[reply.action].run(reply.action_input)
        trajectory.steps.append(step)
        _record(step, tag, on_step)
        convo += [
            assistant(result.response.text),
            user(
                f"Observation {index}:\n{fence(step.observation.text, 'observation')}\n\nNext step?"
            ),
        ]
    return trajectory


def _record(step: Step, tag: str, on_step: Callable[[Step], None] | None) -> None:
    context.current().event(
        "agent_turn",
        tag,
        step=step.index,
        thought=step.thought,
        action=step.action,
        input=step.input,
        observation=step.observation.text if step.observation else None,
    )
    if on_step is not None:
        on_step(step)
