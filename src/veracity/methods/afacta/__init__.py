"""AFaCTA (Ni et al., ACL 2024): three reasoning paths and a vote, turned to veracity.

See README.md in this folder for what we took from AFaCTA, what we chose and the deviations.
"""

from veracity.methods.afacta.method import AfactaConfig, AfactaMethod

__all__ = ["AfactaConfig", "AfactaMethod"]
