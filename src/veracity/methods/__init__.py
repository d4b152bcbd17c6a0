"""Fact-checking methods: the protocol, the baselines and one package per paper."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from veracity.methods.base import BaseMethod, Method, MethodConfig, load_method

__all__ = ["BaseMethod", "Method", "MethodConfig", "load_method"]


def __getattr__(name: str) -> Any:
    """The names above, imported on first use: a method's ``commands`` module (a CLI
    front end, loaded for ``--help``) imports its package without the method's code."""
    if name in __all__:
        from veracity.methods import base

        return getattr(base, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
