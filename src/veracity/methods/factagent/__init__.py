"""FactAgent (Li et al., 2024): an LLM agent for zero-shot fake-news detection.

See README.md in this folder for the map from FactAgent's description to the code, the
defaults and the deviations.
"""

from veracity.methods.factagent.config import FactAgentConfig
from veracity.methods.factagent.method import FactAgentMethod

__all__ = ["FactAgentConfig", "FactAgentMethod"]
