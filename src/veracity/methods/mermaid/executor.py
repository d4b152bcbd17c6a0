"""MERMAID's executor: its toolset τ and the ReAct loop with P_t = [c; D_c; M_c; H_t].

`Toolbox` provides the tools: by default veracity's evidence tool server launched over
stdio and spoken to through the MCP SDK (``tool_transport: stdio``), or the same tools
called in-process (``inprocess``: tests, speed); external MCP servers from the config
add their (namespaced) tools either way. A tool subset (``tools:``) keeps only the
named tools. Stdio servers start in the background when the toolbox is made and stay up
for every run of the process that uses them (`veracity.methods.mermaid.warm`); the
evidence server's tools are described from the same sources in this process, so a check
waits for that server only at its first tool call.

`execute` runs the shared ReAct loop (`deliberation.react`) with MERMAID's step format
(a tool call with its reason and input, or the answer) and re-renders the whole prompt
each step from the claim, the decomposition, the recalled evidence and the bounded
history. At T_max without an answer, one more call forces the verdict from the history
(ForceAnswer, Algorithm 1 line 26).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from veracity.core import context
from veracity.core.errors import MethodConfigError
from veracity.core.events import AgentStep, Note
from veracity.core.labels import LabelSpace
from veracity.core.untrusted import neutralize
from veracity.deliberation.react import ToolCallSteps, Trajectory, react_loop
from veracity.llm.base import LLM, LLMResponse, Message
from veracity.llm.structured import complete_structured
from veracity.methods.mermaid.config import MermaidConfig
from veracity.methods.mermaid.memory import CheckMemory
from veracity.methods.mermaid.warm import ToolListing, WarmToolset
from veracity.prompting import render_parts, with_data_notice
from veracity.retrieval.base import Source
from veracity.tools.base import Tool
from veracity.tools.evidence import evidence_tools
from veracity.tools.launch import ToolServerSpec
from veracity.tools.mcp_client import McpServerConfig

PACKAGE = "veracity.methods.mermaid"


class Toolbox:
    """The executor's tools (see the module docstring)."""

    def __init__(self, config: MermaidConfig, sources: Mapping[str, Source]):
        self.config = config
        self.local: list[Tool] = []
        servers: list[McpServerConfig] = []
        listings: dict[str, list[ToolListing]] = {}
        options = {
            "top_k": config.top_k,
            "max_chars": config.max_result_chars,
            "page_chars": config.page_chars,
            "fetch_pages": config.fetch_pages,
        }
        if sources and config.tool_transport == "inprocess":
            self.local = evidence_tools(sources, **options)
        elif sources:
            spec = ToolServerSpec.from_sources(sources, **options)
            server = tool_server_config(spec, config.tool_timeout_s)
            servers.append(server)
            # the server builds these same tools from the same sources: they are shown to
            # the model without waiting for it, which lists them once it is up
            listings[server.name] = [listing(t) for t in evidence_tools(sources, **options)]
        servers += config.mcp_servers
        self.toolset: WarmToolset | None = None
        if servers and config.tools != []:  # started now, in the background (`warm`)
            self.toolset = WarmToolset(servers, listings)
        if not sources and not config.mcp_servers:
            raise MethodConfigError(
                "mermaid needs tools: give sources with --source NAME=TYPE[:INDEX], e.g. "
                "--source web=duckduckgo --source wikipedia or --source web=local:INDEX (see "
                "`veracity sources`), or MCP servers in a config file (`method_config: "
                "{mcp_servers: [...]}`)"
            )

    async def tools(self) -> list[Tool]:
        """Every tool, or the configured subset.

        Raises:
            MethodConfigError: the subset names a tool no server offers.
            ToolServerError: a tool server cannot be started.
        """
        wanted = self.config.tools
        if wanted == []:  # the toolset switched off (proxy memory without tools)
            return []
        remote: list[Tool] = list(await self.toolset.tools()) if self.toolset else []
        available = self.local + remote
        if wanted is None:
            return available
        names = {t.name for t in available}
        unknown = [n for n in wanted if n not in names]
        if unknown:
            raise MethodConfigError(
                f"mermaid: no tools named {unknown}; available: {sorted(names)}"
            )
        return [t for t in available if t.name in wanted]

    async def aclose(self) -> None:
        """Let go of the tool servers (each stops when no other run of this process uses
        it)."""
        if self.toolset is not None:
            await self.toolset.aclose()

    def close(self) -> None:
        """`aclose` without waiting for the servers to stop."""
        if self.toolset is not None:
            self.toolset.close()


def tool_server_config(spec: ToolServerSpec, timeout_s: float) -> McpServerConfig:
    """The stdio launch of the evidence tool server through its own entry point
    (``python -m veracity.mcp.tool_server``), which skips the command line's imports."""
    config = spec.server_config(timeout_s=timeout_s)
    args = ["-m", "veracity.mcp.tool_server", *config.args[config.args.index("--spec") :]]
    return config.model_copy(update={"args": args})


def listing(tool: Tool) -> ToolListing:
    """What the evidence tool server lists for `tool` (`veracity.mcp.tool_server`)."""
    schema = tool.input_model.model_json_schema()
    return ToolListing(name=tool.name, description=tool.description, input_schema=schema)


def describe_tools(tools: list[Tool]) -> list[dict[str, str]]:
    """Name, argument list and description of each tool, for the prompt."""
    out = []
    for t in tools:
        props = t.input_model.model_json_schema().get("properties", {})
        args = ", ".join(f"{name}: {p.get('type', 'any')}" for name, p in props.items())
        out.append({"name": t.name, "arguments": args, "description": t.description})
    return out


def example_input(tools: list[Tool], topic: str) -> str:
    """An input object for the first tool about `topic`, for the prompt's example call.

    `topic` comes from the claim's analysis, so it is neutralised (role markers, special
    tokens and fence tags broken up) before it is shown unfenced inside the example."""
    if not tools:
        return "{}"
    props = tools[0].input_model.model_json_schema().get("properties", {})
    samples = {"string": neutralize(topic), "integer": 1, "number": 1.0, "boolean": True}
    return json.dumps({k: samples.get(p.get("type"), "...") for k, p in props.items()})


@dataclass
class ExecutorResult:
    trajectory: Trajectory
    label: str
    thought: str
    forced: bool
    response: LLMResponse | None


@dataclass
class PromptParts:
    """What every executor prompt shows besides the history."""

    kind: str
    input: str
    background: str | None
    own_analysis: bool
    memory: str | None
    focus: str  # what the example call searches for (the first assertion, or the claim)


# every tag executor.j2 fences, whichever parts a step's prompt holds
EXECUTOR_TAGS = ("analysis", "claim", "memory", "steps")


async def execute(
    llm: LLM,
    config: MermaidConfig,
    space: LabelSpace,
    parts: PromptParts,
    tools: list[Tool],
    memory: CheckMemory,
    *,
    tag: str = "executor",
) -> ExecutorResult:
    """Run the ReAct loop and, at T_max without an answer, force one."""
    shown = describe_tools(tools)
    fmt = ToolCallSteps(space.labels, max_chars=config.max_thought_chars)

    def prompt(trajectory: Trajectory, final: bool = False) -> list[Message]:
        history, how = trajectory.render_bounded(config.max_history_chars, config.history_overflow)
        if how["summarised"] or how["dropped"]:
            context.current().emit(Note(name=tag, detail={"message": "history shortened", **how}))
        messages, used = render_parts(
            PACKAGE,
            "executor.j2",
            kind=parts.kind,
            input=parts.input,
            background=parts.background,
            own_analysis=parts.own_analysis,
            memory=parts.memory,
            history=history,
            tools=shown,
            example_input=example_input(tools, parts.focus),
            labels=space.describe(),
            step=len(trajectory.steps) + 1,
            max_steps=config.max_steps,
            final=final,
        )
        # one notice for every step: a tag that first appears at step 2 (the steps so far)
        # would change the system message, and every step could no longer extend the last
        return with_data_notice(messages, {*EXECUTOR_TAGS, *used})

    trajectory = await react_loop(
        llm,
        [],
        tools,
        max_steps=config.max_steps,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        tag=tag,
        step_format=fmt,
        prompt=prompt,
        before_call=memory.replay,
        top_logprobs=config.top_logprobs,
    )
    if trajectory.answer is not None:
        thought = trajectory.steps[-1].thought
        return ExecutorResult(
            trajectory, trajectory.answer, thought, False, trajectory.last_response
        )
    return await _force_answer(llm, config, fmt, prompt(trajectory, final=True), trajectory, tag)


async def _force_answer(
    llm: LLM,
    config: MermaidConfig,
    fmt: ToolCallSteps,
    messages: list[Message],
    trajectory: Trajectory,
    tag: str,
) -> ExecutorResult:
    wants = config.top_logprobs > 0 and llm.capabilities.logprobs
    result = await complete_structured(
        llm,
        messages,
        fmt.model([], answer_only=True),
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        logprobs=wants,
        top_logprobs=config.top_logprobs if wants else None,
        tag=f"{tag}:final",
    )
    value = result.value
    context.current().emit(
        AgentStep(
            name=tag,
            step=len(trajectory.steps) + 1,
            thought=value.thought,
            action="answer",
            answer=value.answer,
            detail={"forced": True},
        )
    )
    return ExecutorResult(trajectory, value.answer, value.thought, True, result.response)
