"""MERMAID (Cao et al.): memory-enhanced multi-agent veracity assessment.

See README.md in this folder for the paper-to-code map, defaults and deviations.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from veracity.methods.mermaid.config import MemoryOptions, MermaidConfig
    from veracity.methods.mermaid.decomposer import Decomposition, Triplet
    from veracity.methods.mermaid.method import MermaidMethod, MermaidSingleMethod

__all__ = [
    "Decomposition",
    "MemoryOptions",
    "MermaidConfig",
    "MermaidMethod",
    "MermaidSingleMethod",
    "Triplet",
]

_WHERE = {
    name: module
    for module, names in (
        ("config", ["MemoryOptions", "MermaidConfig"]),
        ("decomposer", ["Decomposition", "Triplet"]),
        ("method", ["MermaidMethod", "MermaidSingleMethod"]),
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
