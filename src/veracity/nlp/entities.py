"""Named entities with confidences, merged into units, and the dynamic confidence threshold.

This is the entity extractor of ZoFia's first stage (paper section 3.1, Eq. 1–2,
Algorithm 2). A `NERBackend` looks at a text and returns either token-level tags with a
probability per token (spaCy, Hugging Face token classification) or whole spans with a
confidence (LLM-based NER). From there the steps are the same for every backend:

1. `merge_tokens` joins consecutive entity tokens into one span; the span's confidence is
   the mean of its tokens' probabilities (Eq. 2).
2. Every span gets the index of the sentence it starts in (`sentence_spans`).
3. `merge_duplicates` folds spans with the same normalised text (`normalise_entity`) into
   one `Entity`. The merged entity keeps every mention; its confidence is the *highest*
   mention confidence and its surface text and label come from that mention (ties: the
   earliest). Max rather than mean because the threshold asks "is this string a reliable
   entity?", and one confident recognition answers that; a weak second mention (often a
   shortened or oddly tokenised repeat) should not sink it.
4. `dynamic_threshold` keeps entities whose confidence reaches a threshold that starts at
   λ_init and steps down by Δλ to a floor until at least n_min entities pass.

Backends live in `veracity.nlp.ner_backends` (spaCy, Hugging Face) and
`veracity.nlp.ner_llm` (LLM-based, async).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from veracity.core.bounds import Items, Weight
from veracity.nlp.text import sentence_spans as shared_sentence_spans
from veracity.nlp.text import split_sentences

_TAG = re.compile(r"^(O|[BI]-\S+)$")


class NERError(RuntimeError):
    """A NER backend that cannot be loaded or returned unusable predictions."""


class TokenTag(BaseModel):
    """One token with its IOB2 tag and the probability of that tag (Eq. 1).

    Attributes:
        text: the token as it appears in the text.
        start: character offset of the token's first character.
        end: character offset just past the token.
        tag: ``"O"`` or ``"B-LABEL"`` / ``"I-LABEL"``.
        confidence: probability the model gives to `tag` for this token.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    tag: str
    confidence: float = Field(ge=0.0, le=1.0)

    @field_validator("tag")
    @classmethod
    def _iob2(cls, v: str) -> str:
        if not _TAG.match(v):
            raise ValueError(f"tag {v!r} is not IOB2 (O, B-X or I-X)")
        return v

    @model_validator(mode="after")
    def _span(self) -> TokenTag:
        if self.end < self.start:
            raise ValueError(f"token end {self.end} is before its start {self.start}")
        return self

    @property
    def label(self) -> str | None:
        return None if self.tag == "O" else self.tag[2:]


class EntitySpan(BaseModel):
    """One mention of an entity in the text (an entity unit of Eq. 2).

    Attributes:
        text: the mention, exactly ``source_text[start:end]``.
        label: entity type as the backend names it (PERSON, ORG, PER, ...).
        start, end: character offsets in the source text.
        confidence: the unit's confidence in [0, 1].
        sentence: index of the sentence the mention starts in (None until assigned).
        n_tokens: how many tokens were averaged into `confidence` (1 for span backends).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    label: str
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    confidence: float = Field(ge=0.0, le=1.0)
    sentence: int | None = Field(default=None, ge=0)
    n_tokens: int = Field(default=1, ge=1)


class Entity(BaseModel):
    """An entity after duplicate merging: one normalised text, all its mentions.

    Attributes:
        text: surface form of the most confident mention.
        label: label of the most confident mention.
        confidence: highest mention confidence (see the module docstring for why).
        key: the normalised text the mentions share.
        mentions: every mention, in text order.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str
    label: str
    confidence: float = Field(ge=0.0, le=1.0)
    key: str
    mentions: list[EntitySpan] = Field(min_length=1)

    @property
    def sentences(self) -> list[int]:
        """Sorted, distinct sentence indexes of the mentions that have one."""
        return sorted({m.sentence for m in self.mentions if m.sentence is not None})

    @property
    def start(self) -> int:
        return self.mentions[0].start

    @property
    def end(self) -> int:
        return self.mentions[0].end


Prediction = TokenTag | EntitySpan


@runtime_checkable
class NERBackend(Protocol):
    """Anything that finds entities in a text with a confidence for each.

    `predict` returns either only `TokenTag`s covering the tokens it tagged (in text
    order; "O" tokens may be left out), or only `EntitySpan`s. It raises `NERError` when
    the model cannot run; it never invents confidences.
    """

    name: str

    def predict(self, text: str) -> Sequence[Prediction]: ...


# --------------------------------------------------------------------------- sentences


def get_sentences(text: str) -> list[str]:
    """Sentences of `text` from the shared splitter (`veracity.nlp.text`)."""
    return split_sentences(text)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of `text`, in order (shared splitter)."""
    return shared_sentence_spans(text)


def sentence_index(spans: Sequence[tuple[int, int]], offset: int) -> int:
    """Index of the sentence containing character `offset` (the nearest one before it
    when the offset falls in the gap between two sentences)."""
    if not spans:
        raise ValueError("the text has no sentences")
    index = 0
    for i, (start, _end) in enumerate(spans):
        if start <= offset:
            index = i
        else:
            break
    return index


# --------------------------------------------------------------------------- units


def _breaks_unit(text: str, previous: TokenTag | None, tok: TokenTag, starts: set[int]) -> bool:
    """Whether `tok` cannot belong to the same entity as `previous`: a line break in it
    or between them, or a sentence starting at it."""
    if "\n" in tok.text or not tok.text.strip():
        return True
    if previous is None:
        return False
    return "\n" in text[previous.end : tok.start] or tok.start in starts


def merge_tokens(
    text: str, tokens: Sequence[TokenTag], sentence_starts: Sequence[int] = ()
) -> list[EntitySpan]:
    """Join consecutive entity tokens into units whose confidence is their mean (Eq. 2).

    A unit opens at a ``B-X`` tag, or at an ``I-X`` that does not continue an open ``X``
    unit; it grows with ``I-X`` tokens of the same label, and with any non-O token glued
    to the previous one (no character between them: word pieces, "$" + "400"); it closes
    at ``O``, at a label change and at a new ``B-`` that is not glued. An entity never
    spans a line break or a sentence boundary: a whitespace token, a line break between
    two tokens, or a token that starts a sentence closes the open unit (a tagger that
    runs "Bloomberg\n\nThe Best Of" together yields "Bloomberg" and "The Best Of").

    Args:
        text: the text the tokens' offsets refer to.
        tokens: tagged tokens in text order.
        sentence_starts: character offsets where sentences start.

    Raises:
        ValueError: offsets outside the text or out of order.
    """
    starts = set(sentence_starts) - {0}
    units: list[list[TokenTag]] = []
    current: list[TokenTag] = []
    previous_end = -1
    for tok in tokens:
        if tok.end > len(text) or tok.start < previous_end:
            raise ValueError(f"token {tok.text!r} at {tok.start}:{tok.end} is out of order/range")
        if _breaks_unit(text, current[-1] if current else None, tok, starts):
            current = []
            if "\n" in tok.text or not tok.text.strip():
                previous_end = tok.end
                continue
        label = tok.label
        glued = bool(current) and tok.start == current[-1].end
        if label is None:
            current = []
        elif current and current[-1].label == label and (tok.tag[0] == "I" or glued):
            current.append(tok)
        else:
            current = [tok]
            units.append(current)
        previous_end = tok.end
    spans = []
    for unit in units:
        start, end = unit[0].start, unit[-1].end
        spans.append(
            EntitySpan(
                text=text[start:end],
                label=unit[0].label or "",
                start=start,
                end=end,
                confidence=sum(t.confidence for t in unit) / len(unit),
                n_tokens=len(unit),
            )
        )
    return spans


def to_spans(text: str, predictions: Sequence[Prediction]) -> list[EntitySpan]:
    """Entity units from a backend's predictions (token tags are merged, spans kept).

    Raises:
        NERError: token tags and spans mixed in one prediction list.
    """
    tokens = [p for p in predictions if isinstance(p, TokenTag)]
    spans = [p for p in predictions if isinstance(p, EntitySpan)]
    if tokens and spans:
        raise NERError("a backend returned token tags and spans together")
    starts = [start for start, _end in sentence_spans(text)]
    if tokens:
        return merge_tokens(text, tokens, starts)
    for span in spans:
        if text[span.start : span.end] != span.text:
            raise NERError(f"span {span.text!r} does not match the text at {span.start}")
    pieces = [piece for span in spans for piece in split_span(span, starts)]
    return sorted(pieces, key=lambda s: (s.start, s.end))


def split_span(span: EntitySpan, sentence_starts: Sequence[int] = ()) -> list[EntitySpan]:
    """`span` cut at line breaks and at sentence starts inside it, each piece trimmed of
    whitespace and keeping the span's confidence; pieces with no letter or digit go."""
    cuts = sorted(
        {span.start, span.end} | {s for s in sentence_starts if span.start < s < span.end}
    )
    out = []
    for a, b in itertools.pairwise(cuts):
        part = span.text[a - span.start : b - span.start]
        offset = a
        for m in re.finditer(r"[^\n]+", part):
            piece = m.group().strip()
            if not any(c.isalnum() for c in piece):
                continue
            start = offset + m.start() + m.group().index(piece)
            out.append(
                span.model_copy(update={"text": piece, "start": start, "end": start + len(piece)})
            )
    return out


def normalise_entity(text: str) -> str:
    """The key under which mentions count as the same entity — in entity merging and in
    the evidence memory alike.

    Unicode NFKD with accents dropped, case-folded, a possessive "'s" removed, every run
    of punctuation and whitespace made one space, and a leading article ("the", "a",
    "an") dropped: "The European Union", "European Union's" and "european  union" share
    one key, as do "Café Müller" and "Cafe Muller"; "U.N." becomes "u n".
    """
    key = unicodedata.normalize("NFKD", text)
    key = "".join(c for c in key if not unicodedata.combining(c)).casefold().strip()
    key = re.sub(r"['’]s\W*$", "", key)
    key = " ".join(re.sub(r"[^\w]+", " ", key).split())
    return re.sub(r"^(?:the|a|an) ", "", key)


def merge_duplicates(spans: Sequence[EntitySpan]) -> list[Entity]:
    """Fold mentions with the same normalised text into entities (first-mention order)."""
    groups: dict[str, list[EntitySpan]] = {}
    for span in spans:
        key = normalise_entity(span.text)
        if key:
            groups.setdefault(key, []).append(span)
    entities = []
    for key, mentions in groups.items():
        best = max(mentions, key=lambda m: m.confidence)  # max() keeps the earliest on ties
        entities.append(
            Entity(
                text=best.text,
                label=best.label,
                confidence=best.confidence,
                key=key,
                mentions=sorted(mentions, key=lambda m: m.start),
            )
        )
    return entities


def with_sentences(text: str, spans: Sequence[EntitySpan]) -> list[EntitySpan]:
    """The spans with their sentence index set from their start offset."""
    bounds = sentence_spans(text)
    return [s.model_copy(update={"sentence": sentence_index(bounds, s.start)}) for s in spans]


def recognise(text: str, backend: NERBackend) -> list[Entity]:
    """Run `backend` on `text` and return merged entities with sentence indexes (E_raw).

    Raises:
        ValueError: blank text.
        NERError: the backend failed or returned inconsistent predictions.
    """
    if not text.strip():
        raise ValueError("NER needs a non-empty text")
    spans = to_spans(text, backend.predict(text))
    return merge_duplicates(with_sentences(text, spans))


# --------------------------------------------------------------------------- threshold


class ThresholdConfig(BaseModel):
    """Dynamic confidence threshold of Algorithm 2 (paper defaults)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lambda_init: float = Field(default=0.8, gt=0.0, le=1.0)  # initial threshold λ_init (τ_0)
    delta: Weight = Field(default=0.1, gt=0.0)  # threshold step Δλ (Δ)
    floor: float = Field(default=0.1, gt=0.0, le=1.0)  # lowest threshold tried
    n_min: Items = Field(default=1, ge=1)  # entities wanted before stopping (n_min)

    @model_validator(mode="after")
    def _ordered(self) -> ThresholdConfig:
        if self.floor > self.lambda_init:
            raise ValueError(f"floor {self.floor} is above lambda_init {self.lambda_init}")
        return self

    def thresholds(self) -> list[float]:
        """Every threshold the loop may try, highest first.

        Computed as λ_init − i·Δλ and rounded to 9 decimals, so that 0.8 − 7·0.1 is 0.1
        and not 0.09999999999999987 (which would skip the floor).
        """
        steps = int((self.lambda_init - self.floor) / self.delta + 1e-9)
        return [round(self.lambda_init - i * self.delta, 9) for i in range(steps + 1)]


class ThresholdResult(BaseModel):
    """Outcome of the dynamic threshold.

    Attributes:
        selected: entities whose confidence reached `threshold`, in input order.
        threshold: the last threshold applied (None when there was nothing to filter).
        tried: thresholds applied, in order.
        satisfied: whether at least n_min entities passed.
    """

    model_config = ConfigDict(extra="forbid")

    selected: list[Entity]
    threshold: float | None
    tried: list[float]
    satisfied: bool


def dynamic_threshold(
    entities: Sequence[Entity], config: ThresholdConfig | None = None
) -> ThresholdResult:
    """Keep confident entities, lowering the bar until at least n_min pass (Algorithm 2).

    The threshold starts at λ_init and drops by Δλ while fewer than n_min entities reach
    it, down to the floor. If even the floor lets fewer than n_min through, whatever
    passes at the floor is returned (possibly nothing) with ``satisfied=False``, as the
    algorithm does. No entities in, no entities out.
    """
    config = config or ThresholdConfig()
    if not entities:
        return ThresholdResult(selected=[], threshold=None, tried=[], satisfied=False)
    tried: list[float] = []
    selected: list[Entity] = []
    for tau in config.thresholds():
        tried.append(tau)
        selected = [e for e in entities if e.confidence >= tau]
        if len(selected) >= config.n_min:
            break
    return ThresholdResult(
        selected=selected,
        threshold=tried[-1],
        tried=tried,
        satisfied=len(selected) >= config.n_min,
    )


class EntityExtraction(BaseModel):
    """Raw entities of a text and those that passed the dynamic threshold."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    raw: list[Entity]
    filtered: ThresholdResult


def extract_entities(
    text: str, backend: NERBackend, config: ThresholdConfig | None = None
) -> EntityExtraction:
    """NER, unit and duplicate merging, then the dynamic threshold, in one call.

    Raises:
        ValueError: blank text.
        NERError: the backend failed.
    """
    raw = recognise(text, backend)
    return EntityExtraction(backend=backend.name, raw=raw, filtered=dynamic_threshold(raw, config))
