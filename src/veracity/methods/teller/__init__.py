"""TELLER (Liu et al., Findings of ACL 2024): questions answered as truth values, then rules.

See README.md in this folder for what we took from TELLER, what we chose and the deviations.
"""

from veracity.methods.teller.method import TellerConfig, TellerMethod

__all__ = ["TellerConfig", "TellerMethod"]
