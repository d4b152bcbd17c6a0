"""ToE (Wang et al., 2026): Tree of Evidence. A claim grows into an argument tree whose
nodes get evidence from a learned retrieval policy over several sources, structured
evidence reading, scoring and bottom-up aggregation.

See README.md in this folder for the paper-to-code map, defaults and deviations.
"""

from veracity.methods.toe.config import ACTIONS, TOOL_GROUPS, ToEConfig
from veracity.methods.toe.method import ToEMethod

__all__ = ["ACTIONS", "TOOL_GROUPS", "ToEConfig", "ToEMethod"]
