"""`InMemoryEncyclopedia`: an offline stand-in for Wikipedia's sense lookup and summaries."""

from __future__ import annotations

import re

from veracity.core import context
from veracity.core.types import Document
from veracity.nlp.disambiguation import SenseCandidate
from veracity.nlp.text import split_sentences
from veracity.retrieval.base import SourceError


class InMemoryEncyclopedia:
    """Entries are (title, short description, summary text).

    `candidates(entity)` returns the entries whose title contains the entity (case-
    insensitive, whole words), as a Wikipedia title search would; `summary(title, n)`
    returns the first n sentences of that entry's summary. Set `fail_with` to make every
    lookup fail with that error (recorded as a failed search).
    """

    kind = "encyclopedia"

    def __init__(
        self,
        entries: list[tuple[str, str, str]],
        name: str = "encyclopedia",
        fail_with: SourceError | None = None,
    ):
        self.name = name
        self.entries = {title: (desc, summary) for title, desc, summary in entries}
        self.lookups: list[str] = []
        self.fail_with = fail_with

    async def candidates(self, entity: str, limit: int = 10) -> list[SenseCandidate]:
        self.lookups.append(entity)
        if self.fail_with is not None:  # recorded like a real lookup that gave up
            error = f"{type(self.fail_with).__name__}: {self.fail_with}"
            context.current().record_search_failure(
                name=self.name, error=error, query={"entity": entity}
            )
            raise self.fail_with
        rx = re.compile(rf"(?<!\w){re.escape(entity)}(?!\w)", re.IGNORECASE)
        found = [
            SenseCandidate(title=t, description=d, ref=t)
            for t, (d, _) in self.entries.items()
            if rx.search(t)
        ][:limit]
        context.current().record_search(
            name=self.name, cached=False, query={"entity": entity}, results=[c.title for c in found]
        )
        return found

    async def summary(self, title: str, sentences: int = 3) -> Document:
        if title not in self.entries:
            raise KeyError(f"no entry titled {title!r}")
        text = " ".join(split_sentences(self.entries[title][1])[:sentences])
        return Document(id=f"enc:{title}", title=title, text=text, source=self.name)
