"""Claim extraction, the stage every front end and method that checks a text's
statements one by one shares (SAFE, FacTool, FactCheck-GPT; the documents front end).

A text becomes a list of `ExtractedClaim`s in six steps:

1. **sentences**: `veracity.nlp.text.sentence_spans` (rules, no model);
2. **decomposition**: per sentence, the model lists the sentence's atomic claims
   (`claims_decompose.j2`); it is shown the sentence's neighbourhood (``window_sentences``
   sentences either side, at most ``context_chars`` characters, fenced) and, when the
   text answers one, the question (VeriScore and SAFE read it too);
3. **decontextualisation**: per sentence, each of its claims is rewritten to be
   understood alone: pronouns and short references resolved from the same neighbourhood
   and question (`claims_decontextualise.j2`; the reply must hold one rewrite per claim);
4. **anchoring**: a claim whose content does not come from the sentence it is attached to
   is re-attached to the sentence it does come from, or dropped (`anchor`, below);
5. **check-worthiness**: each claim is put in a category (`claims_checkworthy.j2`; the
   text's start and the question shown). ``factual`` is checked; another category leaves
   the claim unchecked only when the model is *confident*, which here means a second
   signal agrees with it (`confident_not_factual`): the claim names nothing checkable
   (no number, date, number word or name), or its wording has the category's form (a
   question mark; a first-person or judging word for an opinion; "you", "should" and
   the like for advice). Any other claim is checked anyway (its ``category`` becomes
   ``factual``, the model's answer kept in ``model_category``);
6. **de-duplication**: a claim whose words overlap an earlier claim's at or above
   ``dedupe_threshold`` (Jaccard) is merged into it, its spans added to the earlier
   one's, unless the two differ in a negation, a number or date, or a name: "did not
   report a profit" never merges into "did report a profit", nor "2.1 million" into
   "2.2 million" (`same_claim`).

**Window mode** (``ExtractionConfig.mode="window"``) does steps 2, 3 and 5 in one call per
``sentences_per_call`` sentences (`claims_window.j2`): the model sees the window's
sentences numbered and fenced, the question, and up to ``window_sentences`` sentences
either side as context, and returns each claim self-contained, with the number(s) of the
sentence(s) it comes from and its category. The numbers are bounded in the reply schema
(the embedded decoder keeps to them) but not trusted: numbers outside the window are left
out, and a claim left with none is placed by anchoring (re-attached within its window) or
dropped. Steps 4 and 6 and the confidence rule of step 5 run on each claim as in sentence
mode. A window whose reply is still invalid after one retry is extracted sentence by
sentence instead (counted, ``window_fallbacks``). `ClaimExtractor.stream` yields each
window's new claims as soon as its reply is in (windows are asked one after another, so
a checker consuming the stream shares the model with the next window); `extract` collects
the stream. Sentence mode runs the steps as listed, one call each, and yields once.
A dropped claim whose reply named no sentence of its window has ``sentence`` -1, no span.

**Anchoring** (step 4; a small model writes claims that are in no sentence, e.g. words of
the prompt itself, or attaches a claim to the wrong sentence). Content words are the
lower-cased words less function words, lightly stemmed; numbers and dates are compared
exactly (``1,000`` = ``1000``). A claim is anchored in a sentence when (a) at least one of
its content words or numbers is in the sentence itself, (b) at least ``ANCHOR_SHARE``
(half) of its content words are in the sentence, its window or the question, and (c)
each of its numbers is there too. (b) measures against the window and question because
decontextualisation rightly adds resolved names from them ("She" -> "Marie Curie"); half
lets an atomic claim of a few words gain a two-word name and a one-word noun and still
pass, while a sentence made up by the model shares almost none of its words. A claim not
anchored where it is attached is moved to the read sentence that shares most of its
content words if it is anchored there (``reattached``), else dropped
(``ClaimExtraction.dropped``, with its text, so a front end can show it).

Every claim keeps the character span(s) of the source sentence(s) it came from, so a
front end can show each verdict in place. Every reply is validated against a schema
(the decoder enforces it where it can); a reply that stays invalid after the
structured-output retries raises `StructuredOutputError`, never a made-up claim. Steps
3–6 can be turned off (`ExtractionConfig`); without decomposition each sentence is one
claim. Prompts live in ``veracity/evidence/prompts/`` (`PROMPTS`); a caller that lets its
users override them binds a `veracity.prompting.PromptBundle` to that package.

A claim that was extracted already is not split again: a caller that hands a claim
method an atomic claim (the document checker, the document task's annotated claims)
wraps the check in `given_atomic(text)`, and an extraction of that text inside it (SAFE's,
FacTool's, FactCheck-GPT's) gives the text back as its one claim, without a model call.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Iterator, Sequence
from contextvars import ContextVar
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core import context
from veracity.core.bounds import MaxTokens
from veracity.core.errors import StructuredOutputError
from veracity.core.events import Stage
from veracity.core.labels import LabelSpace
from veracity.evidence.claim_text import (
    ANCHOR_SHARE,
    anchored,
    confident_not_factual,
    content_words,
    same_claim,
    word_overlap,
)
from veracity.llm.base import LLM
from veracity.llm.structured import complete_structured
from veracity.nlp.text import sentence_spans
from veracity.prompting import PromptBundle, render_messages, truncate_chars, using_prompts

__all__ = [
    "ANCHOR_SHARE",
    "CATEGORIES",
    "PROMPTS",
    "Anchoring",
    "ClaimExtraction",
    "ClaimExtractor",
    "ClaimStream",
    "ExtractedClaim",
    "ExtractionConfig",
    "anchor",
    "anchored",
    "confident_not_factual",
    "conjunction_label",
    "content_words",
    "dedupe",
    "given_atomic",
    "same_claim",
    "word_overlap",
]

PROMPTS = "veracity.evidence"
Category = Literal["factual", "opinion", "advice", "question", "trivial"]
Mode = Literal["window", "sentence"]
CATEGORIES: tuple[str, ...] = ("factual", "opinion", "advice", "question", "trivial")
_NONSPACE = re.compile(r"\S")
_CUT = re.compile(r" \[…[\d,]+ characters cut\]$")
_GIVEN: ContextVar[str | None] = ContextVar("veracity_given_atomic_claim", default=None)


class ExtractionConfig(BaseModel):
    """What the extraction does and how much of the text it reads."""

    model_config = ConfigDict(extra="forbid")

    # window: one call per `sentences_per_call` sentences gives their self-contained claims,
    # each with its sentence number(s) and category; sentence: a decomposition and a
    # decontextualisation call per sentence, then one check-worthiness call. Without
    # `decompose` each sentence is one claim in either mode (no window call).
    mode: Mode = "window"
    sentences_per_call: int = Field(default=8, ge=1, le=40)  # window mode's window
    decompose: bool = True  # atomic claims per sentence (False: each sentence is a claim)
    decontextualise: bool = True  # rewrite each claim to stand alone
    checkworthiness: bool = True  # sort claims into categories; factual ones are checked
    anchoring: bool = True  # drop or re-attach claims not made of their sentence's words
    dedupe_threshold: float = Field(default=0.8, gt=0.0, le=1.0)  # word-set overlap (Jaccard)
    max_sentences: int = Field(default=40, ge=1, le=1000)  # sentences read, from the start
    max_claims_per_sentence: int = Field(default=6, ge=1, le=20)
    max_claim_chars: int = Field(default=300, ge=20, le=2000)
    # sentences shown either side of the one being split, and the most characters of
    # text shown as context (that window; the text's start to the check-worthiness step)
    window_sentences: int = Field(default=3, ge=0, le=20)
    context_chars: int = Field(default=2000, ge=100, le=20_000)  # in every step's prompt
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: MaxTokens = Field(default=512, ge=16)


class ExtractedClaim(BaseModel):
    """One claim of the text.

    Attributes:
        id: ``c1``, ``c2``, … in text order.
        text: the claim as it is checked (decontextualised when that step ran).
        atomic: the claim as decomposition wrote it, before decontextualisation.
        spans: ``(start, end)`` character spans of the source sentence(s) it came from.
        sentence: index of the first sentence it came from.
        category: its check-worthiness category (None: not assessed).
        merged: how many later duplicates were merged into it.
        model_category: the category the model gave when it was overruled (None: not
            overruled): a claim put in a non-factual category that has a number, date or
            name is checked, its ``category`` made ``factual``.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    atomic: str
    spans: list[tuple[int, int]]
    sentence: int
    category: Category | None = None
    merged: int = 0
    # the model's category when it was overruled (it said "advice" of a claim that names a
    # date, a number or a name: not confidently non-factual, so checked; see step 5)
    model_category: Category | None = None

    @property
    def checkworthy(self) -> bool:
        """Factual, or not assessed."""
        return self.category in (None, "factual")


class ClaimExtraction(BaseModel):
    """What `ClaimExtractor.extract` found.

    Attributes:
        claims: the claims after de-duplication, in text order, every category.
        sentences: the sentence spans read.
        duplicates: claims merged into an earlier one.
        truncated: sentences past ``max_sentences`` were not read.
        dropped: claims dropped as not anchored in any sentence read (step 4), as the
            model wrote them, with the sentence they were attached to.
        reattached: claims moved from the sentence they were attached to to the one
            their content comes from (step 4).
        window_fallbacks: windows whose reply stayed invalid after a retry and were
            extracted sentence by sentence instead (window mode).
    """

    model_config = ConfigDict(extra="forbid")

    claims: list[ExtractedClaim]
    sentences: list[tuple[int, int]]
    duplicates: int = 0
    truncated: bool = False
    dropped: list[ExtractedClaim] = Field(default_factory=list)
    reattached: int = 0
    window_fallbacks: int = 0

    @property
    def checkworthy(self) -> list[ExtractedClaim]:
        return [c for c in self.claims if c.checkworthy]


def _list_model(name: str, item: object, low: int, high: int, description: str) -> type:
    return create_model(
        name,
        __config__=ConfigDict(extra="forbid"),
        claims=(list[item], Field(min_length=low, max_length=high, description=description)),  # type: ignore[valid-type]
    )


class ClaimExtractor:
    """Text -> atomic, self-contained, check-worthy claims with their spans (async).

    Args:
        llm: the model (normally the method's `ManagedLLM`, so calls are cached and traced).
        config: the steps and their bounds.
        tag: the trace label of the calls (``<tag>:decompose:<sentence>``, …).
    """

    def __init__(
        self,
        llm: LLM,
        config: ExtractionConfig | None = None,
        *,
        tag: str = "claims",
        prompts: PromptBundle | None = None,
    ):
        self.llm = llm
        self.config = config or ExtractionConfig()
        self.tag = tag
        self.prompts = prompts  # overrides bound to `PROMPTS` (a run's ``prompts.claims``)

    async def extract(self, text: str, *, question: str | None = None) -> ClaimExtraction:
        """The claims of `text` (see the module docstring): what `stream` yields, collected.

        Args:
            text: the text.
            question: the question `text` answers, if it answers one (shown to the steps).

        Raises:
            ValueError: a blank text.
            StructuredOutputError: a step's reply stayed invalid after its retries.
        """
        found = _Found(self.config.dedupe_threshold)
        async for _ in self._stream(text, question, found):
            pass
        return found.result()

    def stream(self, text: str, *, question: str | None = None) -> ClaimStream:
        """The claims of `text`, window by window: each window's new claims (ids ``c1``,
        ``c2``, … in text order) as soon as its reply is in, so a caller can check the
        first claims while later windows are extracted. A claim repeating one yielded
        before is not yielded again: its spans join the earlier claim's (the same object,
        so a caller holding it sees them). Sentence mode yields once, at the end. Once it
        ends, the stream's `result` is what `extract` returns.

        Raises (while iterated):
            ValueError: a blank text (on the first step).
            StructuredOutputError: a step's reply stayed invalid after its retries.
        """
        found = _Found(self.config.dedupe_threshold)
        return ClaimStream(self._stream(text, question, found), found)

    async def categorise(
        self, claims: Sequence[str], text: str, *, question: str | None = None
    ) -> list[str]:
        """The check-worthiness category of each of `claims` (claims of `text`), in order,
        by the extraction's own step (Factcheck-Bench's check-worthiness subtask runs it
        over the annotated claims). Empty for no claims.

        Raises:
            StructuredOutputError: the reply stayed invalid after its retries.
        """
        if not claims:
            return []
        found = [ExtractedClaim(id="", text=c, atomic=c, spans=[], sentence=0) for c in claims]
        shown = truncate_chars(text, self.config.context_chars)
        question = " ".join(question.split()) if question and question.strip() else None
        done = await self._categorise(found, shown, question)
        return [str(c.category) for c in done]

    def _given(self, text: str) -> ClaimExtraction:
        """`text` as its own one claim: it was extracted before (see `given_atomic`)."""
        whole = " ".join(_CUT.sub("", text).split())
        claim = ExtractedClaim(
            id="c1", text=whole, atomic=whole, spans=[(0, len(text))], sentence=0
        )
        context.current().emit(
            Stage(
                name=self.tag,
                step="claim given atomic: not split again",
                detail={"sentences": 1, "claims": 1, "checkworthy": 1, "duplicates": 0},
            )
        )
        return ClaimExtraction(claims=[claim], sentences=[(0, len(text))])

    async def _stream(
        self, text: str, question: str | None, found: _Found
    ) -> AsyncIterator[list[ExtractedClaim]]:
        if not text.strip():
            raise ValueError("claim extraction needs a non-empty text")
        if _is_given(text):
            given = self._given(text)
            found.sentences = given.sentences
            yield found.add(given.claims)
            return
        cfg = self.config
        question = " ".join(question.split()) if question and question.strip() else None
        # Splitting is CPU work on text of any length: it runs in a worker thread (the
        # server's event loop keeps answering) and stops past the last sentence read and
        # its window (one more, so `truncated` is known).
        limit = cfg.max_sentences + cfg.window_sentences + 1
        spans = await asyncio.to_thread(sentence_spans, text, limit=limit)
        read = spans[: cfg.max_sentences]
        found.sentences, found.truncated = read, len(spans) > len(read)
        doc = _Text(text, spans, read, question, cfg)
        if cfg.mode == "window" and cfg.decompose:
            size = cfg.sentences_per_call
            for number, first in enumerate(range(0, len(read), size)):
                indices = range(first, min(first + size, len(read)))
                claims = await self._window(doc, indices, number, found)
                if new := found.add(claims):
                    yield new
        elif new := found.add(await self._sentences(doc, range(len(read)), found)):
            yield new
        claims = found.claims
        context.current().emit(
            Stage(
                name=self.tag,
                step="claims extracted",
                detail={
                    "sentences": len(read),
                    "claims": len(claims),
                    "checkworthy": sum(c.checkworthy for c in claims),
                    "duplicates": found.duplicates,
                    "dropped_unanchored": len(found.dropped),
                    "reattached": found.reattached,
                    "window_fallbacks": found.fallbacks,
                },
            )
        )

    async def _sentences(self, doc: _Text, indices: range, found: _Found) -> list[ExtractedClaim]:
        """Sentence mode over `indices`: a decomposition and a decontextualisation call per
        sentence, anchoring among these sentences, one check-worthiness call."""
        cfg, read = self.config, doc.read
        per_sentence = await asyncio.gather(
            *(self._sentence(i, doc.sentence(i), doc.around[i], doc.question) for i in indices)
        )
        claims = [
            ExtractedClaim(id="", text=rewritten, atomic=atomic, spans=[read[i]], sentence=i)
            for i, items in zip(indices, per_sentence, strict=True)
            for atomic, rewritten in items
        ]
        if cfg.anchoring and (cfg.decompose or cfg.decontextualise) and claims:
            claims = self._anchor(doc, indices, claims, found)
        if cfg.checkworthiness and claims:
            claims = await self._categorise(claims, doc.shown, doc.question)
        return claims

    async def _window(
        self, doc: _Text, indices: range, number: int, found: _Found
    ) -> list[ExtractedClaim]:
        """Window mode: the claims of the sentences `indices` in one call (one retry); a
        reply that stays invalid falls back to sentence mode for these sentences."""
        cfg, first, n = self.config, indices[0], len(indices)
        model = _window_model(n, cfg)
        before, after = doc.outside(indices)
        try:
            items = await self._ask(
                "claims_window.j2", model, f"window:{number}", attempts=2,
                sentences=[doc.sentence(i) for i in indices], before=before, after=after,
                question=doc.question, max_claims=cfg.max_claims_per_sentence,
                rewrite=cfg.decontextualise, categories=CATEGORIES if cfg.checkworthiness else (),
            )  # fmt: skip
        except StructuredOutputError:
            found.fallbacks += 1
            return await self._sentences(doc, indices, found)
        claims = []
        for item in items:
            said = " ".join(item.text.split())
            # sentence numbers are the model's: only those of this window are kept; a
            # claim with none is placed by anchoring (or dropped), never guessed
            numbers = sorted({k for k in item.sentences if 1 <= k <= n})
            claim = ExtractedClaim(
                id="", text=said, atomic=said, sentence=first + numbers[0] - 1 if numbers else -1,
                spans=[doc.read[first + k - 1] for k in numbers],
            )  # fmt: skip
            if cfg.checkworthiness:
                claim = _judged(claim, item.category)
            claims.append(claim)
        claims = [c for c in claims if c.text]
        if cfg.anchoring:
            return self._anchor(doc, indices, claims, found)
        found.dropped.extend(c for c in claims if c.sentence < 0)
        return sorted((c for c in claims if c.sentence >= 0), key=lambda c: c.sentence)

    def _anchor(
        self, doc: _Text, indices: range, claims: list[ExtractedClaim], found: _Found
    ) -> list[ExtractedClaim]:
        """`anchor` among the sentences `indices` (a claim moves only within them)."""
        first = indices[0]
        local = [c.model_copy(update={"sentence": c.sentence - first}) if c.sentence >= 0
                 else c for c in claims]  # fmt: skip
        result = anchor(
            local,
            [doc.sentence(i) for i in indices],
            [f"{doc.around[i]}\n{doc.question or ''}" for i in indices],
            [doc.read[i] for i in indices],
        )
        found.dropped.extend(
            c.model_copy(update={"sentence": c.sentence + first}) if c.sentence >= 0 else c
            for c in result.dropped
        )
        found.reattached += result.reattached
        return [c.model_copy(update={"sentence": c.sentence + first}) for c in result.kept]

    async def _sentence(
        self, index: int, sentence: str, shown: str, question: str | None
    ) -> list[tuple[str, str]]:
        """(atomic claim, its self-contained form) for each claim of one sentence."""
        cfg = self.config
        atomic = [sentence.strip()]
        if cfg.decompose:
            atomic = await self._decompose(index, sentence, shown, question)
        rewritten = atomic
        if cfg.decontextualise and atomic:
            rewritten = await self._decontextualise(index, sentence, atomic, shown, question)
        return list(zip(atomic, rewritten, strict=True))

    async def _ask(
        self, template: str, model: type, step: str, *, attempts: int = 3, **variables: object
    ) -> list:
        # the run's prompt overrides are bound around the rendering only: a stream's
        # caller runs between its steps, outside them
        with using_prompts(self.prompts) if self.prompts else contextlib.nullcontext():
            messages = render_messages(PROMPTS, template, **variables)
        result = await complete_structured(
            self.llm,
            messages,
            model,
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
            attempts=attempts,
            tag=f"{self.tag}:{step}",
        )
        return list(result.value.claims)  # type: ignore[attr-defined]

    async def _decompose(
        self, index: int, sentence: str, shown: str, question: str | None
    ) -> list[str]:
        cfg = self.config
        item = _claim_text(cfg.max_claim_chars)
        model = _list_model(
            "AtomicClaims", item, 0, cfg.max_claims_per_sentence,
            "the sentence's atomic claims, each one short statement",
        )  # fmt: skip
        claims = await self._ask(
            "claims_decompose.j2", model, f"decompose:{index}", text=shown, sentence=sentence,
            max_claims=cfg.max_claims_per_sentence, question=question,
        )  # fmt: skip
        return _unique([" ".join(c.split()) for c in claims if c.strip()])

    async def _decontextualise(
        self, index: int, sentence: str, atomic: list[str], shown: str, question: str | None
    ) -> list[str]:
        n, item = len(atomic), _claim_text(self.config.max_claim_chars)
        model = _list_model(
            "SelfContainedClaims", item, n, n, "each claim rewritten to stand alone, same order"
        )
        rewritten = await self._ask(
            "claims_decontextualise.j2", model, f"decontextualise:{index}",
            text=shown, sentence=sentence, claims=atomic, question=question,
        )  # fmt: skip
        return [" ".join(r.split()) or a for r, a in zip(rewritten, atomic, strict=True)]

    async def _categorise(
        self, found: list[ExtractedClaim], shown: str, question: str | None
    ) -> list[ExtractedClaim]:
        n = len(found)
        model = _list_model(
            "ClaimCategories", Category, n, n, "one category per claim, in the order given"
        )
        categories = await self._ask(
            "claims_checkworthy.j2", model, "checkworthy", text=shown,
            claims=[c.text for c in found], question=question,
        )  # fmt: skip
        return [_judged(claim, said) for claim, said in zip(found, categories, strict=True)]


class Anchoring(BaseModel):
    """What `anchor` did: the claims kept (some re-attached), and those dropped."""

    kept: list[ExtractedClaim]
    dropped: list[ExtractedClaim]
    reattached: int = 0


def anchor(
    claims: Sequence[ExtractedClaim],
    sentences: Sequence[str],
    contexts: Sequence[str],
    spans: Sequence[tuple[int, int]],
) -> Anchoring:
    """Keep each claim anchored in its sentence (`anchored`); move one that is not to the
    sentence sharing most of its content words when it is anchored there; drop the rest.

    Args:
        claims: one span each, ``sentence`` indexing `sentences`.
        sentences: the sentences read, with `contexts` (window and question) and `spans`.
    """
    kept: list[ExtractedClaim] = []
    dropped: list[ExtractedClaim] = []
    moved = 0
    bags = [content_words(s) for s in sentences]
    for claim in claims:
        i = claim.sentence
        if 0 <= i < len(sentences) and anchored(claim.text, sentences[i], contexts[i]):
            kept.append(claim)
            continue
        words, numbers = content_words(claim.text)
        shared = [len(words & w) + len(numbers & n) for w, n in bags]
        best = max(range(len(sentences)), key=lambda j: (shared[j], -abs(j - i)), default=None)
        if (
            best is not None
            and best != i
            and shared[best] > 0
            and anchored(claim.text, sentences[best], contexts[best])
        ):
            kept.append(claim.model_copy(update={"sentence": best, "spans": [spans[best]]}))
            moved += 1
        else:
            dropped.append(claim)
    kept.sort(key=lambda c: c.sentence)  # text order (stable within a sentence)
    return Anchoring(kept=kept, dropped=dropped, reattached=moved)


class _Text:
    """The text being extracted, its sentences and what each step shows around them."""

    def __init__(
        self,
        text: str,
        spans: list[tuple[int, int]],
        read: list[tuple[int, int]],
        question: str | None,
        cfg: ExtractionConfig,
    ):
        self.text, self.spans, self.read, self.question, self.cfg = text, spans, read, question, cfg
        self.shown = truncate_chars(text, cfg.context_chars)  # the text's start
        self.around = [window(text, spans, i, cfg) for i in range(len(read))]

    def sentence(self, index: int) -> str:
        start, end = self.read[index]
        return self.text[start:end]

    def outside(self, indices: range) -> tuple[str, str]:
        """Up to ``window_sentences`` sentences before and after the sentences `indices`,
        at most ``context_chars`` characters together ("" where there are none)."""
        k, spans, half = self.cfg.window_sentences, self.spans, self.cfg.context_chars // 2
        if not k:
            return "", ""
        lo, hi = max(0, indices[0] - k), min(len(spans) - 1, indices[-1] + k)
        before = self.text[spans[lo][0] : spans[indices[0]][0]].strip()
        after = self.text[spans[indices[-1]][1] : spans[hi][1]].strip()
        # what is nearest the window is kept; ``[…]`` marks text left out
        cut = len(before) > half
        before = before[len(before) - half :] if cut else before
        if before and (cut or _NONSPACE.search(self.text, 0, spans[lo][0])):
            before = f"[…] {before}"
        cut = len(after) > half
        after = after[:half] if cut else after
        if after and (cut or _NONSPACE.search(self.text, spans[hi][1])):
            after = f"{after} […]"
        return before, after


class ClaimStream:
    """`ClaimExtractor.stream`: an async iterator of each window's new claims; `result()`,
    once it ends, the whole extraction (sentences, duplicates, dropped claims...)."""

    def __init__(self, batches: AsyncIterator[list[ExtractedClaim]], found: _Found):
        self._batches = batches
        self._found = found

    def __aiter__(self) -> ClaimStream:
        return self

    async def __anext__(self) -> list[ExtractedClaim]:
        return await anext(self._batches)

    def result(self) -> ClaimExtraction:
        """What was extracted (complete once the iteration ended)."""
        return self._found.result()


class _Found:
    """What one extraction found so far: the claims yielded (de-duplicated, numbered) and
    what was counted on the way."""

    def __init__(self, threshold: float):
        self.threshold = threshold
        self.claims: list[ExtractedClaim] = []
        self.sentences: list[tuple[int, int]] = []
        self.truncated = False
        self.duplicates = self.reattached = self.fallbacks = 0
        self.dropped: list[ExtractedClaim] = []

    def add(self, claims: list[ExtractedClaim]) -> list[ExtractedClaim]:
        """`claims` less those repeating one found before (merged into it), numbered."""
        new = []
        for claim in claims:
            if _merge(self.claims, claim, self.threshold):
                self.duplicates += 1
                continue
            kept = claim.model_copy(update={"id": f"c{len(self.claims) + 1}",
                                            "spans": list(claim.spans)})  # fmt: skip
            self.claims.append(kept)
            new.append(kept)
        return new

    def result(self) -> ClaimExtraction:
        return ClaimExtraction(
            claims=self.claims,
            sentences=self.sentences,
            duplicates=self.duplicates,
            truncated=self.truncated,
            dropped=self.dropped,
            reattached=self.reattached,
            window_fallbacks=self.fallbacks,
        )


def _judged(claim: ExtractedClaim, said: str | None) -> ExtractedClaim:
    """`claim` with the category the model gave it, unless it is not confidently
    non-factual (step 5): then ``factual``, the model's answer kept beside."""
    if said is None:  # the window reply gave none: checked
        return claim.model_copy(update={"category": "factual"})
    if said == "factual" or confident_not_factual(claim.text, said):
        return claim.model_copy(update={"category": said})
    return claim.model_copy(update={"category": "factual", "model_category": said})


def _window_model(n: int, cfg: ExtractionConfig) -> type:
    """The reply of a window of `n` sentences: its claims, each with the number(s) of its
    sentence(s) and (with check-worthiness) a category. The numbers' bounds are in the
    schema (the decoder keeps to them) but not validated: a number outside the window is
    left out by the caller, not a failed reply."""
    numbers = Annotated[int, Field(json_schema_extra={"minimum": 1, "maximum": n})]
    fields: dict[str, object] = {
        "sentences": (list[numbers], Field(min_length=1, max_length=3)),  # type: ignore[valid-type]
        "text": (str, Field(min_length=1, max_length=cfg.max_claim_chars)),
    }
    if cfg.checkworthiness:
        fields["category"] = (Category, ...)
    item = create_model("WindowClaim", __config__=ConfigDict(extra="forbid"), **fields)  # type: ignore[call-overload]
    return _list_model(
        "WindowClaims", item, 0, cfg.max_claims_per_sentence * n,
        "the claims of the numbered sentences, in order",
    )  # fmt: skip


def _claim_text(max_chars: int) -> object:
    """A non-blank string of at most `max_chars`, as a list item type."""
    return Annotated[str, Field(min_length=1, max_length=max_chars)]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def window(text: str, spans: Sequence[tuple[int, int]], index: int, cfg: ExtractionConfig) -> str:
    """The text around sentence `index`: up to ``window_sentences`` sentences either side,
    fewer while it is longer than ``context_chars`` (the sentence alone, cut, at worst);
    ``[…]`` marks text left out before or after."""
    for k in range(cfg.window_sentences, -1, -1):
        lo, hi = max(0, index - k), min(len(spans) - 1, index + k)
        shown = text[spans[lo][0] : spans[hi][1]].strip()
        if len(shown) <= cfg.context_chars or k == 0:
            break
    shown = truncate_chars(shown, cfg.context_chars)
    # is there text before or after? found by a search that stops at the first non-space
    # character, not by copying the rest of the text for every sentence read
    before = "[…] " if _NONSPACE.search(text, 0, spans[lo][0]) else ""
    after = " […]" if _NONSPACE.search(text, spans[hi][1]) else ""
    return f"{before}{shown}{after}"


def dedupe(claims: list[ExtractedClaim], threshold: float) -> tuple[list[ExtractedClaim], int]:
    """`claims` without the ones that repeat an earlier claim (`same_claim`: word overlap
    at or above `threshold`, the same negations, numbers, dates and names); a repeat's
    spans join the earlier claim's. Returns the claims kept and how many were merged."""
    kept: list[ExtractedClaim] = []
    merged = 0
    for claim in claims:
        if _merge(kept, claim, threshold):
            merged += 1
        else:
            kept.append(claim.model_copy(update={"spans": list(claim.spans)}))
    return kept, merged


def _merge(kept: list[ExtractedClaim], claim: ExtractedClaim, threshold: float) -> bool:
    """Merge `claim` into the first of `kept` it repeats (its spans added); False: none."""
    same = next((k for k in kept if same_claim(k.text, claim.text, threshold)), None)
    if same is None:
        return False
    same.spans.extend(s for s in claim.spans if s not in same.spans)
    same.merged += 1
    return True


@contextlib.contextmanager
def given_atomic(text: str) -> Iterator[None]:
    """Within the block, extracting `text` (or its start: a method may cut a long input)
    gives `text` back as its one claim, without a model call: the caller extracted it
    already, atomic and self-contained, so the claim method must not split it again."""
    token = _GIVEN.set(" ".join(text.split()))
    try:
        yield
    finally:
        _GIVEN.reset(token)


def _is_given(text: str) -> bool:
    given = _GIVEN.get()
    if not given:
        return False
    asked = " ".join(_CUT.sub("", text).split())
    cut = _CUT.search(text) is not None  # `truncate_chars` cut the input it was given
    return bool(asked) and (asked == given or (cut and given.startswith(asked)))


def conjunction_label(space: LabelSpace, holds: Sequence[bool]) -> str:
    """The label of a claim made of parts of which `holds` says which are true.

    Every part true: the space's most true label (highest score); none: its most false.
    Some: in a two-label space the most false (a conjunction with a false part is
    false); in a larger one the middle label whose score is nearest the share that holds.

    Raises:
        ValueError: no parts.
    """
    if not holds:
        raise ValueError("a conjunction of no parts has no label")
    ranked = sorted(space.labels, key=space.score)
    share = sum(holds) / len(holds)
    if share == 1.0:
        return ranked[-1]
    if share == 0.0 or len(ranked) == 2:
        return ranked[0]
    return min(ranked[1:-1], key=lambda label: abs(space.score(label) - share))
