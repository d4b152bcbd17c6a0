"""What a request may tune: the method options each config class declares safe.

A run's method options come from two kinds of place. The operator's — a run file,
``--set``, ``--config``, the Python API — may set anything a method's config takes,
commands, URLs, file paths and names of environment variables included. A request — a
REST ``POST /v1/checks`` body's ``method_config``, the MCP ``check`` tool's ``options``
— may set only the options its method's config class lists in ``request_options``:

    class RagConfig(ChoiceConfig):
        request_options = ("top_k", "reasoning", "temperature")

A declared option must be a boolean, an enumeration (a ``Literal`` or an ``Enum``) or a
number bounded on both sides (``Field(ge=..., le=...)``, or a temperature, which every
config bounds to [0, 2]), so a request can neither point the method at a command, a
host, a file or a variable nor make it run without end. `check_declaration` enforces
this when the class is made; `request_config` is the one validator every front end
calls on what a request carries, whatever the operator allowed besides.
"""

from __future__ import annotations

import enum
import math
import types
import typing
from collections.abc import Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from veracity.core import registry
from veracity.core.errors import MethodConfigError, RegistryError, RequestOptionError

__all__ = ["allowed_options", "check_declaration", "request_config"]

_SCALARS = (bool, int, float, str)


def allowed_options(config_class: type) -> tuple[str, ...]:
    """The options a request may set for `config_class` (its ``request_options`` and
    its bases'), sorted."""
    names: set[str] = set()
    for klass in config_class.__mro__:
        names.update(vars(klass).get("request_options", ()))
    return tuple(sorted(names))


def check_declaration(config_class: type) -> None:
    """Refuse a ``request_options`` entry (the class's or a base's) that is not a field,
    or whose type is not a boolean, an enumeration or a number bounded on both sides.

    Raises:
        TypeError: naming the class, the option and what is wrong with it.
    """
    fields = getattr(config_class, "model_fields", {})
    for name in allowed_options(config_class):  # a subclass may redefine a base's field
        field = fields.get(name)
        problem = "is not one of its fields" if field is None else _unsafe(name, field)
        if problem:
            raise TypeError(
                f"{config_class.__name__}.request_options: {name!r} {problem}; a request "
                "may only set booleans, enumerations and bounded numbers"
            )


def _unsafe(name: str, field: Any) -> str | None:
    """Why the field `name` cannot be set by a request, or None."""
    members = _members(field.annotation)
    for member in members:
        if member is type(None) or member is bool:
            continue
        if typing.get_origin(member) is typing.Literal:
            if all(isinstance(v, bool | int | str) for v in typing.get_args(member)):
                continue
            return "is a Literal of values other than text, numbers and booleans"
        if isinstance(member, type) and issubclass(member, enum.Enum):
            continue
        if member in (int, float):
            if _bounded(name, field.metadata):
                continue
            return "is a number without both bounds (give it Field(ge=..., le=...))"
        return f"has the type {getattr(member, '__name__', member)!s}"
    return None


def _members(annotation: Any) -> list[Any]:
    """The types a field accepts: the members of a union, ``Annotated`` unwrapped."""
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _bounded(name: str, metadata: list[Any]) -> bool:
    if name == "temperature" or name.endswith("_temperature"):
        return True  # MethodConfig bounds every temperature to [0, 2]
    low = any(hasattr(m, "ge") or hasattr(m, "gt") for m in metadata)
    high = any(hasattr(m, "le") or hasattr(m, "lt") for m in metadata)
    return low and high


def request_config(method: str, options: Any) -> dict[str, Any]:
    """The method options a request carries, checked against what `method` allows.

    Used by every front end for what a caller sends (REST ``method_config``, MCP
    ``options``); the operator's own settings never pass through here.

    Args:
        method: a registered method's name.
        options: the request's options: a mapping of option name to value, or None.

    Returns:
        The options with their values validated (e.g. ``"0.5"`` as 0.5).

    Raises:
        RequestOptionError: `options` is not a mapping, names an option the method does
            not let a request set, or gives one a value of the wrong type; the message
            lists the options a request may set.
        MethodConfigError: `method` is not registered.
    """
    if options is None:
        return {}
    try:
        config_class = registry.methods.get(method).config_class
    except (RegistryError, AttributeError) as exc:
        raise MethodConfigError(f"unknown method {method!r}: {exc}") from None
    allowed = allowed_options(config_class)
    offer = ", ".join(allowed) or "none"
    if not isinstance(options, Mapping):
        raise RequestOptionError(
            f"method options must be an object of option names and values, not "
            f"{type(options).__name__}; {method} takes: {offer}",
            allowed=allowed,
        )
    refused = sorted(str(k) for k in options if k not in allowed)
    if refused:
        raise RequestOptionError(_refusal(method, refused, offer), refused, allowed)
    return {k: _value(method, config_class, k, v, allowed) for k, v in options.items()}


def _refusal(method: str, refused: list[str], offer: str) -> str:
    hint = " (give the label space as the request's `labels`)" if "labels" in refused else ""
    return (
        f"a request cannot set {', '.join(map(repr, refused))} for {method}{hint}; it may "
        f"set: {offer}. Commands, URLs, file paths and environment variable names come "
        "only from the operator's run config"
    )


def _value(method: str, config_class: Any, name: str, value: Any, allowed: tuple[str, ...]) -> Any:
    """`value` validated as the option `name` of `config_class`."""
    field = config_class.model_fields[name]
    problem = None
    if value is not None and not isinstance(value, _SCALARS):
        problem = f"takes a single value, not {type(value).__name__}"
    else:
        kind = typing.Annotated[(field.annotation, *field.metadata)] if field.metadata else None
        try:
            value = TypeAdapter(kind or field.annotation).validate_python(value)
        except ValidationError as exc:
            problem = "; ".join(e["msg"].removeprefix("Value error, ") for e in exc.errors())
        else:
            problem = _number_problem(name, value)
    if problem:
        raise RequestOptionError(f"{method} option {name!r} {problem}", [name], allowed)
    return value


def _number_problem(name: str, value: Any) -> str | None:
    """The rules `MethodConfig` applies to every number, for one value alone."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not math.isfinite(value):
        return "must be a finite number"
    if (name == "temperature" or name.endswith("_temperature")) and not 0 <= value <= 2:
        return "must be between 0 and 2"
    return None
