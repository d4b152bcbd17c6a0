"""HiSS (Zhang and Gao, AACL 2023): hierarchical step-by-step prompting.

See README.md in this folder for the map from HiSS's description to the code, the
defaults and the deviations.
"""

from veracity.methods.hiss.config import HissConfig
from veracity.methods.hiss.method import HissMethod

__all__ = ["HissConfig", "HissMethod"]
