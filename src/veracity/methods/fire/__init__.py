"""FIRE (Xie et al., NAACL Findings 2025): iterative retrieval and verification.

See README.md in this folder for the map from FIRE's description to the code, the
defaults and the deviations.
"""

from veracity.methods.fire.config import FireConfig
from veracity.methods.fire.method import FireMethod

__all__ = ["FireConfig", "FireMethod"]
