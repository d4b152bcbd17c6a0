"""What a method that reads passages when it is given them (``cot``, ``d2d``) shares.

`PassageReading` holds the one way of choosing the source to search, of saying what that
needs, and of gathering the passages for a check (`veracity.evidence.passages`). Its
method's config carries ``evidence``, ``source``, ``top_k`` and ``query_chars``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from veracity.core.context import CheckContext
from veracity.core.events import Stage
from veracity.core.types import CheckInput
from veracity.evidence.passages import Passages, gather_passages, search_source
from veracity.methods.base import MethodConfigError
from veracity.retrieval.base import Source
from veracity.retrieval.defaults import SourceNeed

__all__ = ["PassageReading"]


class PassageReading:
    """A mixin placed before `BaseMethod` in a method's bases.

    Attributes:
        passage_purpose: what the passages are for, said when a source is missing.
        source: the source searched for passages (None: given evidence or none only).
    """

    passage_purpose: ClassVar[str] = "passages to read"
    source: Source | None = None
    config: Any
    name: str
    sources: Mapping[str, Source]

    def setup(self) -> None:
        """Choose `source` from the config (the method's `setup`, run once built).

        Raises:
            MethodConfigError: ``evidence: retrieved`` with no source to search.
        """
        super().setup()  # type: ignore[misc]
        cfg = self.config
        self.source = None
        if cfg.evidence in ("auto", "retrieved"):
            named = cfg.source is not None
            self.source = (
                self.pick_source(cfg.source) if named else search_source(self.sources)  # type: ignore[attr-defined]
            )
        if cfg.evidence == "retrieved" and self.source is None:
            raise MethodConfigError(
                f"{self.name} with evidence: retrieved needs a source to search: give one "
                "with --source NAME=TYPE, e.g. --source web=duckduckgo or "
                "--source web=local:INDEX"
            )

    @classmethod
    def source_needs(cls, config: Mapping[str, Any]) -> list[SourceNeed]:
        cfg = cls.parse_config(config)  # type: ignore[attr-defined]
        if not isinstance(cfg, cls.config_class) or cfg.evidence != "retrieved":  # type: ignore[attr-defined]
            return []  # auto searches only the sources it is given
        return [SourceNeed(cfg.source or "web", purpose=cls.passage_purpose)]

    async def passages(self, item: CheckInput, ctx: CheckContext) -> Passages:
        """The passages for `item` (given, retrieved or none), noted in the trace."""
        cfg = self.config
        found = await gather_passages(
            item, cfg.evidence, self.source, top_k=cfg.top_k, query_chars=cfg.query_chars
        )
        if found.origin != "none":
            ids = [d.id for d in found.documents]
            ctx.emit(Stage(name=self.name, step=f"evidence {found.origin}", documents=ids))
        return found
