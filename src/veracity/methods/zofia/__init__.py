"""ZoFia (Wu et al.): entity-guided retrieval and multi-LLM interaction for fake news."""

from veracity.methods.zofia.config import ZoFiaConfig
from veracity.methods.zofia.method import ZoFiaMethod

__all__ = ["ZoFiaConfig", "ZoFiaMethod"]
