"""ToE's data models: what the LLM agents must return, and the records built from it.

Every model reply is validated against one of these before it is used. Strings and lists
are length-capped so that constrained decoding always has room to finish, and kept short
because the structured-output helper raises the token budget to the longest valid reply
(a small model that rambles fills it).
"""

from __future__ import annotations

import functools
import math
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator, model_validator

from veracity.llm.reply_schema import whole_number_schema
from veracity.nlp.text import content_words

CATEGORIES: tuple[str, ...] = (
    "political", "scientific", "health", "celebrity", "historical", "other",
)  # fmt: skip
LOCALES: tuple[str, ...] = ("local", "national", "international")
CLAIM_FLAGS: tuple[str, ...] = (
    "recent_event", "historical_fact", "factual_statement", "opinion", "prediction",
)  # fmt: skip
DIMENSIONS: tuple[str, ...] = (
    "geographic accuracy",
    "entity identity",
    "core event",
    "causal relationship",
    "source credibility",
    "quantitative accuracy",
    "contextual background",
)
STANCES: tuple[str, ...] = ("supports", "neutral", "refutes")

Category = Literal[CATEGORIES]  # type: ignore[valid-type]
Locale = Literal[LOCALES]  # type: ignore[valid-type]
Dimension = Literal[DIMENSIONS]  # type: ignore[valid-type]
StanceLabel = Literal[STANCES]  # type: ignore[valid-type]
Unit = Annotated[float, Field(ge=0.0, le=1.0)]
# Models are asked for whole percentages: small models keep to an integer range (which
# constrained decoding can enforce) far better than to a fraction in [0, 1].
Percent = Annotated[int, Field(ge=0, le=100)]


class _Out(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ClaimFeatures(_Out):
    """The retrieval agent's reading of a (sub-)claim, with its three base queries."""

    category: Category
    locale: Locale
    recent_event: bool
    historical_fact: bool
    factual_statement: bool
    opinion: bool
    prediction: bool
    background_query: str = Field(min_length=2, max_length=100)
    supporting_query: str = Field(min_length=2, max_length=100)
    counter_query: str = Field(min_length=2, max_length=100)


class SearchQuery(_Out):
    """The query an action sends to its source."""

    query: str = Field(min_length=2, max_length=100)


class CleanedChunk(_Out):
    """Claim-relevant statements kept from one chunk of a document (may be none)."""

    statements: list[Annotated[str, Field(min_length=1, max_length=240)]] = Field(max_length=3)


class EvidenceAnalysis(_Out):
    """The analysis agent's structured reading of one document."""

    stance: StanceLabel
    official: bool  # from an official or authoritative source
    primary: bool  # a primary report rather than a republication
    relevance: Percent
    credibility: Percent
    key_point: str = Field(min_length=1, max_length=160)


class JudgeScores(_Out):
    """The LLM judge's scores for a node in percent (the evaluation network's soft
    targets are these divided by 100)."""

    veracity: Percent
    reliability: Percent
    reason: str = Field(min_length=1, max_length=200)


class SubClaim(_Out):
    claim: str = Field(min_length=3, max_length=200)
    dimension: Dimension
    # normalised over the sub-claims; asked for as a whole number from 1 to 100, a bound
    # constrained decoding enforces (it ignores the bounds of other numbers)
    weight: float = Field(gt=0.0, le=100.0, json_schema_extra=whole_number_schema(1, 100))


def _same(a: str, b: str) -> bool:
    return " ".join(a.lower().split()).rstrip(".") == " ".join(b.lower().split()).rstrip(".")


class _Decomposition(_Out):
    subclaims: list[SubClaim]
    parent: ClassVar[str | None] = None  # the claim being decomposed
    schema_exempt: ClassVar[dict[str, str]] = {
        "_normalise": "compares the sub-claims with each other (distinct texts, distinct "
        "dimensions) and with the claim being split, which a JSON schema cannot express; the "
        "re-ask names the fault, and a decomposition that still fails leaves the node "
        "unexpanded, on the record",
    }

    @field_validator("subclaims")
    @classmethod
    def _normalise(cls, subs: list[SubClaim]) -> list[SubClaim]:
        total = sum(s.weight for s in subs)
        if not math.isfinite(total) or total <= 0:
            raise ValueError("importance weights must be positive numbers")
        for i, s in enumerate(subs):
            if cls.parent is not None and _same(s.claim, cls.parent):
                raise ValueError("a sub-claim repeats the statement; split it into parts")
            if cls.parent is not None and not content_words(s.claim) & content_words(cls.parent):
                raise ValueError(
                    f"sub-claim {s.claim!r} is not about the statement; name its people, "
                    "places, numbers or events"
                )
            if any(_same(s.claim, other.claim) for other in subs[:i]):
                raise ValueError("two sub-claims are the same; each must check something different")
            if any(s.dimension == other.dimension for other in subs[:i]):
                raise ValueError(
                    f"two sub-claims check the dimension {s.dimension!r}; give each sub-claim "
                    "a different dimension"
                )
        return [s.model_copy(update={"weight": s.weight / total}) for s in subs]


@functools.cache
def _decomposition_base(min_n: int, max_n: int) -> type[_Decomposition]:
    return create_model(  # type: ignore[call-overload,no-any-return]
        f"Decomposition{min_n}to{max_n}",
        __base__=_Decomposition,
        subclaims=(list[SubClaim], Field(min_length=min_n, max_length=max_n)),
    )


def decomposition_model(min_n: int, max_n: int, parent: str | None = None) -> type[_Decomposition]:
    """The decomposition output model: `min_n`..`max_n` distinct sub-claims, each on its
    own dimension and sharing a content word with `parent` (the claim being split), none
    equal to it; weights normalised to sum to 1."""
    base = _decomposition_base(min_n, max_n)
    if parent is None:
        return base
    return type(base.__name__, (base,), {"parent": parent})


class EvidenceItem(BaseModel):
    """A structured evidence object E_i: one document as the analysis agent read it."""

    model_config = ConfigDict(extra="forbid")

    doc_id: str
    source: str  # the source instance that found it
    action: str  # the retrieval action that found it
    title: str = ""
    url: str | None = None
    statements: list[str] = Field(default_factory=list)
    verified: list[bool] = Field(default_factory=list)  # each statement found in the text
    stance: StanceLabel
    official: bool
    primary: bool
    relevance: Unit
    credibility: Unit
    key_point: str

    @model_validator(mode="after")
    def _aligned(self) -> EvidenceItem:
        if len(self.verified) != len(self.statements):
            raise ValueError("verified must have one entry per statement")
        return self
