"""Self-Ask (Press et al., Findings of EMNLP 2023): follow-up questions answered by
search, then the final answer.

See README.md in this folder for the map from Self-Ask's description to the code.
"""

from veracity.methods.self_ask.config import SelfAskConfig
from veracity.methods.self_ask.method import SelfAskMethod

__all__ = ["SelfAskConfig", "SelfAskMethod"]
