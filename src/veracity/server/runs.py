"""Turning an API request into a run, through the composition root and nothing else.

The operator's run config says which model, sources and default method the server
offers; a request picks among them. Every check is built with `runtime.build_run`,
sharing one loaded model per allowed model name.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from veracity.core import registry
from veracity.core.config import RunConfig
from veracity.core.errors import ConfigError, MethodConfigError
from veracity.core.labels import LABEL_SPACES, get_label_space
from veracity.core.types import CheckInput
from veracity.llm.base import LLM
from veracity.llm.client import ManagedLLM, ensure_managed
from veracity.methods.options import allowed_options, request_config
from veracity.runtime import Run, build_llm, build_run
from veracity.server.schemas import (
    CheckRequest,
    LabelSpaceInfo,
    MethodInfo,
    MethodsInfo,
    SourceInfo,
    SourcesInfo,
)
from veracity.server.settings import ServerSettings


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
        self._llms: dict[str, ManagedLLM] = {}
        self._lock = threading.Lock()
        self.default_model = config.llm.model if llm is None else _llm_name(llm)
        if llm is not None:
            self._llms[self.default_model] = ensure_managed(llm)
        self.ready = False
        self.ready_detail = "loading the model"

    # ---------------------------------------------------------------- model

    def models(self) -> list[str]:
        return [self.default_model, *(m for m in self.settings.allowed_models if m)]

    def llm(self, name: str | None = None) -> ManagedLLM:
        """The shared model `name` (default: the configured one), built once."""
        name = name or self.default_model
        with self._lock:
            if name not in self._llms:
                cfg = self.config.with_overrides({"llm": {"model": name}})
                self._llms[name] = build_llm(cfg)
            return self._llms[name]

    async def warm(self) -> None:
        """Load the default model (in a thread, when its backend loads weights)."""
        try:
            managed = await asyncio.to_thread(self.llm)
            load = getattr(managed.inner, "load", None)
            if callable(load):
                await asyncio.to_thread(load)
        except Exception as exc:  # reported by /readyz; checks will fail with the same
            self.ready_detail = f"{type(exc).__name__}: {exc}"
            return
        self.ready, self.ready_detail = True, ""

    # ---------------------------------------------------------------- offer

    def methods_info(self) -> MethodsInfo:
        rows = []
        for name in registry.methods.names():
            try:
                cls = registry.methods.get(name)
            except Exception:  # a broken plugin is left out of the offer, not fatal
                continue
            allowed = getattr(cls, "allowed_labels", None)
            rows.append(
                MethodInfo(
                    name=name,
                    description=getattr(cls, "description", ""),
                    default_labels=getattr(cls, "default_labels", ""),
                    label_spaces=list(allowed) if allowed else sorted(LABEL_SPACES),
                    input_kinds=list(getattr(cls, "input_kinds", ())),
                    options=list(allowed_options(cls.config_class))
                    if hasattr(cls, "config_class")
                    else [],
                )
            )
        spaces = [LabelSpaceInfo(name=s.name, labels=list(s.labels)) for s in _spaces()]
        return MethodsInfo(
            default_method=self.config.method, methods=rows, label_spaces=spaces,
            models=self.models(), method_config=self.settings.allow_method_config,
        )  # fmt: skip

    def sources_info(self) -> SourcesInfo:
        return SourcesInfo(
            sources=[
                SourceInfo(name=name, type=str(opts.get("type", name)))
                for name, opts in self.config.sources.items()
            ]
        )

    # ---------------------------------------------------------------- build

    def check_offer(self, request: CheckRequest) -> None:
        """Refuse what the server does not offer, naming what it does.

        Raises:
            RequestProblem: 422 for an unknown method, label space, source or model, a
                method that does not take this kind of input, or disallowed options.
        """
        method = request.method or self.config.method
        if method not in registry.methods:
            known = ", ".join(registry.methods.names())
            raise RequestProblem(422, "unknown method", f"{method!r} is not one of: {known}")
        if request.labels is not None:
            try:
                get_label_space(request.labels)
            except ValueError as exc:
                raise RequestProblem(422, "unknown label space", str(exc)) from exc
        unknown = sorted(set(request.sources or ()) - set(self.config.sources))
        if unknown:
            offered = ", ".join(self.config.sources) or "none"
            raise RequestProblem(
                422, "unknown source", f"{unknown} not configured; this server offers: {offered}"
            )
        if request.model is not None and request.model not in self.models():
            raise RequestProblem(
                422, "model not allowed", f"choose one of: {', '.join(self.models())}"
            )
        self._check_options(method, request.method_config)
        try:
            kinds = getattr(registry.methods.get(method), "input_kinds", ())
        except Exception as exc:
            raise RequestProblem(422, "method unavailable", str(exc)) from exc
        if request.input.kind not in kinds:
            raise RequestProblem(
                422,
                "input kind not accepted",
                f"{method} checks {', '.join(kinds)} inputs, not a {request.input.kind}",
            )

    def _check_options(self, method: str, options: Any) -> None:
        """Refuse method options unless the operator allows them, and then any option
        the method does not let a request set (`veracity.methods.options`)."""
        if not options:
            return
        if not self.settings.allow_method_config:
            raise RequestProblem(
                422,
                "method options not allowed",
                "this server does not take method_config (the operator allows the options "
                "a method declares safe with VERACITY_SERVER_ALLOW_METHOD_CONFIG=true)",
            )
        try:
            request_config(method, options)
        except MethodConfigError as exc:
            raise RequestProblem(422, "method option not allowed", str(exc)) from exc

    def build(self, request: CheckRequest) -> tuple[Run, CheckInput]:
        """The run for `request` and its input.

        Raises:
            RequestProblem: the request asks for something the server does not offer, or
                its combination does not build (e.g. a label space the method refuses).
        """
        self.check_offer(request)
        names = self.config.sources if request.sources is None else request.sources
        method = request.method or self.config.method
        flags: dict[str, Any] = {
            "method": request.method,
            "labels": request.labels,
            "method_config": request_config(method, request.method_config) or None,
        }
        try:
            cfg = self.config.with_overrides(flags)
            cfg = cfg.model_copy(update={"sources": {n: self.config.sources[n] for n in names}})
            run = build_run(cfg, llm=self.llm(request.model))
        except ConfigError as exc:
            raise RequestProblem(422, "cannot build this check", str(exc)) from exc
        return run, request.input


def _spaces():
    return sorted(LABEL_SPACES.values(), key=lambda s: s.name)


def _llm_name(llm: LLM) -> str:
    return str(getattr(llm, "model", None) or llm.backend_id)
