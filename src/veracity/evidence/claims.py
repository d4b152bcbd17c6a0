"""Claim extraction, the stage every front end and method that checks a text's
statements one by one shares (SAFE, FacTool, FactCheck-GPT; the documents front end).

A text becomes a list of `ExtractedClaim`s in five steps:

1. **sentences**: `veracity.nlp.text.sentence_spans` (rules, no model);
2. **decomposition**: per sentence, the model lists the sentence's atomic claims
   (`claims_decompose.j2`); it is shown the sentence's neighbourhood (``window_sentences``
   sentences either side, at most ``context_chars`` characters, fenced) and, when the
   text answers one, the question (VeriScore and SAFE read it too);
3. **decontextualisation**: per sentence, each of its claims is rewritten to be
   understood alone: pronouns and short references resolved from the same neighbourhood
   and question (`claims_decontextualise.j2`; the reply must hold one rewrite per claim);
4. **check-worthiness**: each claim is put in a category, ``factual`` being the only
   check-worthy one (`claims_checkworthy.j2`; the text's start and the question shown);
5. **de-duplication**: a claim whose words overlap an earlier claim's at or above
   ``dedupe_threshold`` (Jaccard) is merged into it, its spans added to the earlier
   one's, unless the two differ in a negation, a number or date, or a name: "did not
   report a profit" never merges into "did report a profit", nor "2.1 million" into
   "2.2 million" (`same_claim`).

Every claim keeps the character span(s) of the source sentence(s) it came from, so a
front end can show each verdict in place. Every reply is validated against a schema
(the decoder enforces it where it can); a reply that stays invalid after the
structured-output retries raises `StructuredOutputError`, never a made-up claim. Steps
3–5 can be turned off (`ExtractionConfig`); without decomposition each sentence is one
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
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core import context
from veracity.core.bounds import MaxTokens
from veracity.core.events import Stage
from veracity.core.labels import LabelSpace
from veracity.llm.base import LLM
from veracity.llm.structured import complete_structured
from veracity.nlp.text import sentence_spans
from veracity.prompting import PromptBundle, render_messages, truncate_chars, using_prompts

__all__ = [
    "CATEGORIES",
    "PROMPTS",
    "ClaimExtraction",
    "ClaimExtractor",
    "ExtractedClaim",
    "ExtractionConfig",
    "conjunction_label",
    "dedupe",
    "given_atomic",
    "same_claim",
    "word_overlap",
]

PROMPTS = "veracity.evidence"
Category = Literal["factual", "opinion", "advice", "question", "trivial"]
CATEGORIES: tuple[str, ...] = ("factual", "opinion", "advice", "question", "trivial")
_WORD = re.compile(r"\w+")
_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nobody|nothing|nowhere|neither|nor|without|cannot)\b|n't\b",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"\d+(?:[.,:/-]\d+)*")
_NUMBER_WORDS = frozenset(
    _WORD.findall(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
        "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
        "eighty ninety hundred thousand million billion trillion first second third fourth "
        "fifth sixth seventh eighth ninth tenth once twice half dozen"
    )
)
_NAME = re.compile(r"\b[A-Z][\w'’-]*")
_OPENERS = frozenset(  # capitalised at a sentence's start, not names
    _WORD.findall(
        "a an the this that these those it its he she his her they their them we our i you "
        "your in on at by for from of to with as after before during since until there here "
        "when while if but and or so some many most all each every one"
    )
)
_CUT = re.compile(r" \[…[\d,]+ characters cut\]$")
_GIVEN: ContextVar[str | None] = ContextVar("veracity_given_atomic_claim", default=None)


class ExtractionConfig(BaseModel):
    """What the extraction does and how much of the text it reads."""

    model_config = ConfigDict(extra="forbid")

    decompose: bool = True  # atomic claims per sentence (False: each sentence is a claim)
    decontextualise: bool = True  # rewrite each claim to stand alone
    checkworthiness: bool = True  # sort claims into categories; factual ones are checked
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
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    text: str
    atomic: str
    spans: list[tuple[int, int]]
    sentence: int
    category: Category | None = None
    merged: int = 0

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
    """

    model_config = ConfigDict(extra="forbid")

    claims: list[ExtractedClaim]
    sentences: list[tuple[int, int]]
    duplicates: int = 0
    truncated: bool = False

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
        """The claims of `text` (see the module docstring).

        Args:
            text: the text.
            question: the question `text` answers, if it answers one (shown to the steps).

        Raises:
            ValueError: a blank text.
            StructuredOutputError: a step's reply stayed invalid after its retries.
        """
        if not text.strip():
            raise ValueError("claim extraction needs a non-empty text")
        if _is_given(text):
            return self._given(text)
        question = " ".join(question.split()) if question and question.strip() else None
        if self.prompts is None:  # the templates as shipped, or as the method's run has them
            return await self._extract(text, question)
        with using_prompts(self.prompts):
            return await self._extract(text, question)

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
        if self.prompts is None:
            done = await self._categorise(found, shown, question)
        else:
            with using_prompts(self.prompts):
                done = await self._categorise(found, shown, question)
        return [str(c.category) for c in done]

    def _given(self, text: str) -> ClaimExtraction:
        """`text` as its own one claim: it was extracted before (see `given_atomic`)."""
        whole = " ".join(_CUT.sub("", text).split())
        claim = ExtractedClaim(
            id="c1", text=whole, atomic=whole, spans=[(0, len(text))], sentence=0
        )
        context.current().emit(
            Stage(name=self.tag, step="claim given atomic: not split again", sentences=1,
                  claims=1, checkworthy=1, duplicates=0)
        )  # fmt: skip
        return ClaimExtraction(claims=[claim], sentences=[(0, len(text))])

    async def _extract(self, text: str, question: str | None) -> ClaimExtraction:
        cfg = self.config
        # Splitting is CPU work on text of any length: it runs in a worker thread (the
        # server's event loop keeps answering) and stops past the last sentence read and
        # its window (one more, so `truncated` is known).
        limit = cfg.max_sentences + cfg.window_sentences + 1
        spans = await asyncio.to_thread(sentence_spans, text, limit=limit)
        read = spans[: cfg.max_sentences]
        shown = truncate_chars(text, cfg.context_chars)
        per_sentence = await asyncio.gather(
            *(
                self._sentence(i, text[s:e], window(text, spans, i, cfg), question)
                for i, (s, e) in enumerate(read)
            )
        )
        found: list[ExtractedClaim] = []
        for i, items in enumerate(per_sentence):
            for atomic, rewritten in items:
                found.append(
                    ExtractedClaim(
                        id="", text=rewritten, atomic=atomic, spans=[read[i]], sentence=i
                    )
                )
        if cfg.checkworthiness and found:
            found = await self._categorise(found, shown, question)
        claims, duplicates = dedupe(found, cfg.dedupe_threshold)
        claims = [c.model_copy(update={"id": f"c{n}"}) for n, c in enumerate(claims, 1)]
        context.current().emit(
            Stage(
                name=self.tag,
                step="claims extracted",
                sentences=len(read),
                claims=len(claims),
                checkworthy=sum(c.checkworthy for c in claims),
                duplicates=duplicates,
            )
        )
        return ClaimExtraction(
            claims=claims, sentences=read, duplicates=duplicates, truncated=len(spans) > len(read)
        )

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

    async def _ask(self, template: str, model: type, step: str, **variables: object) -> list:
        result = await complete_structured(
            self.llm,
            render_messages(PROMPTS, template, **variables),
            model,
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
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
        pairs = zip(found, categories, strict=True)
        return [c.model_copy(update={"category": k}) for c, k in pairs]


def _claim_text(max_chars: int) -> object:
    """A non-blank string of at most `max_chars`, as a list item type."""
    return Annotated[str, Field(min_length=1, max_length=max_chars)]


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of two texts' lower-cased word sets (1.0 for two empty texts)."""
    wa, wb = set(_WORD.findall(a.lower())), set(_WORD.findall(b.lower()))
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


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
    before = "[…] " if spans[lo][0] > 0 and text[: spans[lo][0]].strip() else ""
    after = " […]" if text[spans[hi][1] :].strip() else ""
    return f"{before}{shown}{after}"


def _facts_of(text: str) -> tuple[list[str], set[str], set[str]]:
    """What two claims must share to be one: their negations, numbers and dates (digits
    and number words), and names (capitalised words other than sentence openers)."""
    negations = sorted(m.group(0).lower() for m in _NEGATION.finditer(text))
    words = _WORD.findall(text.lower())
    numbers = set(_NUMBER.findall(text)) | {w for w in words if w in _NUMBER_WORDS}
    names = {m.group(0).lower() for m in _NAME.finditer(text)} - _OPENERS
    return negations, numbers, names


def same_claim(a: str, b: str, threshold: float) -> bool:
    """Whether `b` repeats `a`: their words overlap at or above `threshold` and they agree
    on every negation, number, date and name (`_facts_of`)."""
    if word_overlap(a, b) < threshold:
        return False
    return _facts_of(a) == _facts_of(b)


def dedupe(claims: list[ExtractedClaim], threshold: float) -> tuple[list[ExtractedClaim], int]:
    """`claims` without the ones that repeat an earlier claim (`same_claim`: word overlap
    at or above `threshold`, the same negations, numbers, dates and names); a repeat's
    spans join the earlier claim's. Returns the claims kept and how many were merged."""
    kept: list[ExtractedClaim] = []
    merged = 0
    for claim in claims:
        same = next((k for k in kept if same_claim(k.text, claim.text, threshold)), None)
        if same is None:
            kept.append(claim.model_copy(update={"spans": list(claim.spans)}))
            continue
        merged += 1
        same.spans.extend(s for s in claim.spans if s not in same.spans)
        same.merged += 1
    return kept, merged


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
