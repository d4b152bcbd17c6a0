"""Turning an API request into a run: the REST adapter of `veracity.runtime.service`.

The operator's run config says which model, sources and default method the server
offers; a request picks among them. The service (`Veracity`) checks the request, shares
one loaded model per allowed model name and builds the run; this module maps its
refusals to HTTP problems and its listing to the API's schemas.
"""

from __future__ import annotations

from typing import Any

from veracity.core.config import RunConfig
from veracity.core.errors import InputError
from veracity.documents import from_text
from veracity.runtime.listing import label_spaces
from veracity.runtime.service import LLM, CheckRefused, ManagedLLM, Plan, Veracity
from veracity.server.schemas import (
    CheckRequest,
    LabelSpaceInfo,
    MethodInfo,
    MethodsInfo,
    SourceInfo,
    SourcesInfo,
)
from veracity.server.settings import ServerSettings

NO_OPTIONS = (
    "this server does not take method_config (the operator allows the options a method "
    "declares safe with VERACITY_SERVER_ALLOW_METHOD_CONFIG=true)"
)


class RequestProblem(Exception):
    """A request the server cannot run, with the HTTP status and what to change."""

    def __init__(self, status: int, title: str, detail: str = ""):
        super().__init__(detail or title)
        self.status = status
        self.title = title
        self.detail = detail


class RunBuilder:
    """Builds runs for requests from the operator's run config.

    Args:
        config: the operator's run config (model, sources, default method and labels).
        settings: the server settings (which models and options callers may choose).
        llm: a model to use instead of building the configured one (tests, embedding).
    """

    def __init__(self, config: RunConfig, settings: ServerSettings, llm: LLM | None = None):
        self.config = config
        self.settings = settings
        self.service = Veracity(
            config,
            llm=llm,
            models=settings.allowed_models,
            options_refusal=None if settings.allow_method_config else NO_OPTIONS,
        )
        self.default_model = self.service.default_model
        self.ready = False
        self.ready_detail = "loading the model"

    def models(self) -> list[str]:
        return self.service.models()

    def llm(self, name: str | None = None) -> ManagedLLM:
        """The shared model `name` (default: the configured one), built once."""
        return self.service.llm(name)

    async def warm(self) -> None:
        """Load the default model (in a thread, when its backend loads weights)."""
        try:
            await self.service.warm()
        except Exception as exc:  # reported by /readyz; checks will fail with the same
            self.ready_detail = f"{type(exc).__name__}: {exc}"
            return
        self.ready, self.ready_detail = True, ""

    def close(self) -> None:
        self.service.close()

    def methods_info(self) -> MethodsInfo:
        rows = [
            MethodInfo(
                name=m.name, description=m.description, default_labels=m.default_labels,
                label_spaces=list(m.label_spaces), input_kinds=list(m.input_kinds),
                options=list(m.options),
            )
            for m in self.service.methods()
        ]  # fmt: skip
        spaces = [LabelSpaceInfo(name=s.name, labels=list(s.labels)) for s in label_spaces()]
        return MethodsInfo(
            default_method=self.config.method, methods=rows, label_spaces=spaces,
            models=self.models(), method_config=self.settings.allow_method_config,
        )  # fmt: skip

    def sources_info(self) -> SourcesInfo:
        configured = self.service.configured_sources().items()
        return SourcesInfo(sources=[SourceInfo(name=n, type=t) for n, t in configured])

    def build(self, request: CheckRequest) -> Plan:
        """The plan of `request`: its run (built or kept) and its input; a document's URL is
        not fetched yet (`Plan.read` fetches it when the job starts).

        Raises:
            RequestProblem: 422 for whatever the service refuses (an unknown method, label
                space, source or model, disallowed options, an input kind the method does
                not take, a combination that does not build, bad extraction settings).
        """
        item: Any = request.input
        choices: dict[str, Any] = {
            "method": request.method, "labels": request.labels, "options": request.method_config,
            "sources": request.sources, "model": request.model,
        }  # fmt: skip
        if item.kind == "document":
            cap = self.settings.max_document_sentences
            if request.extraction is not None and request.extraction.max_sentences > cap:
                raise RequestProblem(
                    422, "invalid extraction options",
                    f"this server reads at most {cap} sentences of a document (extraction."
                    "max_sentences; the operator sets VERACITY_SERVER_MAX_DOCUMENT_SENTENCES)",
                )  # fmt: skip
            choices |= {"kind": "document", "url": item.url, "extraction": request.extraction,
                        "corrections": bool(request.corrections)}  # fmt: skip
        try:
            if item.kind == "document":
                item = from_text(item.text, title=item.title) if item.text is not None else None
            return self.service.plan(item, **choices)
        except CheckRefused as exc:
            raise RequestProblem(422, exc.title, exc.detail) from exc
        except InputError as exc:
            raise RequestProblem(422, "invalid input", str(exc)) from exc
