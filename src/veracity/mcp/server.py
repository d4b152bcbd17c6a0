"""veracity as an MCP server (``veracity mcp``): check claims from any MCP client.

Tools:

- ``check``: text (a claim, article body or post), its kind, the method and label space
  → the verdict as structured content (label, score, confidence, rationale, evidence
  with URLs and quotes, usage, and a warning when searches failed); long checks send
  progress notifications, one per step of the method (model calls, searches, agent turns);
- ``search_evidence``: a query over the configured sources → documents;
- ``list_methods`` and ``list_sources``.

Runs are built by `veracity.runtime` from the server's run config (``--config`` and
flags) with the tool call's method and labels on top; one model is loaded and shared by
every run. Bad input is a tool error result, never a crash of the server.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel, Field, ValidationError

from veracity.api import as_input
from veracity.core import context
from veracity.core.config import RunConfig
from veracity.core.errors import (
    ConfigError,
    InputError,
    LLMAuthError,
    ModelNotAvailable,
    RequestOptionError,
)
from veracity.core.events import (
    AgentStep,
    AgentTurn,
    MemoryAccess,
    ModelCall,
    SearchDone,
    Stage,
    ToolCall,
)
from veracity.core.types import SearchFailures, TraceEvent, Usage, Verdict
from veracity.llm.client import ManagedLLM
from veracity.methods.base import method_info
from veracity.methods.options import allowed_options, request_config
from veracity.retrieval.base import Query, SourceError
from veracity.runtime import Run, build_llm, build_run, build_sources, resolve_config


class EvidenceItem(BaseModel):
    title: str = ""
    url: str | None = None
    quote: str | None = None
    text: str = ""
    source: str = ""
    stance: str = "unknown"


class CheckResult(BaseModel):
    """A verdict, as the ``check`` tool returns it."""

    label: str | None
    label_space: str
    method: str
    score: float | None = None
    confidence: float | None = None
    probabilities: dict[str, float] | None = None
    rationale: str = ""
    abstained: bool = False
    abstain_reason: str | None = None
    error: str | None = None
    # searches that failed: one line (count and first error), and the figures
    warning: str | None = None
    search_failures: SearchFailures | None = None
    evidence: list[EvidenceItem] = Field(default_factory=list)
    usage: Usage

    @classmethod
    def from_verdict(cls, verdict: Verdict, max_text: int = 400) -> CheckResult:
        items = [
            EvidenceItem(
                title=e.document.title,
                url=e.document.url,
                quote=e.quote,
                text=e.document.text[:max_text],
                source=e.document.source,
                stance=e.stance.value,
            )
            for e in verdict.evidence
        ]
        computed = {"evidence", "usage", "warning", "search_failures"}
        fields = verdict.model_dump(include=set(cls.model_fields) - computed)
        return cls(
            **fields,
            warning=verdict.search_warning,
            search_failures=verdict.search_failures,
            evidence=items,
            usage=verdict.usage,
        )


class DocumentItem(BaseModel):
    id: str
    title: str = ""
    url: str | None = None
    text: str
    source: str


class SearchResult(BaseModel):
    query: str
    documents: list[DocumentItem]


class MethodItem(BaseModel):
    name: str
    labels: str = ""
    inputs: str = ""
    description: str = ""
    options: list[str] = Field(
        default_factory=list, description="what the check tool's `options` may set"
    )


class MethodList(BaseModel):
    methods: list[MethodItem]
    default: str


class SourceItem(BaseModel):
    name: str
    kind: str


class SourceList(BaseModel):
    configured: list[SourceItem]
    types: list[str]


def _progress_text(event: TraceEvent) -> str | None:
    """The progress line of an event a client is shown (by its class); None for the rest."""
    match event:
        case ModelCall() | SearchDone() | ToolCall() | AgentTurn() | AgentStep() | MemoryAccess():
            return f"{event.kind}: {event.name}"
        case Stage():
            return f"{event.name} {event.step or ''}".strip()
    return None


class VeracityService:
    """What the tools do, over one base run config (kept apart from the MCP wiring)."""

    def __init__(self, config: RunConfig, llm: Any | None = None):
        self.config = config
        self._llm: ManagedLLM | Any | None = llm
        self._runs: dict[tuple[Any, ...], Run] = {}
        self._sources: dict[str, Any] | None = None
        self._lock = asyncio.Lock()

    def llm(self) -> Any:
        if self._llm is None:
            self._llm = build_llm(self.config)
        return self._llm

    def run(
        self, method: str | None, labels: str | None, options: dict[str, Any] | None = None
    ) -> Run:
        """The run for a method, label space and request options (built once per
        combination, model shared). `options` must have passed `request_config`."""
        key = (method, labels, tuple(sorted((options or {}).items())))
        if key not in self._runs:
            flags = {"method": method, "labels": labels, "method_config": options or None}
            cfg = resolve_config(base=self.config, flags=flags)
            self._runs[key] = build_run(cfg, llm=self.llm())
        return self._runs[key]

    def options(self, method: str | None, options: Any) -> dict[str, Any]:
        """A call's method options, checked by the one validator of request options.

        Raises:
            MCPError: INVALID_PARAMS (-32602), naming what a call may set.
            ToolInputError: the method is unknown.
        """
        try:
            return request_config(method or self.config.method, options)
        except RequestOptionError as exc:
            data = {"refused": exc.refused, "allowed": exc.allowed}
            raise MCPError(INVALID_PARAMS, str(exc), data) from None
        except ConfigError as exc:
            raise ToolInputError(str(exc)) from exc

    async def check(
        self,
        text: str,
        kind: str,
        method: str | None,
        labels: str | None,
        progress: Any,
        options: Any = None,
    ) -> CheckResult:
        try:
            item = as_input(text, kind)  # type: ignore[arg-type]
        except (InputError, ValidationError, ValueError, TypeError) as exc:
            raise ToolInputError(_message(exc)) from exc
        chosen = self.options(method, options)
        try:
            run = self.run(method, labels, chosen)
        except ConfigError as exc:
            raise ToolInputError(str(exc)) from exc
        if item.kind not in run.method.input_kinds:
            kinds = ", ".join(run.method.input_kinds)
            raise ToolInputError(f"{run.method.name} checks {kinds} inputs, not a {item.kind}")
        queue: asyncio.Queue[str] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        def observe(event: TraceEvent) -> None:
            # events may come from worker threads (e.g. the evidence memory's)
            line = _progress_text(event)
            if line:
                loop.call_soon_threadsafe(queue.put_nowait, line)

        sender = asyncio.create_task(_send_progress(queue, progress))
        try:
            with context.observe(observe):
                verdict = await run.check(item)
        except (ModelNotAvailable, LLMAuthError) as exc:
            raise ToolInputError(str(exc)) from exc
        finally:
            loop.call_soon_threadsafe(queue.put_nowait, "")  # the end, after every event
            await sender
        return CheckResult.from_verdict(verdict)

    async def search(self, query: str, source: str | None, top_k: int) -> SearchResult:
        async with self._lock:
            if self._sources is None:
                self._sources = build_sources(self.config)
        if not self._sources:
            raise ToolInputError("no sources are configured; start the server with --source")
        names = [source] if source else list(self._sources)
        unknown = [n for n in names if n not in self._sources]
        if unknown:
            raise ToolInputError(
                f"unknown source {unknown[0]!r}; configured: {list(self._sources)}"
            )
        try:
            q = Query(text=query, top_k=top_k)
        except ValidationError as exc:
            raise ToolInputError(_message(exc)) from exc
        found = await asyncio.gather(*(self._sources[n].search(q) for n in names))
        docs = [
            DocumentItem(id=d.id, title=d.title, url=d.url, text=d.text, source=d.source)
            for batch in found
            for d in batch
        ]
        return SearchResult(query=query, documents=docs)

    def methods(self) -> MethodList:
        from veracity.core import registry

        rows = [
            MethodItem(
                **r, options=list(allowed_options(registry.methods.get(r["name"]).config_class))
            )
            for r in method_info()
            if "error" not in r
        ]
        return MethodList(methods=rows, default=self.config.method)

    def sources(self) -> SourceList:
        from veracity.core import registry

        configured = [
            SourceItem(name=n, kind=str((o or {}).get("type", n)))
            for n, o in self.config.sources.items()
        ]
        return SourceList(configured=configured, types=list(registry.sources.names()))


class ToolInputError(Exception):
    """A tool call the server refuses (bad input or config): a tool error result."""


async def _send_progress(queue: asyncio.Queue[str], progress: Any) -> None:
    done = 0
    while True:
        line = await queue.get()
        if not line:
            return
        done += 1
        try:
            await progress(done, None, line)
        except Exception:
            return


CHECK_ARGUMENTS = ("text", "kind", "method", "labels", "options")
CheckOptions = Annotated[
    dict[str, Any] | None,
    Field(
        description='method options, e.g. {"temperature": 0.2}: only those list_methods '
        "names for the method (booleans, choices, bounded numbers)"
    ),
]


def refuse_unknown_arguments(ctx: Context, known: tuple[str, ...]) -> None:
    """A call naming an argument the tool does not take (the SDK would drop it silently,
    e.g. a ``method_config`` that was meant to change the check) is an INVALID_PARAMS
    error naming the arguments the tool takes."""
    params = getattr(ctx.request_context, "params", None) or {}
    arguments = params.get("arguments") if isinstance(params, dict) else None
    unknown = sorted(str(k) for k in (arguments or {}) if k not in known)
    if unknown:
        raise MCPError(
            INVALID_PARAMS,
            f"unknown argument(s) {', '.join(map(repr, unknown))}; this tool takes: "
            f"{', '.join(known)} (method options go in `options`)",
        )


def _message(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
    return str(exc)


def build_server(config: RunConfig, *, llm: Any | None = None) -> MCPServer:
    """The ``veracity`` MCP server (an `MCPServer`) over a base run config."""
    service = VeracityService(config, llm)
    app = MCPServer(
        "veracity",
        instructions="Check claims, news articles and social-media posts against evidence.",
        log_level="WARNING",
    )

    @app.tool(description="Check a claim, news article or social-media post; returns the verdict.")
    async def check(
        text: Annotated[str, Field(description="the text to check", min_length=1)],
        ctx: Context,
        kind: Annotated[Literal["claim", "article", "post"], Field(description="input kind")] = (
            "claim"
        ),
        method: Annotated[str | None, Field(description="see list_methods")] = None,
        labels: Annotated[str | None, Field(description="label space, e.g. true_false")] = None,
        options: CheckOptions = None,
    ) -> CheckResult:
        refuse_unknown_arguments(ctx, CHECK_ARGUMENTS)
        try:
            return await service.check(
                text, kind, method, labels, ctx.report_progress, options=options
            )
        except ToolInputError as exc:
            raise ToolError(str(exc)) from exc

    @app.tool(description="Search the configured evidence sources.")
    async def search_evidence(
        query: Annotated[str, Field(min_length=1, max_length=500, description="the query")],
        source: Annotated[str | None, Field(description="one source (default: all)")] = None,
        top_k: Annotated[int, Field(ge=1, le=50, description="results per source")] = 5,
    ) -> SearchResult:
        try:
            return await service.search(query, source, top_k)
        except ToolInputError as exc:
            raise ToolError(str(exc)) from exc
        except SourceError as exc:
            raise ToolError(f"search failed: {exc}") from exc

    @app.tool(description="The fact-checking methods this server can run.")
    def list_methods() -> MethodList:
        return service.methods()

    @app.tool(description="The evidence sources configured, and every source type known.")
    def list_sources() -> SourceList:
        return service.sources()

    return app
