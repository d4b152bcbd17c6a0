"""FacTool (Chern et al., 2023), knowledge-based QA setting: claims, queries, search,
agreement verification.

See README.md in this folder for the map from FacTool's description to the code.
"""

from veracity.methods.factool.config import FacToolConfig
from veracity.methods.factool.method import FacToolMethod

__all__ = ["FacToolConfig", "FacToolMethod"]
