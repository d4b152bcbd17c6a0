"""FOLK (Wang and Shu, Findings of EMNLP 2023): first-order-logic-guided claim
verification over knowledge-grounded question-answer pairs.

See README.md in this folder for the map from FOLK's description to the code.
"""

from veracity.methods.folk.config import FolkConfig
from veracity.methods.folk.method import FolkMethod

__all__ = ["FolkConfig", "FolkMethod"]
