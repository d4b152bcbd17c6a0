"""MERMAID (Cao et al.): memory-enhanced multi-agent veracity assessment.

See README.md in this folder for the paper-to-code map, defaults and deviations.
"""

from veracity.methods.mermaid.config import MemoryOptions, MermaidConfig
from veracity.methods.mermaid.decomposer import Decomposition, Triplet
from veracity.methods.mermaid.method import MermaidMethod, MermaidSingleMethod

__all__ = [
    "Decomposition",
    "MemoryOptions",
    "MermaidConfig",
    "MermaidMethod",
    "MermaidSingleMethod",
    "Triplet",
]
