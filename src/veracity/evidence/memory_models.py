"""Records and options of the evidence memory (see `veracity.evidence.memory`)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from veracity.core.bounds import Items, Seconds
from veracity.core.types import Document

MatchKind = Literal["exact", "normalised", "semantic"]


class MemoryConfig(BaseModel):
    """Options of an `EvidenceMemory`."""

    model_config = ConfigDict(extra="forbid")

    path: Path | None = None  # required to open one; callers pass HomePaths.default_memory
    namespace: str = Field(default="default", min_length=1)
    embedder: str | None = "all-MiniLM-L6-v2"  # None: exact and normalised matching only
    similarity_threshold: float = Field(default=0.8, ge=0.0, le=1.0)  # cosine, entity names
    ttl_s: Seconds | None = Field(default=None, gt=0)  # None: evidence never expires
    max_per_entity: Items = Field(default=5, ge=1)  # newest items recalled per entity
    max_results: Items = Field(default=20, ge=1)


class MemoryHit(BaseModel):
    """One recalled piece of evidence and why it matched."""

    model_config = ConfigDict(extra="forbid")

    document: Document
    entity: str  # the stored entity it is filed under
    matched: str  # the entity asked for
    match: MatchKind
    similarity: float
    query: str | None = None
    source: str | None = None
    stored_at: datetime


class MemoryStats(BaseModel):
    model_config = ConfigDict(extra="forbid")

    namespace: str
    entries: int
    entities: int
    stored: int
    duplicates: int
    recalls: int
    hits: int
    misses: int
    searches_saved: int
    purged: int
