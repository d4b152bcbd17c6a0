"""SAFE (Wei et al., 2024): atomic facts, each made self-contained and checked by search.

See README.md in this folder for the map from SAFE's description to the code, the
defaults and the deviations.
"""

from veracity.methods.safe.config import SafeConfig
from veracity.methods.safe.method import SafeMethod

__all__ = ["SafeConfig", "SafeMethod"]
