"""Where veracity keeps its files: one home folder and the folders under it.

`HomePaths` is a plain value. The composition root (`veracity.runtime.home_paths`) reads
it from the environment (``VERACITY_HOME``, ``VERACITY_MODELS_DIR``) once and passes it,
or single paths from it, down to the model layer, the sources and the methods; nothing
below `veracity.runtime` reads the environment for a path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class HomePaths:
    """The home folder and what lives under it.

    Attributes:
        home: the home folder (``VERACITY_HOME``; default ``~/.cache/veracity``).
        models_override: where catalog models live when not under `home`
            (``VERACITY_MODELS_DIR``).
    """

    home: Path
    models_override: Path | None = None

    @property
    def models(self) -> Path:
        """Catalog models (GGUF files)."""
        return self.models_override or self.home / "models"

    @property
    def llm_cache(self) -> Path:
        """The user-level model reply cache."""
        return self.home / "cache" / "llm.sqlite"

    @property
    def http_cache(self) -> Path:
        """The user-level HTTP answer cache."""
        return self.home / "cache" / "http.sqlite"

    @property
    def indexes(self) -> Path:
        """Named local search indexes."""
        return self.home / "indexes"

    @property
    def memory(self) -> Path:
        """Evidence memories (MERMAID): the default one and named ones."""
        return self.home / "memory"

    @property
    def default_memory(self) -> Path:
        """The evidence memory used when a run names none."""
        return self.memory / "evidence.sqlite"

    @property
    def checkpoints(self) -> Path:
        """Saved trained parts, one folder per method."""
        return self.home / "checkpoints"


__all__ = ["HomePaths"]
