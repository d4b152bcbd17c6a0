"""FactCheck-GPT (Wang et al., Factcheck-Bench, 2024): decompose, decontextualise, keep
the check-worthy claims, retrieve ranked passages, verify each claim over them (passage
stances only when the verification is unusable).

See README.md in this folder for the map from its description to the code.
"""

from veracity.methods.factcheck_gpt.config import FactCheckGPTConfig
from veracity.methods.factcheck_gpt.method import FactCheckGPTMethod

__all__ = ["FactCheckGPTConfig", "FactCheckGPTMethod"]
