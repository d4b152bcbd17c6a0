"""`InMemorySource`: a small, deterministic source over a list of documents, for tests."""

from __future__ import annotations

import re
from collections.abc import Iterable

from veracity.core.types import Document
from veracity.retrieval.base import Query, SourceError, apply_rules

_WORD = re.compile(r"[a-z0-9]+")


def _terms(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


class InMemorySource:
    """Ranks documents by how many query terms they contain.

    Like every raw source it does not record its searches; methods wrap sources in
    `ManagedSource`, which does.

    With AND composition every keyword must occur in the document; with OR any one.
    Set `fail_with` to make every search raise that error (for fault-handling tests).
    """

    kind = "memory"

    def __init__(
        self,
        documents: Iterable[Document],
        name: str = "memory",
        fail_with: SourceError | None = None,
    ):
        self.name = name
        self.documents = list(documents)
        self.fail_with = fail_with
        self.queries: list[Query] = []

    async def search(self, query: Query) -> list[Document]:
        self.queries.append(query)
        if self.fail_with is not None:
            raise self.fail_with
        want = _terms(query.text)
        keyword_terms = [_terms(k) for k in query.keywords if k.strip()]
        scored = []
        for doc in self.documents:
            have = _terms(f"{doc.title} {doc.text}")
            if keyword_terms:
                hits = [kt <= have for kt in keyword_terms]
                if (query.operator == "AND" and not all(hits)) or not any(hits):
                    continue
            score = len(want & have) + sum(len(kt & have) for kt in keyword_terms)
            if score > 0:
                scored.append((score, doc))
        scored.sort(key=lambda sd: -sd[0])
        docs = [d.model_copy(update={"score": float(s)}) for s, d in scored]
        return apply_rules(query, docs)


def table_resolver(table: dict[str, list[str]]):
    """A DNS resolver for the page-fetch guard that answers from `table` (host to addresses).

    A host missing from the table fails like an unknown name (`OSError`).
    """

    async def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return table[host]

    return resolve
