"""Evidence passages for a prompt: the input's own evidence, or a search of its sources.

Methods that read evidence when they are given it (``cot``, ``d2d``) share this:

- ``given``: the passages handed over with a claim (`Claim.evidence`, e.g. a benchmark's
  gold evidence in a full-evidence setting);
- ``retrieved``: the top-k results of one search of the method's sources for the input's
  text (several sources are searched at once and merged, see `CombinedSource`);
- ``none``: no passages (the model's own knowledge);
- ``auto``: given evidence when the input carries some, else retrieved when the method
  has sources, else none.

Every search goes through `guard_query` with the input's date as the cutoff, so an
evaluation's leakage guards apply. Passages are untrusted text: templates fence them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.errors import InputError
from veracity.core.types import CheckInput, Claim, Document
from veracity.prompting import truncate_chars
from veracity.retrieval.base import Query, Source
from veracity.retrieval.guards import guard_query
from veracity.retrieval.managed import CombinedSource

EvidenceMode = Literal["auto", "given", "retrieved", "none"]

__all__ = ["EvidenceMode", "Passages", "gather_passages", "passage_rows", "search_source"]


class Passages(BaseModel):
    """The passages a prompt shows, and where they came from.

    Attributes:
        documents: the passages in rank order.
        origin: ``given``, ``retrieved`` or ``none``.
        query: the search made (retrieved passages only).
    """

    model_config = ConfigDict(extra="forbid")

    documents: list[Document] = Field(default_factory=list)
    origin: Literal["given", "retrieved", "none"] = "none"
    query: str | None = None


def given_evidence(item: CheckInput) -> list[Document]:
    """The evidence handed over with `item` (claims only; other inputs carry none)."""
    return list(item.evidence) if isinstance(item, Claim) else []


def search_source(sources: Mapping[str, Source], name: str | None = None) -> Source | None:
    """The source a passage search uses: the one called `name`, the only one, several
    combined, or None when there are none.

    Raises:
        KeyError: `name` is not among `sources`.
    """
    if name is not None:
        return sources[name]
    if not sources:
        return None
    if len(sources) == 1:
        return next(iter(sources.values()))
    return CombinedSource(list(sources.values()), name="+".join(sources))


async def gather_passages(
    item: CheckInput,
    mode: EvidenceMode,
    source: Source | None,
    *,
    top_k: int = 5,
    query_chars: int = 500,
) -> Passages:
    """The passages for `item` under `mode` (see the module docstring).

    Raises:
        InputError: ``given`` and the input carries no evidence.
        ValueError: ``retrieved`` without a source.
        SourceError: the search failed after its retries.
    """
    given = given_evidence(item)
    if mode == "given" or (mode == "auto" and given):
        if not given:
            raise InputError(
                "this run reads each claim's own evidence (evidence: given), but the claim "
                'carries none: give it as a .json file with an "evidence" list, or use '
                "evidence: auto"
            )
        return Passages(documents=given, origin="given")
    if mode == "none" or (mode == "auto" and source is None):
        return Passages()
    if source is None:
        raise ValueError("retrieved evidence needs a source")
    text = truncate_chars(item.content, query_chars)
    docs = await source.search(guard_query(Query(text=text, top_k=top_k, before=item.cutoff)))
    return Passages(documents=docs[:top_k], origin="retrieved", query=text)


def passage_rows(docs: Sequence[Document], max_chars: int) -> list[dict[str, Any]]:
    """Passages as template rows: ``n`` (from 1), ``title`` and ``text`` cut to `max_chars`."""
    return [
        {"n": i, "title": d.title, "text": truncate_chars(d.text, max_chars)}
        for i, d in enumerate(docs, 1)
    ]
