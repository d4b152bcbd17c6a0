"""The request and response bodies of the REST API (they make up the OpenAPI schema)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from veracity.core.types import Article, Claim, Post, Verdict
from veracity.documents.reading import MAX_DOCUMENT_CHARS
from veracity.documents.report import DocumentReport
from veracity.runtime.documents import ExtractionConfig

JobStatus = Literal["queued", "running", "done", "failed", "cancelled", "interrupted"]
FINISHED: frozenset[str] = frozenset({"done", "failed", "cancelled", "interrupted"})


class DocumentItem(BaseModel):
    """A document to check claim by claim: its text, or a web page the service fetches
    (through its guarded HTTP client: public addresses only, size and time limits)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["document"] = "document"
    text: str | None = Field(default=None, max_length=MAX_DOCUMENT_CHARS)
    url: str | None = Field(default=None, max_length=2048, description="an http(s) address")
    title: str | None = Field(default=None, max_length=500)

    @model_validator(mode="after")
    def _one_source(self) -> DocumentItem:
        if (self.text is None) == (self.url is None):
            raise ValueError("give the document's text or its url (one of them)")
        if self.text is not None and not self.text.strip():
            raise ValueError("the document's text is blank")
        if self.url is not None and not self.url.lower().startswith(("http://", "https://")):
            raise ValueError("the document's url must be an http:// or https:// address")
        return self


CheckItem = Annotated[Claim | Article | Post | DocumentItem, Field(discriminator="kind")]


class CheckRequest(BaseModel):
    """A check to run.

    Attributes:
        input: a claim, an article or a post with replies (``kind`` says which).
        method: a registered method (see ``GET /v1/methods``); default: the server's.
        labels: a label space (see ``GET /v1/methods``); default: the method's.
        sources: names of the server's configured sources (see ``GET /v1/sources``);
            default: all of them.
        model: one of the models the server allows; default: the configured model.
        method_config: method options, when the server allows them.
        corrections: a document check only: suggest a correction for each refuted claim,
            from the evidence its verdict cites (marked as a suggestion).
        extraction: a document check only: claim-extraction settings.
    """

    model_config = ConfigDict(extra="forbid")

    input: CheckItem
    method: str | None = Field(default=None, max_length=100)
    labels: str | None = Field(default=None, max_length=100)
    sources: list[str] | None = Field(default=None, max_length=50)
    model: str | None = Field(default=None, max_length=300)
    method_config: dict[str, Any] | None = None
    corrections: bool | None = None
    extraction: ExtractionConfig | None = None

    @model_validator(mode="after")
    def _document_options(self) -> CheckRequest:
        if self.input.kind != "document" and (self.corrections or self.extraction is not None):
            raise ValueError("corrections and extraction apply to document inputs only")
        return self


class JobSummary(BaseModel):
    """One job in the history."""

    id: str
    url: str
    status: JobStatus
    created_at: datetime
    finished_at: datetime | None = None
    method: str
    input_kind: str
    preview: str = Field(description="the start of the input text")
    label: str | None = None
    score: float | None = None
    rerun_of: str | None = None


class Job(JobSummary):
    """A job with its request and, once finished, its verdict."""

    started_at: datetime | None = None
    events_url: str
    request: CheckRequest
    verdict: Verdict | None = None
    document: DocumentReport | None = Field(
        default=None,
        description="a document check's result: each claim with its spans, verdict, score, "
        "rationale, evidence and suggested correction; the counts and factuality",
    )
    error: str | None = Field(default=None, description="why the job produced no verdict")
    warning: str | None = Field(
        default=None,
        description="searches of the check that failed: how many, and the first error (the "
        "verdict's metadata.search_failures holds the figures)",
    )
    queue_position: int | None = None


class Accepted(BaseModel):
    """The answer to a submission: where to follow the job."""

    id: str
    url: str
    events_url: str
    status: JobStatus


class JobList(BaseModel):
    jobs: list[JobSummary]
    next_before: str | None = Field(
        default=None, description="pass as `before` for the next (older) page"
    )


class MethodInfo(BaseModel):
    name: str
    description: str = ""
    default_labels: str
    label_spaces: list[str] = Field(description="label spaces the method accepts")
    input_kinds: list[str]
    options: list[str] = Field(
        default_factory=list,
        description="method options a request may set in `method_config` (booleans, "
        "enumerations, bounded numbers), where the server takes method options",
    )


class LabelSpaceInfo(BaseModel):
    name: str
    labels: list[str]


class MethodsInfo(BaseModel):
    default_method: str
    methods: list[MethodInfo]
    label_spaces: list[LabelSpaceInfo]
    models: list[str] = Field(description="models a request may name; the first is the default")
    method_config: bool = Field(
        default=False, description="whether this server takes `method_config` in a request"
    )


class SourceInfo(BaseModel):
    name: str
    type: str


class SourcesInfo(BaseModel):
    sources: list[SourceInfo]


class Health(BaseModel):
    status: Literal["ok"]


class Ready(BaseModel):
    """Readiness. On a server with a token, a request without it gets `ready` and a
    `detail` that gives no reason, nothing else."""

    ready: bool
    model: str | None = None
    detail: str = ""
    queued: int | None = None
    running: int | None = None
    workers: int | None = None
    queue_size: int | None = None
    max_queued: int | None = Field(
        default=None, description="the most checks that have waited at once since start"
    )
    storage: str | None = Field(
        default=None,
        description="the job database: ok, or full, read-only, corrupt or io (not ready)",
    )


class Problem(BaseModel):
    """An error (RFC 9457 problem details)."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str = ""
    errors: list[dict[str, Any]] | None = None


class StreamEvent(BaseModel):
    """The ``data`` of one server-sent event.

    ``event: trace`` carries a trace event (`kind`, `name`, `t`, `data`) and the same
    event in words (`text`, e.g. "Searched wikipedia for “…”: 4 results");
    ``event: status`` a change of the job's status (in `data.status`);
    the stream ends with ``event: end``. The SSE ``id`` is `seq`.
    """

    seq: int
    type: Literal["trace", "status"]
    kind: str | None = None
    name: str | None = None
    t: float | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    text: str | None = Field(
        default=None, description="a trace event in words (plain text, to escape when shown)"
    )
