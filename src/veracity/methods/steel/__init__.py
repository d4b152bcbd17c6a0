"""STEEL (Li et al., WWW 2024): multi-round retrieval before a verdict.

See README.md in this folder for the map from STEEL's description to the code, the
defaults and the deviations.
"""

from veracity.methods.steel.config import SteelConfig
from veracity.methods.steel.method import SteelMethod

__all__ = ["SteelConfig", "SteelMethod"]
