"""LLM-based NER with a confidence per entity (ZoFia's "PromptNER" query variant; the
"Only-LLM NER" row is `query_mode: llm_keywords`, where the LLM names the keywords).

The LLM lists the entities of a text as JSON (structured output, prompt
``veracity/nlp/prompts/ner.j2``). Each entity's confidence comes from one of two places:

- ``"logprobs"`` (preferred): the mean probability of the reply tokens that spell the
  entity's ``text`` and ``label`` values. This is Eq. 2 applied to the tokens the model
  generated for that entity: a measured quantity, where a self-reported number is only
  more generated text.
- ``"self_reported"``: a ``confidence`` field the model fills in, for backends that give
  no token log-probabilities.

``"auto"`` (default) uses log-probabilities when the LLM declares that capability and
the self-reported number otherwise; the result always says which one was used.

The model's entity strings are then located in the text (all occurrences; longer names
claim their characters first, so "Biden" inside "Joe Biden" is not a separate mention).
Names the model gave that do not occur in the text are returned in `unmatched`, not
turned into mentions.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.llm.base import LLM, LLMResponse
from veracity.llm.reply_schema import clamped
from veracity.llm.structured import complete_structured
from veracity.nlp.entities import (
    Entity,
    EntityExtraction,
    EntitySpan,
    NERError,
    ThresholdConfig,
    dynamic_threshold,
    merge_duplicates,
    with_sentences,
)
from veracity.prompting import render_messages

DEFAULT_LABELS = ("PERSON", "ORGANIZATION", "LOCATION", "MISC")
ConfidenceSource = Literal["auto", "logprobs", "self_reported"]


@functools.cache
def output_model(labels: tuple[str, ...], self_report: bool) -> type[BaseModel]:
    """The reply schema: ``{"entities": [{"text", "label"[, "confidence"]}]}``."""
    fields: dict[str, Any] = {
        "text": (str, Field(min_length=1)),
        "label": (Literal[labels], ...),  # type: ignore[valid-type]
    }
    if self_report:
        fields["confidence"] = (clamped(0.0, 1.0), ...)  # decoders may ignore float bounds
    item = create_model("NamedEntity", __config__=ConfigDict(extra="forbid"), **fields)
    return create_model(
        "NamedEntities", __config__=ConfigDict(extra="forbid"), entities=(list[item], ...)
    )


class LLMNERResult(BaseModel):
    """What the LLM found, located in the text.

    Attributes:
        spans: every located mention, in text order (sentence indexes set).
        unmatched: names the model gave that do not occur in the text.
        confidence_source: "logprobs" or "self_reported".
        truncated: the text was cut to `max_chars` for the prompt.
    """

    model_config = ConfigDict(extra="forbid")

    spans: list[EntitySpan]
    unmatched: list[str]
    confidence_source: Literal["logprobs", "self_reported"]
    truncated: bool


class LLMNER:
    """Named entities from an LLM (async).

    Args:
        llm: the LLM to ask (normally a ManagedLLM, so the call is cached and traced).
        labels: the entity labels the model may use.
        confidence: where confidences come from (see the module docstring).
        max_chars: the text is cut to this many characters for the prompt.
        max_tokens: completion cap for the JSON reply.
        tag: trace label of the call.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        labels: tuple[str, ...] = DEFAULT_LABELS,
        confidence: ConfidenceSource = "auto",
        max_chars: int = 6000,
        max_tokens: int = 1024,
        tag: str = "ner",
    ):
        if not labels:
            raise ValueError("LLMNER needs at least one label")
        if confidence not in ("auto", "logprobs", "self_reported"):
            raise ValueError(f"unknown confidence source {confidence!r}")
        if confidence == "logprobs" and not llm.capabilities.logprobs:
            raise ValueError(f"{llm.backend_id} gives no token logprobs; use 'self_reported'")
        self.llm = llm
        self.labels = tuple(labels)
        self.confidence = confidence
        self.max_chars = max_chars
        self.max_tokens = max_tokens
        self.tag = tag
        self.name = f"llm:{llm.backend_id}"

    @property
    def source(self) -> Literal["logprobs", "self_reported"]:
        if self.confidence == "auto":
            return "logprobs" if self.llm.capabilities.logprobs else "self_reported"
        return self.confidence

    async def apredict(self, text: str) -> LLMNERResult:
        """Ask the LLM for the entities of `text` and locate them.

        Raises:
            ValueError: blank text.
            StructuredOutputError: no valid JSON after the allowed attempts.
            NERError: log-probabilities missing or not attributable to the entities.
        """
        if not text.strip():
            raise ValueError("NER needs a non-empty text")
        source = self.source
        shown = text[: self.max_chars]
        messages = render_messages(
            "veracity.nlp",
            "ner.j2",
            text=shown,
            labels=list(self.labels),
            self_report=source == "self_reported",
        )
        result = await complete_structured(
            self.llm,
            messages,
            output_model(self.labels, source == "self_reported"),
            max_tokens=self.max_tokens,
            logprobs=source == "logprobs",
            tag=self.tag,
        )
        items = [(e.text, e.label) for e in result.value.entities]  # type: ignore[attr-defined]
        if source == "logprobs":
            confidences = entity_logprob_confidences(result.response, items)
        else:
            confidences = [e.confidence for e in result.value.entities]  # type: ignore[attr-defined]
        spans, unmatched = locate_entities(text, items, confidences)
        return LLMNERResult(
            spans=with_sentences(text, spans),
            unmatched=unmatched,
            confidence_source=source,
            truncated=len(text) > self.max_chars,
        )


async def arecognise(text: str, ner: LLMNER) -> list[Entity]:
    """Merged entities of `text` found by the LLM (the async counterpart of `recognise`)."""
    return merge_duplicates((await ner.apredict(text)).spans)


async def aextract_entities(
    text: str, ner: LLMNER, config: ThresholdConfig | None = None
) -> EntityExtraction:
    """LLM NER followed by the dynamic threshold (async `extract_entities`)."""
    raw = await arecognise(text, ner)
    return EntityExtraction(backend=ner.name, raw=raw, filtered=dynamic_threshold(raw, config))


_STRING = r'"((?:[^"\\]|\\.)*)"'


def _value_spans(joined: str, key: str) -> list[tuple[int, int, str]]:
    """(start, end, decoded value) of every ``"key": "value"`` string in `joined`."""
    out = []
    for m in re.finditer(rf'"{key}"\s*:\s*{_STRING}', joined):
        out.append((m.start(1), m.end(1), json.loads(f'"{m.group(1)}"')))
    return out


def entity_logprob_confidences(response: LLMResponse, items: list[tuple[str, str]]) -> list[float]:
    """Mean token probability over each entity's ``text`` and ``label`` values.

    Offsets are taken on the concatenated tokens (not the reply text, which a server may
    have post-processed). The i-th ``"text"`` and ``"label"`` strings belong to the i-th
    entity; any disagreement with the parsed entities is an error.

    Raises:
        NERError: the response has no logprobs or they cannot be matched to the entities.
    """
    if not response.logprobs:
        raise NERError("the LLM returned no token logprobs for the NER reply")
    tokens = response.logprobs
    joined = "".join(t.token for t in tokens)
    texts, labels = _value_spans(joined, "text"), _value_spans(joined, "label")
    if [t[2] for t in texts] != [i[0] for i in items] or [x[2] for x in labels] != [
        i[1] for i in items
    ]:
        raise NERError("NER reply tokens do not match the parsed entities")
    bounds, offset = [], 0
    for tok in tokens:
        bounds.append((offset, offset + len(tok.token)))
        offset += len(tok.token)
    confidences = []
    for (ts, te, _), (ls, le, _) in zip(texts, labels, strict=True):
        probs = [
            tok.prob
            for tok, (a, b) in zip(tokens, bounds, strict=True)
            if (a < te and b > ts) or (a < le and b > ls)
        ]
        confidences.append(sum(probs) / len(probs))
    return confidences


def _name_pattern(name: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(w) for w in name.split())
    left = r"(?<!\w)" if name[:1].isalnum() else ""
    right = r"(?!\w)" if name[-1:].isalnum() else ""
    return re.compile(left + body + right)


def locate_entities(
    text: str, items: list[tuple[str, str]], confidences: list[float]
) -> tuple[list[EntitySpan], list[str]]:
    """Every occurrence of each (name, label) in `text` as a span with its confidence.

    Exact-case matches are used when there are any, case-insensitive ones otherwise.
    Longer names claim their characters first; overlapping shorter matches are skipped.

    Returns:
        (spans in text order, names not found in the text).
    """
    taken = [False] * len(text)
    spans: list[EntitySpan] = []
    unmatched: list[str] = []
    order = sorted(range(len(items)), key=lambda i: -len(items[i][0]))
    for i in order:
        name, label = items[i]
        if not name.strip():
            continue
        pattern = _name_pattern(name.strip())
        found = list(pattern.finditer(text)) or list(
            re.compile(pattern.pattern, re.I).finditer(text)
        )
        free = [m for m in found if not any(taken[m.start() : m.end()])]
        if not found:
            unmatched.append(name)
        for m in free:
            taken[m.start() : m.end()] = [True] * (m.end() - m.start())
            spans.append(
                EntitySpan(
                    text=m.group(0),
                    label=label,
                    start=m.start(),
                    end=m.end(),
                    confidence=confidences[i],
                )
            )
    return sorted(spans, key=lambda s: s.start), unmatched
