"""D2D (Han, Zheng and Tang, 2025): Debate-to-Detect, a staged debate with fixed teams.

See README.md in this folder for the map from D2D's description to the code, the
defaults and the deviations.
"""

from veracity.methods.d2d.config import D2DConfig
from veracity.methods.d2d.method import D2DMethod

__all__ = ["D2DConfig", "D2DMethod"]
