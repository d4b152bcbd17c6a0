"""ToE (Wang et al., 2026): Tree of Evidence. A claim grows into an argument tree whose
nodes get evidence from a learned retrieval policy over several sources, structured
evidence reading, scoring and bottom-up aggregation.

See README.md in this folder for the paper-to-code map, defaults and deviations.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from veracity.methods.toe.config import ACTIONS, TOOL_GROUPS, ToEConfig
    from veracity.methods.toe.method import ToEMethod

__all__ = ["ACTIONS", "TOOL_GROUPS", "ToEConfig", "ToEMethod"]

_WHERE = {
    name: module
    for module, names in (
        ("config", ["ACTIONS", "TOOL_GROUPS", "ToEConfig"]),
        ("method", ["ToEMethod"]),
    )
    for name in names
}


def __getattr__(name: str) -> Any:
    """The names above, imported on first use (the package's ``commands`` module, a CLI
    front end loaded for ``--help``, needs none of them)."""
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)
