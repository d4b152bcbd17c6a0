"""DefGen (Lucas et al., EMNLP 2023, the F3 framework): define, then deduce.

See README.md in this folder for what we know of DefGen, what we chose and the deviations.
"""

from veracity.methods.defgen.method import DefGenConfig, DefGenMethod

__all__ = ["DefGenConfig", "DefGenMethod"]
