"""Core data types shared by every part of veracity.

Inputs (`Claim`, `Article`, `Post`), retrieved material (`Document`, `Evidence`) and
outputs (`Verdict` with its `Usage` and `Trace`). All are pydantic v2 models, so they
validate on construction and serialise to JSON losslessly.
"""

from __future__ import annotations

import datetime as _dt
from datetime import date, datetime, timezone
from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from veracity.core.bounds import Weight
from veracity.core.errors import InputError
from veracity.core.redaction import strip_credentials
from veracity.core.textio import (  # noqa: F401  (the limits are re-exported)
    MAX_EVIDENCE_DOCS,
    MAX_FIELD_CHARS,
    MAX_INPUT_CHARS,
    MAX_REPLIES,
)
from veracity.core.textio import (
    bounded_text as _bounded,
)
from veracity.core.textio import (
    require_text as _require_text,
)
from veracity.core.trace import (  # noqa: F401  (re-exported: the trace is part of a Verdict)
    EventKind,
    Trace,
    TraceEvent,
)
from veracity.core.usage import (  # noqa: F401  (re-exported: parts of a Verdict)
    SearchFailures,
    Usage,
    cost_text,
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# --------------------------------------------------------------------------- inputs


class Claim(_Strict):
    """A single checkable statement."""

    kind: Literal["claim"] = "claim"
    text: str
    id: str | None = None
    date: _dt.date | None = None  # when the claim was made; used as the evidence cutoff
    speaker: str | None = None
    context: str | None = None  # venue or situation, e.g. "a TV interview"
    language: str = "en"
    # Evidence supplied with the claim (e.g. a benchmark's gold evidence, RADAR's "full
    # evidence" setting). Methods that accept given evidence use it instead of retrieving.
    evidence: list[Document] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _require_text(v, "claim text")

    @field_validator("speaker", "context")
    @classmethod
    def _fields(cls, v: str | None, info: Any) -> str | None:
        return _bounded(v, f"claim {info.field_name}")

    @field_validator("evidence")
    @classmethod
    def _evidence(cls, v: list[Document]) -> list[Document]:
        if len(v) > MAX_EVIDENCE_DOCS:
            raise InputError(f"{len(v):,} evidence documents; the limit is {MAX_EVIDENCE_DOCS:,}")
        return v

    @property
    def content(self) -> str:
        return self.text

    @property
    def cutoff(self) -> date | None:
        return self.date


class Article(_Strict):
    """A news article: a title and a body."""

    kind: Literal["article"] = "article"
    body: str
    title: str = ""
    id: str | None = None
    url: str | None = None
    published_at: datetime | None = None
    language: str = "en"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("body")
    @classmethod
    def _body(cls, v: str) -> str:
        return _require_text(v, "article body")

    @field_validator("title")
    @classmethod
    def _title(cls, v: str) -> str:
        return _bounded(v, "article title") or ""

    @property
    def content(self) -> str:
        return f"{self.title}\n\n{self.body}" if self.title else self.body

    @property
    def cutoff(self) -> date | None:
        return self.published_at.date() if self.published_at else None


class Reply(_Strict):
    """A reply (comment) in a social-media thread."""

    id: str
    text: str
    created_at: datetime | None = None
    author: str | None = None
    parent: str | None = None  # id of the post or reply this answers
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("text", "author")
    @classmethod
    def _fields(cls, v: str | None, info: Any) -> str | None:
        return _bounded(v, f"reply {info.field_name}")


def reply_fields(replies: list[Any], post_id: str | None) -> list[Reply | dict[str, Any]]:
    """A post's replies, in any shape an entry point accepts, as `Reply` fields.

    The one place where replies are read, whether they come from ``check --file``, the
    Python API, the REST API, the web UI or a ``batch`` column: a reply is its text alone,
    or an object with ``text`` and optional ``id``, ``author``, ``parent``, ``created_at``
    and ``metadata`` (a `Reply` is kept as it is). A missing id becomes ``r<N>``
    (``<post id>/r<N>`` when the post has an id), N the reply's place in the list counted
    from 1, so the same list always gets the same ids; an id the list gives itself is not
    used twice (``.2``, ``.3``... are added). A missing parent is the post.

    Raises:
        ValueError: a reply that is neither text nor an object.
    """
    given = (r.id if isinstance(r, Reply) else r.get("id") for r in replies if _is_reply(r))
    taken = {i for i in given if isinstance(i, str)}
    prefix = f"{post_id}/" if post_id else ""
    out: list[Reply | dict[str, Any]] = []
    for n, item in enumerate(replies, 1):
        if not _is_reply(item) and not isinstance(item, str):
            raise ValueError(f"reply {n} is {type(item).__name__}, not text or an object")
        if isinstance(item, Reply):
            out.append(item)
            continue
        fields = {"text": item} if isinstance(item, str) else dict(item)
        if fields.get("id") in (None, ""):
            rid, k = f"{prefix}r{n}", 1
            while rid in taken:
                k += 1
                rid = f"{prefix}r{n}.{k}"
            taken.add(rid)
            fields["id"] = rid
        if fields.get("parent") is None and post_id:
            fields["parent"] = post_id
        out.append(fields)
    return out


def _is_reply(item: Any) -> bool:
    return isinstance(item, Reply | dict)


class Post(_Strict):
    """A social-media post with its replies."""

    kind: Literal["post"] = "post"
    text: str
    id: str | None = None
    created_at: datetime | None = None
    author: str | None = None
    replies: list[Reply] = Field(default_factory=list)
    language: str = "en"
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _reply_shapes(cls, data: Any) -> Any:
        """Replies given as text, or as objects without an id, become `Reply` fields."""
        if isinstance(data, dict) and isinstance(data.get("replies"), list):
            post_id = data.get("id") if isinstance(data.get("id"), str) else None
            return {**data, "replies": reply_fields(data["replies"], post_id)}
        return data

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        return _require_text(v, "post text")

    @field_validator("author")
    @classmethod
    def _author(cls, v: str | None) -> str | None:
        return _bounded(v, "post author")

    @field_validator("replies")
    @classmethod
    def _replies(cls, v: list[Reply]) -> list[Reply]:
        if len(v) > MAX_REPLIES:
            raise InputError(
                f"{len(v):,} replies; the limit is {MAX_REPLIES:,} (a check reads the earliest "
                "`limits.max_replies` of them)"
            )
        return v

    @model_validator(mode="after")
    def _thread(self) -> Post:
        """Reply ids are unique, parents exist, and following parents never loops."""
        parent_of: dict[str, str | None] = {}
        for r in self.replies:
            if r.id in parent_of:
                raise ValueError(f"two replies have the id {r.id!r}")
            if r.id == self.id:
                raise ValueError(f"reply {r.id!r} has the post's own id")
            parent_of[r.id] = r.parent
        for rid, parent in parent_of.items():
            if parent is None or parent in parent_of:
                continue
            if self.id is not None and parent != self.id:
                raise ValueError(
                    f"reply {rid!r} answers {parent!r}, which is neither the post "
                    f"({self.id!r}) nor one of its replies"
                )
        rooted: set[str] = set()  # replies whose chain of parents is known to end
        for rid in parent_of:
            path: list[str] = []
            cur: str | None = rid
            while cur in parent_of and cur not in rooted:
                if cur in path:
                    raise ValueError(f"replies form a cycle through {cur!r}")
                path.append(cur)
                cur = parent_of[cur]
            rooted.update(path)
        return self

    @property
    def content(self) -> str:
        return self.text

    @property
    def cutoff(self) -> date | None:
        return self.created_at.date() if self.created_at else None

    def replies_by_time(self, first_n: int | None = None) -> list[Reply]:
        """Replies ordered by creation time (undated ones last), optionally the first N."""
        far = datetime.max.replace(tzinfo=timezone.utc)
        ordered = sorted(self.replies, key=lambda r: _aware(r.created_at) or far)
        return ordered if first_n is None else ordered[:first_n]


CheckInput = Claim | Article | Post


def _aware(dt: datetime | None) -> datetime | None:
    if dt is None:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


# --------------------------------------------------------------------------- evidence


class Document(_Strict):
    """A retrieved unit of text: a passage, abstract, page summary or search snippet."""

    id: str
    text: str
    title: str = ""
    url: str | None = None
    source: str = "unknown"  # the source instance that found it: "wikipedia", "local:scifact"
    published_at: datetime | None = None
    retrieved_at: datetime | None = None
    score: Weight | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @property
    def domain(self) -> str | None:
        from urllib.parse import urlparse

        if not self.url:
            return None
        try:
            host = urlparse(self.url).hostname or ""
        except ValueError:  # a malformed URL (unbalanced brackets, ...) has no domain
            return None
        return host.lower().removeprefix("www.") or None


class Stance(str, Enum):
    SUPPORTS = "supports"
    REFUTES = "refutes"
    NEUTRAL = "neutral"
    UNKNOWN = "unknown"


class Evidence(_Strict):
    """A piece of a document used to argue for or against the input."""

    document: Document
    quote: str | None = None  # the exact span relied on
    stance: Stance = Stance.UNKNOWN
    credibility: float | None = Field(default=None, ge=0.0, le=1.0)
    quote_verified: bool | None = None  # None: not checked; False: not found in the document
    note: str | None = None


Claim.model_rebuild()

# --------------------------------------------------------------------------- output


class Verdict(_Strict):
    """The result of checking one input.

    `label` is in the method's label space, or None when the method abstained or failed;
    a method never fills in a default label it did not reach.
    """

    label: str | None
    label_space: str
    method: str
    score: float | None = Field(default=None, ge=0.0, le=1.0)  # veracity: 1 = true
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    probabilities: dict[str, float] | None = None  # per label, when the method has them
    # what a reader must know about the probabilities: labels tied at the top, a decoded
    # answer the probabilities overruled, or why there are none
    probability_note: str | None = None
    rationale: str = ""
    evidence: list[Evidence] = Field(default_factory=list)
    abstained: bool = False
    abstain_reason: str | None = None
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)
    trace: Trace = Field(default_factory=Trace)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("error")
    @classmethod
    def _no_credentials(cls, v: str | None) -> str | None:
        return strip_credentials(v) if v else v

    @model_validator(mode="after")
    def _consistent(self) -> Verdict:
        if self.label is None and not (self.abstained or self.error):
            raise ValueError("a verdict without a label must be marked abstained or carry an error")
        if self.abstained and not self.abstain_reason:
            raise ValueError("an abstained verdict needs an abstain_reason")
        return self

    @property
    def tied(self) -> list[str]:
        """Labels sharing the top probability, when more than one does."""
        if not self.probabilities:
            return []
        top = max(self.probabilities.values())
        tied = [k for k, v in self.probabilities.items() if top - v <= 1e-9]
        return tied if len(tied) > 1 else []

    @property
    def ok(self) -> bool:
        return self.label is not None and self.error is None

    @property
    def search_failures(self) -> SearchFailures | None:
        """The searches that failed during the check (None: none failed)."""
        raw = self.metadata.get("search_failures")
        return SearchFailures.model_validate(raw) if isinstance(raw, dict) else None

    @property
    def search_warning(self) -> str | None:
        """A one-line warning about failed searches, for front ends (None: none failed)."""
        found = self.search_failures
        return found.warning if found is not None else None

    @property
    def unverified_quotes(self) -> list[Evidence]:
        return [e for e in self.evidence if e.quote_verified is False]
