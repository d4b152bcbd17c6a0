"""RADAR (Tang et al., 2026): role-anchored multi-agent debate for half-truth detection.

See README.md in this folder for the paper-to-code map, defaults and deviations.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from veracity.methods.radar.config import CorpusConfig, RadarConfig, RadarSingleConfig
    from veracity.methods.radar.method import RadarMethod, RadarSingleMethod, tokens_by_round

__all__ = [
    "CorpusConfig",
    "RadarConfig",
    "RadarMethod",
    "RadarSingleConfig",
    "RadarSingleMethod",
    "tokens_by_round",
]

_WHERE = {
    name: module
    for module, names in (
        ("config", ["CorpusConfig", "RadarConfig", "RadarSingleConfig"]),
        ("method", ["RadarMethod", "RadarSingleMethod", "tokens_by_round"]),
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
