"""veracity: check claims, news articles and social-media posts with retrieval-grounded,
multi-agent LLM reasoning."""

from veracity.api import acheck, as_input, check
from veracity.labels import LabelSpace, get_label_space, map_label
from veracity.methods.base import load_method
from veracity.types import (
    Article,
    Claim,
    Document,
    Evidence,
    Post,
    Reply,
    Stance,
    Trace,
    TraceEvent,
    Usage,
    Verdict,
)

__version__ = "0.1.0"

__all__ = [
    "Article",
    "Claim",
    "Document",
    "Evidence",
    "LabelSpace",
    "Post",
    "Reply",
    "Stance",
    "Trace",
    "TraceEvent",
    "Usage",
    "Verdict",
    "__version__",
    "acheck",
    "as_input",
    "check",
    "get_label_space",
    "load_method",
    "map_label",
]
