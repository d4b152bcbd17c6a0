"""Sources that fail, for the tests of failed searches (`veracity.methods.failures`).

`down(name)` fails every search (``SourceUnreachable``, retried and then given up);
`half_down(name)` searches a working and a failing source at once, so every search has
one failed part and one answer. Both are also registered as source types
(``always_down``, ``every_other_down``) so command-line, server and batch runs can name
them with ``--source web=always_down``; ``every_other_down`` fails every second search
with a fault that is not retried.
"""

from __future__ import annotations

from veracity.core import registry
from veracity.core.types import Document
from veracity.retrieval.base import Query, SourceBadResponse, SourceUnreachable
from veracity.retrieval.managed import CombinedSource, ManagedSource
from veracity.testing import InMemorySource

REFUSED = "connection refused"
DOCS = [
    Document(id="d1", title="Town council report", url="https://news.example/1",
             text="Records show that the town council approved the budget in March."),
    Document(id="d2", title="Council budget", url="https://paper.example/2",
             text="The council budget for that year lists the new library works."),
]  # fmt: skip


def down(name: str = "web") -> InMemorySource:
    return InMemorySource(DOCS, name=name, fail_with=SourceUnreachable(name, REFUSED))


def half_down(name: str = "web") -> CombinedSource:
    parts = [ManagedSource(InMemorySource(DOCS, name="good")), ManagedSource(down("broken"))]
    return CombinedSource(parts, name=name)


class EveryOtherDown(InMemorySource):
    """Answers the first search, fails the second (not retried), and so on."""

    def __init__(self, name: str = "every_other_down"):
        super().__init__(DOCS, name=name)
        self.calls = 0

    async def search(self, query: Query) -> list[Document]:
        self.calls += 1
        if self.calls % 2 == 0:
            raise SourceBadResponse(self.name, "garbled answer [bold]x[/bold]")
        return await super().search(query)


def register() -> None:
    """Register ``always_down`` and ``every_other_down`` as source types (once)."""
    if "always_down" not in registry.sources:
        registry.sources.register("always_down", lambda name="always_down": down(name))
    if "every_other_down" not in registry.sources:
        registry.sources.register("every_other_down", EveryOtherDown)
