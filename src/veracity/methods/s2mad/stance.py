"""Stance separation (S2MAD section 3.2): score every reply, keep the top-k of each side.

An LLM scores each reply in [-1, 1]: above 0 when it backs the post (the stronger, the
higher), below 0 when it disputes it, exactly 0 when it goes against common sense
(Eq. 1). Replies are scored in batches — several per call, each under a short local id
("c1", "c2", ...) — and the batches run concurrently. A reply whose score is missing,
duplicated, not a number or outside [-1, 1] is asked again (with the problem spelled
out, its batch shown as before and only the replies still without a score asked for, so
the re-ask's prompt extends the first ask's); a reply still without a score after
`attempts` batched asks is asked once more on its own, one reply per call (a small model
that fails a batch often manages one score); only then is it recorded as an error for
that reply and left out. It is never given a made-up score. `StanceOutcome` counts the
scored and unscored replies.

`select_top_k` forms P (the k highest positive scores) and N (the k lowest negative
scores) of Eq. 2; `random_split` is the "w/o Stance" ablation.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core import context
from veracity.core.events import Decision, Fault, Note
from veracity.core.types import Reply
from veracity.core.untrusted import Safe
from veracity.llm.base import LLM, Message, StructuredOutputError
from veracity.llm.structured import complete_structured
from veracity.methods.s2mad.config import S2MADConfig
from veracity.prompt_layout import Layout, PromptLayout, make_layout
from veracity.prompting import render

PROMPTS = "veracity.methods.s2mad"


class StanceScoringError(StructuredOutputError):
    """No reply of a thread got a usable stance score."""


class ScoredReply(BaseModel):
    """A reply with its stance score (None when the reply was not scored).

    Attributes:
        reply: the reply.
        score: s_i in [-1, 1]; None in the "w/o Stance" split, which scores nothing.
        reason: the scorer's short justification.
    """

    model_config = ConfigDict(extra="forbid")

    reply: Reply
    score: float | None = None
    reason: str = ""


class StanceOutcome(BaseModel):
    """Scores of a thread's replies, in the order the replies were given.

    Attributes:
        scored: every reply that got a usable score.
        errors: reply id -> why it has no score after every ask.
        calls: scoring calls made (first asks and re-asks).
    """

    model_config = ConfigDict(extra="forbid")

    scored: list[ScoredReply] = Field(default_factory=list)
    errors: dict[str, str] = Field(default_factory=dict)
    calls: int = 0

    @property
    def counts(self) -> dict[str, int]:
        """Replies scored and left unscored (the scored-reply rate is scored / total)."""
        return {"scored": len(self.scored), "unscored": len(self.errors)}


def _batch_model(ids: Sequence[str], reasons: bool = True) -> type[BaseModel]:
    """Output model of one batch: a list of {id, reason, score}; ids limited to the batch."""
    fields: dict[str, Any] = {"id": (Literal[tuple(ids)], Field(description="the comment id"))}
    if reasons:
        fields["reason"] = (str, Field(description="one short sentence"))
    # The range and the count are told to the decoder but checked per comment
    # (`check_scores`), so that one bad score does not cost the batch's other scores.
    fields["score"] = (
        float,
        Field(
            description="stance score from -1.0 to 1.0",
            json_schema_extra={"minimum": -1.0, "maximum": 1.0},
        ),
    )
    item = create_model("CommentScore", **fields)
    count = {"minItems": len(ids), "maxItems": len(ids)}
    return create_model(
        "CommentScores",
        scores=(list[item], Field(description="one per comment", json_schema_extra=count)),
    )


@dataclass(frozen=True)
class PostPrompts:
    """How every S2MAD prompt of a check is made: its material is the post (`_post.j2`),
    laid out by the method's layout (the shared one opens every prompt with the post)."""

    layout: Layout
    material: Safe

    @classmethod
    def of(cls, layout: PromptLayout, post: str) -> PostPrompts:
        material = render(PROMPTS, "_post.j2", claim=post)
        return cls(make_layout(layout, ("reply", "argument")), material)

    def messages(self, template: str, **variables: Any) -> list[Message]:
        return self.layout.messages(PROMPTS, template, material=self.material, **variables)


class StanceScorer:
    """Scores replies with an LLM, batched and concurrent, re-asking for bad scores.

    Args:
        llm: the model.
        batch_size: replies per call.
        concurrency: calls in flight at once.
        attempts: batched asks per reply; then (with `rescore_singly`) one more ask with
            the reply alone, before it is recorded as an error.
        temperature: sampling temperature of the scorer.
        tokens_per_reply: completion budget per reply in a batch.
        max_reply_chars: each reply is cut to this many characters in the prompt.
        reasons: ask for a one-sentence reason before each score.
        rescore_singly: re-score replies left unscored by the batches one per call.
        prompts: the check's prompts (`PostPrompts`); None: the paper layout's.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        batch_size: int = 10,
        concurrency: int = 4,
        attempts: int = 2,
        temperature: float = 0.0,
        tokens_per_reply: int = 96,
        max_reply_chars: int = 500,
        reasons: bool = True,
        rescore_singly: bool = True,
        prompts: PostPrompts | None = None,
    ):
        if batch_size < 1 or concurrency < 1 or attempts < 1:
            raise ValueError("batch_size, concurrency and attempts must be at least 1")
        self.llm = llm
        self.batch_size = batch_size
        self.attempts = attempts
        self.temperature = temperature
        self.tokens_per_reply = tokens_per_reply
        self.max_reply_chars = max_reply_chars
        self.reasons = reasons
        self.rescore_singly = rescore_singly
        self.prompts = prompts
        self._limit = concurrency

    @classmethod
    def from_config(
        cls, llm: LLM, cfg: S2MADConfig, prompts: PostPrompts | None = None
    ) -> StanceScorer:
        """The scorer with an S2MAD config's stance settings and the check's `prompts`."""
        return cls(
            llm,
            batch_size=cfg.stance_batch_size,
            concurrency=cfg.stance_concurrency,
            attempts=cfg.stance_attempts,
            temperature=cfg.scorer_temperature,
            tokens_per_reply=cfg.stance_tokens_per_reply,
            max_reply_chars=cfg.max_reply_chars,
            reasons=cfg.stance_reasons,
            rescore_singly=cfg.stance_rescore_singly,
            prompts=prompts,
        )

    async def score(self, claim: str, replies: Sequence[Reply]) -> StanceOutcome:
        """Score every reply of `claim`'s thread.

        Raises:
            StanceScoringError: replies were given but none got a usable score.
        """
        local = {f"c{i}": r for i, r in enumerate(replies, 1)}
        ids = list(local)
        batches = [ids[i : i + self.batch_size] for i in range(0, len(ids), self.batch_size)]
        pending = list(local)
        problems: dict[str, str] = {}
        results: dict[str, tuple[float, str]] = {}
        sem = asyncio.Semaphore(self._limit)
        calls = 0
        for attempt in range(1, self.attempts + 1):
            if not pending:
                break
            # a re-ask shows its batch as the first ask did and asks for the replies still
            # without a score, so its prompt extends the first ask's (a server reuses it)
            asks = [(b, [lid for lid in b if lid in pending]) for b in batches]
            asks = [(shown, ask) for shown, ask in asks if ask]
            outcomes = await asyncio.gather(
                *(
                    self._guarded(
                        sem,
                        claim,
                        [(lid, local[lid]) for lid in shown],
                        ask,
                        problems,
                        f"stance:{attempt}:{n}",
                    )
                    for n, (shown, ask) in enumerate(asks, 1)
                )
            )
            calls += len(asks)
            for good, bad in outcomes:
                results.update(good)
                problems.update(bad)
            pending = [lid for lid in pending if lid not in results]
        if pending and self.batch_size > 1 and self.rescore_singly:
            pending, single_calls = await self._singly(
                sem, claim, local, pending, results, problems
            )
            calls += single_calls
        return self._outcome(local, results, problems, pending, calls)

    async def _singly(
        self,
        sem: asyncio.Semaphore,
        claim: str,
        local: dict[str, Reply],
        pending: list[str],
        results: dict[str, tuple[float, str]],
        problems: dict[str, str],
    ) -> tuple[list[str], int]:
        """Re-score each reply still without a score alone, one reply per call (a small
        model that cannot produce a valid batch often can produce one score); returns
        the replies still unscored and the calls made."""
        context.current().emit(
            Note(
                name="stance_scorer",
                note=f"{len(pending)} replies unscored after batched scoring; "
                "scoring them one per call",
            )
        )
        outcomes = await asyncio.gather(
            *(
                self._guarded(
                    sem, claim, [(lid, local[lid])], [lid], problems, f"stance:single:{lid}"
                )
                for lid in pending
            )
        )
        for good, bad in outcomes:
            results.update(good)
            problems.update(bad)
        return [lid for lid in pending if lid not in results], len(pending)

    def _outcome(
        self,
        local: dict[str, Reply],
        results: dict[str, tuple[float, str]],
        problems: dict[str, str],
        failed: list[str],
        calls: int,
    ) -> StanceOutcome:
        ctx = context.current()
        errors = {}
        for lid in failed:
            reply = local[lid]
            errors[reply.id] = problems.get(lid, "no score")
            ctx.emit(
                Fault(name="stance_scorer", error=errors[reply.id], detail={"reply_id": reply.id})
            )
        scored = [
            ScoredReply(reply=local[lid], score=results[lid][0], reason=results[lid][1])
            for lid in local
            if lid in results
        ]
        ctx.emit(
            Decision(
                name="stance_scorer",
                detail={
                    "scores": {s.reply.id: s.score for s in scored},
                    "reasons": {s.reply.id: s.reason for s in scored},
                    "errors": errors,
                    "calls": calls,
                },
            )
        )
        if local and not scored:
            raise StanceScoringError(
                f"none of the {len(local)} replies got a usable stance score: "
                + "; ".join(f"{k}: {v}" for k, v in list(errors.items())[:5]),
                attempts=[],
            )
        return StanceOutcome(scored=scored, errors=errors, calls=calls)

    async def _guarded(
        self,
        sem: asyncio.Semaphore,
        claim: str,
        shown: list[tuple[str, Reply]],
        ids: list[str],
        problems: dict[str, str],
        tag: str,
    ) -> tuple[dict[str, tuple[float, str]], dict[str, str]]:
        async with sem:
            return await self._batch(claim, shown, ids, problems, tag)

    async def _batch(
        self,
        claim: str,
        shown: list[tuple[str, Reply]],
        ids: list[str],
        problems: dict[str, str],
        tag: str,
    ) -> tuple[dict[str, tuple[float, str]], dict[str, str]]:
        """Ask for the scores of `ids` among the replies `shown`; returns (usable scores,
        problems) keyed by local id."""
        prompts = self.prompts or PostPrompts.of("paper", claim)
        messages = prompts.messages(
            "stance_score.j2",
            comments=[{"id": lid, "text": r.text} for lid, r in shown],
            problems=[f"{lid}: {problems[lid]}" for lid in ids if lid in problems],
            only=ids if len(ids) < len(shown) else [],
            max_chars=self.max_reply_chars,
            reasons=self.reasons,
        )
        try:
            result = await complete_structured(
                self.llm,
                messages,
                _batch_model(ids, self.reasons),
                temperature=self.temperature,
                max_tokens=self.tokens_per_reply * len(ids) + 32,
                tag=tag,
            )
        except StructuredOutputError as exc:
            context.current().emit(
                Fault(name="stance_scorer", error=str(exc)[:300], detail={"batch": ids})
            )
            return {}, dict.fromkeys(ids, "the reply for its batch was not valid JSON")
        return check_scores(ids, result.value.scores)


def check_scores(
    ids: Sequence[str], items: Sequence[Any]
) -> tuple[dict[str, tuple[float, str]], dict[str, str]]:
    """Split a batch's items into usable scores and per-id problems.

    A usable score is a finite number in [-1, 1] given exactly once for its id.
    """
    seen: dict[str, list[Any]] = {lid: [] for lid in ids}
    for item in items:
        seen[item.id].append(item)
    good: dict[str, tuple[float, str]] = {}
    bad: dict[str, str] = {}
    for lid, found in seen.items():
        if not found:
            bad[lid] = "no score was given for this comment"
        elif len({f.score for f in found}) > 1:
            bad[lid] = "this comment got several different scores"
        elif not math.isfinite(found[0].score) or not -1.0 <= found[0].score <= 1.0:
            bad[lid] = f"the score {found[0].score} is outside [-1, 1]"
        else:
            good[lid] = (float(found[0].score), getattr(found[0], "reason", ""))
    return good, bad


def select_top_k(
    scored: Sequence[ScoredReply], k: int
) -> tuple[list[ScoredReply], list[ScoredReply]]:
    """P and N of Eq. 2.

    P holds the k highest scores above 0, N the k lowest below 0, each strongest first;
    replies scored exactly 0 (against common sense) join neither. Ties keep the order of
    `scored` (the replies' time order), so earlier replies win.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    order = {id(s): i for i, s in enumerate(scored)}
    positive = [s for s in scored if s.score is not None and s.score > 0]
    negative = [s for s in scored if s.score is not None and s.score < 0]
    positive.sort(key=lambda s: (-s.score, order[id(s)]))
    negative.sort(key=lambda s: (s.score, order[id(s)]))
    return positive[:k], negative[:k]


def random_split(
    replies: Sequence[Reply], k: int, seed: int | str
) -> tuple[list[ScoredReply], list[ScoredReply]]:
    """The "w/o Stance" ablation: up to 2k replies drawn at random, split into halves.

    The first half (one more when the count is odd) goes to D_p, the rest to D_n.
    """
    if k < 1:
        raise ValueError("k must be at least 1")
    rng = random.Random(seed)
    drawn = rng.sample(list(replies), min(2 * k, len(replies)))
    half = (len(drawn) + 1) // 2
    return (
        [ScoredReply(reply=r) for r in drawn[:half]],
        [ScoredReply(reply=r) for r in drawn[half:]],
    )
