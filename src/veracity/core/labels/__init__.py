"""Label spaces used by the papers and the benchmarks, and explicit mappings between them.

`core` holds the models, the registries and the papers' spaces and maps; `benchmarks`
the spaces only benchmark sets need. Both are registered when this package is imported.
"""

from veracity.core.errors import LabelError
from veracity.core.labels import benchmarks
from veracity.core.labels.core import (
    LABEL_MAPS,
    LABEL_SPACES,
    LIAR6,
    REAL_FAKE,
    RUMOR,
    RUMOR_VERACITY,
    SUPPORTED_REFUTED,
    SUPPORTED_REFUTED_NEI,
    TRUE_FALSE,
    TRUE_HALF_FALSE,
    TRUE_UNCERTAIN_FALSE,
    LabelMap,
    LabelSpace,
    get_label_map,
    get_label_space,
    map_label,
    register_label_map,
    register_label_space,
)

__all__ = [
    "LABEL_MAPS",
    "LABEL_SPACES",
    "LIAR6",
    "REAL_FAKE",
    "RUMOR",
    "RUMOR_VERACITY",
    "SUPPORTED_REFUTED",
    "SUPPORTED_REFUTED_NEI",
    "TRUE_FALSE",
    "TRUE_HALF_FALSE",
    "TRUE_UNCERTAIN_FALSE",
    "LabelError",
    "LabelMap",
    "LabelSpace",
    "benchmarks",
    "get_label_map",
    "get_label_space",
    "map_label",
    "register_label_map",
    "register_label_space",
]
