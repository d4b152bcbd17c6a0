"""A ReAct loop: the model alternates thoughts and tool calls until it is ready to answer.

Each step the model returns JSON with a thought and either a tool call or the end of
the investigation; the tool's observation is added to the trajectory and the next step
sees everything so far. The loop ends when the model finishes (or answers) or the step
budget runs out. Two step formats share the loop:

- `FlatSteps` (the ``react`` baseline): ``thought``, ``action`` (a tool name or
  ``finish``) and ``action_input`` (the tool's one string argument); the caller asks a
  final, label-constrained question over the trajectory (see `methods/react.py`);
- `ToolCallSteps` (MERMAID's executor): ``thought`` and either ``action`` — the tool's
  ``name``, the ``reason`` for the call and its ``input`` object, validated against the
  tool's argument model — or ``answer``, a label of the caller's label space.

The conversation is either the opening messages plus one assistant/observation pair
per step (default), or re-rendered every step by a caller's ``prompt(trajectory)``
(MERMAID's P_t = [c; D_c; M_c; H_t]), for which `Trajectory.render_bounded` keeps the
history within a size, summarising or dropping the oldest observations and saying so.

A ``before_call`` hook may answer a call without running the tool (MERMAID's evidence
memory replaying a remembered search). Every step is an ``agent_turn`` event and every
tool call a ``tool_call`` event in the trace. A step the model cannot produce in valid
form after the structured-output retries raises `StructuredOutputError` (recorded by
the method as the check's error); the loop never invents an answer.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, RootModel, create_model

from veracity.core import context
from veracity.core.events import AgentStep, Fault, ToolCall
from veracity.core.types import Document
from veracity.core.untrusted import fence
from veracity.llm.base import LLM, Message, StructuredOutputError, assistant, user
from veracity.llm.structured import complete_structured
from veracity.prompting import render_parts, truncate_chars, with_data_notice
from veracity.tools.base import Observation, SourceTool, Tool, primary_argument

__all__ = [
    "FINISH",
    "OBSERVATION_TAG",
    "FlatSteps",
    "Observation",
    "SourceTool",
    "Step",
    "Tool",
    "ToolCallSteps",
    "Trajectory",
    "conversation",
    "loop_opening",
    "react_loop",
    "step_model",
]

FINISH = "finish"
ANSWER = "answer"
OBSERVATION_TAG = "observation"  # the fence of a tool's result in the loop's chat


class Step(BaseModel):
    """One thought and what followed it: a tool call with its observation, or the end."""

    model_config = ConfigDict(extra="forbid")

    index: int
    thought: str
    action: str  # a tool name, "finish" or "answer"
    input: str  # the call's arguments as shown in the history
    arguments: dict[str, Any] | None = None
    reason: str | None = None
    answer: str | None = None
    observation: Observation | None = None
    from_memory: bool = False  # the observation was replayed instead of calling the tool
    reply: str = ""  # the model's raw reply


class Trajectory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    steps: list[Step] = Field(default_factory=list)
    finished: bool = False  # the model chose to finish or answer (not stopped by the budget)
    _last_response: Any = PrivateAttr(default=None)  # the last step's LLMResponse

    @property
    def last_response(self) -> Any:
        """The model response of the last step (token log-probabilities, usage)."""
        return self._last_response

    @property
    def answer(self) -> str | None:
        return next((s.answer for s in reversed(self.steps) if s.answer is not None), None)

    @property
    def documents(self) -> list[Document]:
        seen: dict[str, Document] = {}
        for step in self.steps:
            for doc in step.observation.documents if step.observation else []:
                seen.setdefault(doc.id, doc)
        return list(seen.values())

    @property
    def tool_calls(self) -> list[Step]:
        """Steps that called a tool (not those answered from memory)."""
        return [s for s in self.steps if s.observation is not None and not s.from_memory]

    def render(self, max_chars: int = 6000) -> str:
        return truncate_chars(self._render(set(), set()), max_chars)

    def render_bounded(
        self, max_chars: int, overflow: Literal["summarise", "drop"] = "summarise"
    ) -> tuple[str, dict[str, list[int]]]:
        """The history within `max_chars`, oldest observations shortened first.

        Returns the text and which steps' observations were ``summarised`` (cut to their
        first line and document titles) or ``dropped``. The newest observation is cut
        (never dropped) when it alone is over the budget.
        """
        summarised: set[int] = set()
        dropped: set[int] = set()
        text = self._render(summarised, dropped)
        for step in [s for s in self.steps if s.observation is not None][:-1]:
            if len(text) <= max_chars:
                break
            (dropped if overflow == "drop" else summarised).add(step.index)
            text = self._render(summarised, dropped)
        if overflow == "summarise":  # still too long: drop summaries too, oldest first
            for index in sorted(summarised):
                if len(text) <= max_chars:
                    break
                summarised.discard(index)
                dropped.add(index)
                text = self._render(summarised, dropped)
        how = {"summarised": sorted(summarised), "dropped": sorted(dropped)}
        return truncate_chars(text, max_chars), how

    def _render(self, summarised: set[int], dropped: set[int]) -> str:
        parts = []
        for s in self.steps:
            parts.append(f"Thought {s.index}: {s.thought}")
            if s.answer is not None:
                parts.append(f"Answer {s.index}: {s.answer}")
                continue
            parts.append(f"Action {s.index}: {s.action}[{s.input}]")
            if s.observation is None:
                continue
            if s.index in dropped:
                text = "(observation omitted to save space)"
            elif s.index in summarised:
                text = _digest(s.observation)
            else:
                text = s.observation.text
            origin = " (from memory)" if s.from_memory else ""
            parts.append(f"Observation {s.index}{origin}: {text}")
        return "\n".join(parts)


def _digest(obs: Observation) -> str:
    first = obs.text.strip().splitlines()[0] if obs.text.strip() else ""
    titles = [d.title for d in obs.documents if d.title]
    found = f" Found: {'; '.join(titles[:8])}." if titles else ""
    return f"(shortened) {truncate_chars(first, 160)}{found}"


# ----------------------------------------------------------------------- step formats


class Decision(BaseModel):
    """A parsed step: a thought and either a tool call, ``finish`` or an answer."""

    thought: str
    tool: str | None = None
    arguments: BaseModel | None = None
    reason: str | None = None
    answer: str | None = None
    shown_input: str = ""

    model_config = ConfigDict(arbitrary_types_allowed=True)


class StepFormat(Protocol):
    def model(self, tools: Sequence[Tool], *, answer_only: bool = False) -> type[BaseModel]: ...

    def parse(self, value: BaseModel, tools: dict[str, Tool]) -> Decision: ...


def step_model(tools: Sequence[str], max_chars: int = 600) -> type[BaseModel]:
    """The flat step: thought, action (a tool or finish), action input."""
    return create_model(
        "ReActStep",
        thought=(str, Field(max_length=max_chars, description="what to find out next and why")),
        action=(Literal[(*tools, FINISH)], Field(description="a tool name, or finish")),
        action_input=(str, Field(max_length=300, description="the tool's input")),
    )


class FlatSteps:
    """The baseline's step format (tools with one string argument, e.g. a query)."""

    def __init__(self, max_chars: int = 600):
        self.max_chars = max_chars

    def model(self, tools: Sequence[Tool], *, answer_only: bool = False) -> type[BaseModel]:
        for t in tools:
            if primary_argument(t) is None:
                raise ValueError(f"tool {t.name!r} does not take one string argument")
        return step_model([t.name for t in tools], self.max_chars)

    def parse(self, value: Any, tools: dict[str, Tool]) -> Decision:
        if value.action == FINISH:
            return Decision(thought=value.thought, shown_input=value.action_input)
        tool = tools[value.action]
        arg = primary_argument(tool)
        try:
            arguments = tool.input_model.model_validate({arg: value.action_input})
        except ValueError:
            arguments = None  # e.g. an empty query: the tool is not called
        return Decision(
            thought=value.thought,
            tool=value.action,
            arguments=arguments,
            shown_input=value.action_input,
        )


class ToolCallSteps:
    """MERMAID's step format: a tool call with a reason and typed input, or an answer."""

    def __init__(self, labels: Sequence[str], max_chars: int = 600):
        self.labels = tuple(labels)
        self.max_chars = max_chars

    def model(self, tools: Sequence[Tool], *, answer_only: bool = False) -> type[BaseModel]:
        thought = (str, Field(max_length=self.max_chars, description="your reasoning"))
        answer = create_model(
            "AnswerStep",
            __config__=ConfigDict(extra="forbid"),
            thought=thought,
            answer=(Literal[self.labels], Field(description="the verdict")),
        )
        if answer_only or not tools:
            return answer
        calls = [
            create_model(
                f"Call_{t.name}",
                __config__=ConfigDict(extra="forbid"),
                name=(Literal[t.name], ...),
                reason=(str, Field(max_length=200, description="why this call helps")),
                input=(t.input_model, ...),
            )
            for t in tools
        ]
        action = calls[0] if len(calls) == 1 else Union[tuple(calls)]  # noqa: UP007
        call_step = create_model(
            "ToolStep",
            __config__=ConfigDict(extra="forbid"),
            thought=thought,
            action=(action, Field(description="the tool to call")),
        )
        return _either(call_step, answer)

    def parse(self, value: Any, tools: dict[str, Tool]) -> Decision:
        inner = getattr(value, "root", value)
        if hasattr(inner, "answer"):
            return Decision(thought=inner.thought, answer=inner.answer)
        call = inner.action
        arguments = call.input
        shown = ", ".join(f"{k}={v!r}" for k, v in arguments.model_dump(exclude_none=True).items())
        return Decision(
            thought=inner.thought,
            tool=call.name,
            arguments=arguments,
            reason=call.reason,
            shown_input=shown,
        )


def _either(*models: type[BaseModel]) -> type[BaseModel]:
    """A model whose JSON is any one of `models` (validated in order)."""
    return create_model("ReActStep", __base__=RootModel[Union[tuple(models)]])  # noqa: UP007


# ----------------------------------------------------------------------- the loop

BeforeCall = Callable[[Tool, BaseModel], Awaitable[Observation | None]]


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
    step_format: StepFormat | None = None,
    prompt: Callable[[Trajectory], list[Message]] | None = None,
    before_call: BeforeCall | None = None,
    top_logprobs: int = 0,
) -> Trajectory:
    """Run thought → action → observation steps until the model ends or `max_steps`.

    Args:
        opening: the task prompt (used when `prompt` is None).
        tools: available tools; names must be unique and not ``finish``/``answer``.
        step_format: `FlatSteps` (default) or `ToolCallSteps`.
        prompt: builds each step's messages from the trajectory so far (instead of the
            growing conversation).
        before_call: may return an observation for a call instead of running the tool.
        top_logprobs: ask for token log-probabilities (where the backend has them), e.g.
            to read an answer's label probabilities from `Trajectory.last_response`.

    Raises:
        StructuredOutputError: a step stayed invalid after the re-asks.
    """
    by_name = {t.name: t for t in tools}
    if len(by_name) != len(tools) or {FINISH, ANSWER} & set(by_name):
        raise ValueError("tool names must be unique and must not be 'finish' or 'answer'")
    if max_steps < 1:
        raise ValueError("max_steps must be at least 1")
    fmt = step_format or FlatSteps()
    model = fmt.model(list(tools))
    trajectory = Trajectory()
    wants_probs = top_logprobs > 0 and llm.capabilities.logprobs
    for index in range(1, max_steps + 1):
        messages = prompt(trajectory) if prompt else conversation(opening, trajectory)
        try:
            result = await complete_structured(
                llm, messages, model, temperature=temperature, max_tokens=max_tokens,
                tag=f"{tag}:{index}", logprobs=wants_probs,
                top_logprobs=top_logprobs if wants_probs else None,
            )  # fmt: skip
        except StructuredOutputError as exc:
            context.current().emit(Fault(name=tag, error=str(exc), step=index, fatal=True))
            raise
        decision = fmt.parse(result.value, by_name)
        trajectory._last_response = result.response
        step = Step(
            index=index,
            thought=decision.thought,
            action=decision.tool or (ANSWER if decision.answer is not None else FINISH),
            input=decision.shown_input,
            reason=decision.reason,
            answer=decision.answer,
            reply=result.response.text,
        )
        trajectory.steps.append(step)
        if decision.tool is None:
            trajectory.finished = True
            _record(step, tag, on_step, max_steps)
            break
        await _act(step, by_name[decision.tool], decision.arguments, before_call, tag)
        _record(step, tag, on_step, max_steps)
    return trajectory


async def _act(
    step: Step, tool: Tool, arguments: BaseModel | None, before_call: BeforeCall | None, tag: str
) -> None:
    started = time.perf_counter()
    if arguments is None:
        step.observation = Observation(text="(empty search query)", error="empty query")
    else:
        step.arguments = arguments.model_dump(mode="json", exclude_none=True)
        remembered = await before_call(tool, arguments) if before_call else None
        step.from_memory = remembered is not None
        step.observation = remembered or await tool.call(arguments)
    obs = step.observation
    context.current().emit(
        ToolCall(
            name=tag,
            tool=tool.name,
            arguments=step.arguments,
            error=obs.error,
            step=step.index,
            reason=step.reason,
            from_memory=step.from_memory,
            documents=[d.id for d in obs.documents],
            latency_s=round(time.perf_counter() - started, 4),
        )
    )


def loop_opening(package: str, name: str, **variables: Any) -> list[Message]:
    """The opening messages of a loop run as a conversation (`react_loop` without
    `prompt`), from a template: its data notice names the observations' fence as well as
    the template's own, since observations join the chat from the second step and the
    system message must stay the same for every step to extend the last."""
    messages, used = render_parts(package, name, **variables)
    return with_data_notice(messages, {*used, OBSERVATION_TAG})


def conversation(
    opening: list[Message], trajectory: Trajectory, closing: str | None = None
) -> list[Message]:
    """The loop's chat: `opening`, then each tool call's reply and its observation.

    Args:
        closing: a last user turn in place of asking for the next step: after the model's
            closing reply when it finished, else after the last observation. The chat
            then repeats the last step's prompt up to that point, so a server that ran
            the loop computes only the closing turn.
    """
    convo = list(opening)
    steps = trajectory.steps
    called = [s for s in steps if s.observation is not None]
    ended = bool(steps) and trajectory.finished and steps[-1].observation is None
    for s in called:
        assert s.observation is not None
        last = closing is not None and not ended and s is called[-1]
        convo += [
            assistant(s.reply),
            user(
                f"Observation {s.index}:\n{fence(s.observation.text, OBSERVATION_TAG)}\n\n"
                + (closing if last else "Next step?")
            ),
        ]
    if closing is not None and ended:
        convo += [assistant(steps[-1].reply), user(closing)]
    elif closing is not None and not called:  # no step at all: the opening asks it
        convo[-1] = user(f"{convo[-1].content}\n\n{closing}")
    return convo


def _record(step: Step, tag: str, on_step: Callable[[Step], None] | None, max_steps: int) -> None:
    context.current().emit(
        AgentStep(
            name=tag,
            step=step.index,
            steps=max_steps,
            thought=step.thought,
            action=step.action,
            input=step.input,
            answer=step.answer,
            observation=step.observation.text if step.observation else None,
        )
    )
    if on_step is not None:
        on_step(step)
