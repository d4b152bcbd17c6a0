"""ProgramFC (Pan et al., ACL 2023): a reasoning program written by the model, then run
step by step with retrieval.

See README.md in this folder for the map from ProgramFC's description to the code.
"""

from veracity.methods.programfc.config import ProgramFCConfig
from veracity.methods.programfc.method import ProgramFCMethod

__all__ = ["ProgramFCConfig", "ProgramFCMethod"]
