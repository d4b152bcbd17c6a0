"""veracity as an MCP server (``veracity mcp``): check claims from any MCP client.

Tools:

- ``check``: text (a claim, article body or post), its kind, the method and label space
  → the verdict as structured content (label, score, confidence, rationale, evidence
  with URLs and quotes, usage, and a warning when searches failed); long checks send
  progress notifications, one per step of the method (model calls, searches, agent turns);
- ``check_document``: a whole document's text (or a public URL) → its claims, each with
  its character spans, verdict and evidence, and the document's factuality
  (`veracity.mcp.documents`);
- ``search_evidence``: a query over the configured sources → documents;
- ``list_methods`` and ``list_sources``.

Every call goes through one `veracity.runtime.service.Veracity` over the server's run
config (``--config`` and flags), with the tool call's method, labels and options on top:
it checks the call, loads one model shared by every run and lists methods and sources.
Bad input is a tool error result, never a crash of the server.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS
from pydantic import BaseModel, Field

from veracity import __version__
from veracity.core import context
from veracity.core.config import RunConfig
from veracity.core.errors import (
    InputError,
    LLMAuthError,
    ModelNotAvailable,
    SourceError,
    StructuredOutputError,
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
from veracity.mcp.documents import (
    DOCUMENT_ARGUMENTS,
    EXTRACTION_HELP,
    DocumentResult,
    document_result,
)
from veracity.runtime.service import OPTION_REFUSED, CheckRefused, Veracity, error_text


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


class McpTools:
    """What the tools do, over one `Veracity` service (kept apart from the MCP wiring).

    The service checks every call (input, method, labels, options, input kind), shares
    the model and keeps one run per combination; this class maps its refusals to tool
    errors (and refused options to INVALID_PARAMS) and its answers to the tools' models.
    """

    def __init__(self, config: RunConfig, llm: Any | None = None):
        self.service = Veracity(config, llm=llm)
        self.config = config

    async def check(
        self,
        text: str,
        kind: str,
        method: str | None,
        labels: str | None,
        progress: Any,
        options: Any = None,
    ) -> CheckResult:
        plan = self._plan(text, kind=kind, method=method, labels=labels, options=options)
        verdict = await _with_progress(plan.check, progress)
        return CheckResult.from_verdict(verdict)

    async def check_document(
        self, text: str | None, url: str | None, choices: dict[str, Any], progress: Any
    ) -> DocumentResult:
        """Check a document's claims (text or a public URL) with one claim method: the same
        road as `check`, the input a document."""
        plan = self._plan(text, kind="document", url=url, **choices)
        try:
            verdict = await _with_progress(plan.check, progress)
        except InputError as exc:  # a page that cannot be fetched or holds no text
            raise ToolInputError(error_text(exc)) from exc
        except StructuredOutputError as exc:
            raise ToolInputError(f"claim extraction failed: {exc}") from exc
        # a long report: off the loop
        return await asyncio.to_thread(document_result, verdict.report)  # type: ignore[attr-defined]

    def _plan(self, item: Any, **choices: Any) -> Any:
        """The service's plan, its refusals as tool errors (refused options: INVALID_PARAMS)."""
        try:
            return self.service.plan(item, **choices)
        except CheckRefused as exc:
            if exc.title == OPTION_REFUSED:
                data = {"refused": exc.refused, "allowed": exc.allowed}
                raise MCPError(INVALID_PARAMS, str(exc), data) from None
            raise ToolInputError(str(exc)) from exc
        except (InputError, ModelNotAvailable, LLMAuthError) as exc:
            raise ToolInputError(error_text(exc)) from exc

    async def search(self, query: str, source: str | None, top_k: int) -> SearchResult:
        try:
            found = await self.service.search(query, source, top_k)
        except CheckRefused as exc:
            raise ToolInputError(str(exc)) from exc
        docs = [
            DocumentItem(id=d.id, title=d.title, url=d.url, text=d.text, source=d.source)
            for d in found
        ]
        return SearchResult(query=query, documents=docs)

    def methods(self) -> MethodList:
        rows = [
            MethodItem(
                name=m.name, labels=m.default_labels, inputs=", ".join(m.input_kinds),
                description=m.description, options=list(m.options),
            )
            for m in self.service.methods()
        ]  # fmt: skip
        return MethodList(methods=rows, default=self.config.method)

    def sources(self) -> SourceList:
        configured = self.service.configured_sources().items()
        types = [t.name for t in self.service.source_types()]
        return SourceList(configured=[SourceItem(name=n, kind=k) for n, k in configured],
                          types=types)  # fmt: skip


class ToolInputError(Exception):
    """A tool call the server refuses (bad input or config): a tool error result."""


async def _with_progress(work: Any, progress: Any) -> Any:
    """Await `work()`, sending a progress notification per step it traces."""
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
            return await work()
    except (ModelNotAvailable, LLMAuthError) as exc:
        raise ToolInputError(str(exc)) from exc
    finally:
        loop.call_soon_threadsafe(queue.put_nowait, "")  # the end, after every event
        await sender


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


def build_server(config: RunConfig, *, llm: Any | None = None) -> MCPServer:
    """The ``veracity`` MCP server (an `MCPServer`) over a base run config."""
    service = McpTools(config, llm)
    app = MCPServer(
        "veracity",
        version=__version__,
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

    @app.tool(
        description="Check a whole document or an LLM answer (its text, or a public URL): "
        "find its claims, check each with a claim method; returns each claim with its "
        "character spans, verdict and evidence, and the document's factuality."
    )
    async def check_document(
        ctx: Context,
        text: Annotated[str | None, Field(description="the document's text")] = None,
        url: Annotated[str | None, Field(description="or a public web page to fetch")] = None,
        method: Annotated[str | None, Field(description="a claim method (default rag)")] = None,
        labels: Annotated[str | None, Field(description="label space, e.g. true_false")] = None,
        options: CheckOptions = None,
        corrections: Annotated[
            bool, Field(description="suggest a correction for each refuted claim")
        ] = False,
        extraction: Annotated[
            dict[str, Any] | None,
            Field(description=EXTRACTION_HELP),
        ] = None,
    ) -> DocumentResult:
        refuse_unknown_arguments(ctx, DOCUMENT_ARGUMENTS)
        choices = {"method": method, "labels": labels, "options": options}
        extra = {"corrections": corrections, "extraction": extraction}
        try:
            return await service.check_document(
                text, url, {**choices, **extra}, ctx.report_progress
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
