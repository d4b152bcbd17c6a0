"""The rules a check passes before it runs, and how a refusal reads.

`veracity.runtime.service.Veracity.plan` applies them, once per check, for every front
end; `CheckRefused` is what it raises (a `ConfigError`, so a front end that already ends
on configuration errors needs nothing new), with a ``title`` from the constants below
that the REST server answers as the problem's title.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from veracity.core import registry
from veracity.core.errors import ConfigError, MethodConfigError, RequestOptionError, problem_text
from veracity.core.labels import get_label_space

UNKNOWN_METHOD = "unknown method"
UNKNOWN_LABELS = "unknown label space"
UNKNOWN_SOURCE = "unknown source"
MODEL_NOT_ALLOWED = "model not allowed"
OPTIONS_NOT_TAKEN = "method options not allowed"
OPTION_REFUSED = "method option not allowed"
KIND_REFUSED = "input kind not accepted"
NOT_BUILT = "cannot build this check"


class CheckRefused(ConfigError):
    """A check the service will not run, and why.

    Attributes:
        title: what kind of refusal (one of this module's constants, e.g. ``unknown
            method``).
        detail: what to change (also the message).
        refused, allowed: for refused request options, the options refused and those a
            request may set.
    """

    def __init__(
        self, title: str, detail: str, *, refused: Sequence[str] = (), allowed: Sequence[str] = ()
    ):
        super().__init__(detail)
        self.title = title
        self.detail = detail
        self.refused = list(refused)
        self.allowed = list(allowed)


def error_text(exc: BaseException) -> str:
    """How every front end tells an error: `veracity.core.errors.problem_text`."""
    return problem_text(exc)


def method_class(name: str) -> Any:
    """The registered method class `name`.

    Raises:
        CheckRefused: no such method, or its plugin does not load.
    """
    if name not in registry.methods:
        known = ", ".join(registry.methods.names())
        raise CheckRefused(UNKNOWN_METHOD, f"unknown method {name!r}; registered: {known}")
    try:
        return registry.methods.get(name)
    except Exception as exc:  # a plugin that fails to import
        raise CheckRefused(NOT_BUILT, f"method {name!r} does not load: {exc}") from exc


def require_kind(method: Any, kind: str) -> None:
    """Refuse an input kind `method` (a method class or object) does not check.

    Raises:
        CheckRefused: ``input kind not accepted``, naming the kinds it takes.
    """
    kinds = tuple(getattr(method, "input_kinds", ()))
    if kind not in kinds:
        name = getattr(method, "name", method)
        raise CheckRefused(KIND_REFUSED, f"{name} checks {', '.join(kinds)} inputs, not a {kind}")


def catalogue_size(model: str) -> int | None:
    """The download size in bytes of embedded catalogue model `model` (None: not one)."""
    from veracity.llm import models as catalog

    spec = catalog.CATALOG.get(model)
    return spec.size if spec is not None else None


def require_labels(labels: str | None) -> None:
    """Refuse a label space that does not exist (None: the config's, checked when read).

    Raises:
        CheckRefused: ``unknown label space``, naming the spaces there are.
    """
    if labels is None:
        return
    try:
        get_label_space(labels)
    except ValueError as exc:
        raise CheckRefused(UNKNOWN_LABELS, str(exc)) from exc


def request_options(method: str, options: Any, refusal: str | None = None) -> dict[str, Any]:
    """A request's method options: refused with `refusal` where the operator takes none,
    else checked by the one validator of request options
    (`veracity.methods.options.request_config`).

    Raises:
        CheckRefused: ``method options not allowed`` or ``method option not allowed`` (with
            the options refused and those a request may set).
    """
    if not options:
        return {}
    if refusal is not None:
        raise CheckRefused(OPTIONS_NOT_TAKEN, refusal)
    from veracity.methods.options import request_config

    try:
        return request_config(method, options)
    except RequestOptionError as exc:
        raise CheckRefused(
            OPTION_REFUSED, str(exc), refused=exc.refused, allowed=exc.allowed
        ) from exc
    except MethodConfigError as exc:
        raise CheckRefused(UNKNOWN_METHOD, str(exc)) from exc


__all__ = [
    "KIND_REFUSED",
    "MODEL_NOT_ALLOWED",
    "NOT_BUILT",
    "OPTIONS_NOT_TAKEN",
    "OPTION_REFUSED",
    "UNKNOWN_LABELS",
    "UNKNOWN_METHOD",
    "UNKNOWN_SOURCE",
    "CheckRefused",
    "catalogue_size",
    "error_text",
    "method_class",
    "request_options",
    "require_kind",
    "require_labels",
]
