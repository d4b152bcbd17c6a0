"""ToE (Wang et al., 2026): Tree of Evidence — an argument tree with an RL-driven
multi-source retrieval agent, an evidence evaluation agent and bottom-up aggregation.

See README.md in this folder for the paper-to-code map, defaults and deviations.
"""

from veracity.methods.toe.config import ACTIONS, TOOL_GROUPS, ToEConfig
from veracity.methods.toe.method import ToEMethod

__all__ = ["ACTIONS", "TOOL_GROUPS", "ToEConfig", "ToEMethod"]
