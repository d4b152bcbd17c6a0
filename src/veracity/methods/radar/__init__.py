"""RADAR (Tang et al., 2026): role-anchored multi-agent debate for half-truth detection.

See README.md in this folder for the paper-to-code map, defaults and deviations.
"""

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
