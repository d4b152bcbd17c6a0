"""S2MAD: stance-separated multi-agent debate over a post's replies (Algorithm 1).

1. Stance separation (section 3.2): an LLM scores every reply in [-1, 1]; the k most
   supportive form P, the k most opposed form N (`stance.py`).
2. Subjectivity (section 3.3): the LLM says whether the post is only a personal opinion;
   the answer picks the initial-opinion prompt family.
3. Debate (section 3.4): D_p starts from P, D_n from N; M update rounds; agreement ends
   the debate with that answer, otherwise a judge rules on both final replies
   (`debate.py`).

Debaters and the judge answer Fake / Real; the verdict is in the ``rumor`` space through
`ANSWER_TO_RUMOR` (Fake -> rumor, Real -> non-rumor; veracity score: non-rumor = 1).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from veracity.core import context
from veracity.core.context import CheckContext
from veracity.core.events import Decision, Note, Stage, TraceEvent
from veracity.core.types import (
    CheckInput,
    Document,
    Evidence,
    InputError,
    Post,
    Reply,
    Stance,
    Verdict,
)
from veracity.deliberation import DebateResult
from veracity.llm.base import LLM
from veracity.llm.choice import ask_choice
from veracity.methods.base import BaseMethod
from veracity.methods.s2mad.config import ANSWER_TO_RUMOR, S2MADConfig
from veracity.methods.s2mad.debate import (
    build_debate,
    build_single,
    comment_group,
)
from veracity.methods.s2mad.stance import (
    PostPrompts,
    ScoredReply,
    StanceOutcome,
    StanceScorer,
    random_split,
    select_top_k,
)
from veracity.methods.s2mad.view import stance_groups
from veracity.methods.view import ViewPart


class SubjectivityAnswer(BaseModel):
    answer: Literal["Yes", "No"] = Field(description="Yes: the post is only a personal opinion")


@dataclass
class Sides:
    """The replies each agent starts from.

    Attributes:
        mode: "stance" (P and N from scores), "random" (w/o Stance) or "all" (the single
            agent reads every reply).
        p: D_p's replies (P, or the first random half).
        n: D_n's replies (N, or the second random half).
        everything: the replies of mode "all".
        outcome: the stance scores, in mode "stance".
    """

    mode: str
    p: list[ScoredReply] = field(default_factory=list)
    n: list[ScoredReply] = field(default_factory=list)
    everything: list[ScoredReply] = field(default_factory=list)
    outcome: StanceOutcome | None = None

    def groups(self, side: str) -> list[dict[str, Any]]:
        """Comment blocks for D_p ("p"), D_n ("n") or the single agent ("both")."""
        if self.mode == "all":
            return [comment_group("all", self.everything)]
        if self.mode == "random":
            chosen = {"p": self.p, "n": self.n, "both": self.p + self.n}[side]
            return [comment_group("mixed", chosen)]
        blocks = {"p": [("support", self.p)], "n": [("oppose", self.n)]}
        pairs = blocks.get(side, [("support", self.p), ("oppose", self.n)])
        return [comment_group(kind, replies) for kind, replies in pairs]


class S2MADMethod(BaseMethod):
    """Stance-separated multi-agent debate for rumor detection on social-media threads."""

    name = "s2mad"
    config_class = S2MADConfig
    default_labels = "rumor"
    allowed_labels = ("rumor",)
    input_kinds = ("post",)
    description = "stance-separated two-agent debate over a post's replies (S2MAD)"
    config: S2MADConfig

    @classmethod
    def view_parts(cls, events: Sequence[TraceEvent], item: Mapping[str, Any]) -> list[ViewPart]:
        """The replies by stance (`veracity.methods.s2mad.view`)."""
        return stance_groups(events, item)

    @property
    def scorer_llm(self) -> LLM:
        """The model that scores stances: `scorer_llm:` of the config (built once by the
        runtime's model builder, with the user-level cache), else the run's model."""
        cached = getattr(self, "_scorer", None)
        if cached is not None:
            return cached
        if self.config.scorer_llm is None:
            return self.llm
        self._scorer: LLM = self.build_model(self.config.scorer_llm, "scorer_llm")
        return self._scorer

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        if not isinstance(item, Post):
            raise TypeError(f"s2mad checks posts, not a {item.kind}")
        cfg = self.config
        replies = self.thread(item)
        ctx.emit(
            Stage(
                name=self.name,
                step="thread",
                detail={"replies_total": len(item.replies), "used": len(replies)},
            )
        )
        prompts = PostPrompts.of(cfg.prompt_layout, item.text)  # every prompt of the check
        # Stance scoring and the subjectivity question are independent: run them together,
        # and let both finish before re-raising a fault of either (no orphaned calls).
        outcomes = await asyncio.gather(
            self.separate(item, replies, prompts),
            self.family(item, prompts),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        sides, family = outcomes
        ctx.emit(
            Stage(
                name=self.name,
                step="stance_separation",
                detail={
                    "mode": sides.mode,
                    "p": [s.reply.id for s in sides.p],
                    "n": [s.reply.id for s in sides.n],
                },
            )
        )
        if cfg.debate:
            debate = build_debate(
                self.llm,
                cfg,
                claim=item.text,
                family=family,
                p_groups=sides.groups("p"),
                n_groups=sides.groups("n"),
                prompts=prompts,
            )
        else:
            debate = build_single(
                self.llm,
                cfg,
                claim=item.text,
                family=family,
                groups=sides.groups("both"),
                prompts=prompts,
            )
        result = await debate.run()
        return self.assemble(result, sides, family, item, replies)

    def thread(self, post: Post) -> list[Reply]:
        """The replies used, oldest first; only the first N for early detection.

        Raises:
            InputError: a cut-off by time was asked for but some replies have no time.
        """
        limit = self.config.max_replies_by_time
        if limit is not None and limit < len(post.replies):
            undated = [r.id for r in post.replies if r.created_at is None]
            if undated:
                raise InputError(
                    f"max_replies_by_time={limit} needs reply times, but {len(undated)} "
                    f"replies have none (e.g. {undated[0]!r})"
                )
        return post.replies_by_time(limit)

    async def separate(self, post: Post, replies: list[Reply], prompts: PostPrompts) -> Sides:
        """Stance separation, the random split of "w/o Stance", or every reply (the
        scorer's prompts made by the check's `prompts`)."""
        cfg = self.config
        if not cfg.debate and cfg.single_agent_input == "all":
            return Sides(mode="all", everything=[ScoredReply(reply=r) for r in replies])
        if not cfg.stance_separation or (not cfg.debate and cfg.single_agent_input == "random"):
            p, n = random_split(replies, cfg.top_k, seed=f"{cfg.seed}:{post.id or post.text}")
            return Sides(mode="random", p=p, n=n)
        scorer = StanceScorer.from_config(self.scorer_llm, cfg, prompts)
        outcome = await scorer.score(post.text, replies)
        p, n = select_top_k(outcome.scored, cfg.top_k)
        return Sides(mode="stance", p=p, n=n, outcome=outcome)

    async def family(self, post: Post, prompts: PostPrompts) -> str:
        """The initial-opinion prompt family: fixed by config, or from the LLM's answer
        (its prompt made by the check's `prompts`)."""
        cfg = self.config
        if cfg.prompt_family != "auto":
            context.current().emit(
                Note(name="subjectivity", detail={"fixed_family": cfg.prompt_family})
            )
            return cfg.prompt_family
        answer = await ask_choice(
            self.llm,
            prompts.messages("subjectivity.j2"),
            SubjectivityAnswer,
            "answer",
            ("Yes", "No"),
            tag="subjectivity",
            policy=cfg.choice,
            temperature=cfg.scorer_temperature,
            max_tokens=32,
        )
        family = "subjective" if answer.label == "Yes" else "non_subjective"
        context.current().emit(
            Decision(
                name="subjectivity",
                label=answer.label,
                answer=answer.answer,
                probabilities=answer.probabilities,
                estimator=answer.estimator,
                matched_mass=answer.matched_mass,
                detail={"note": answer.note, "family": family},
            )
        )
        return family

    def assemble(
        self, result: DebateResult, sides: Sides, family: str, post: Post, replies: list[Reply]
    ) -> Verdict:
        """The verdict: label mapped to the rumor space, score, confidence, evidence."""
        cfg = self.config
        metadata = _metadata(cfg, result, sides, family, post, replies)
        evidence = self.evidence(sides)
        decision = result.decision
        if decision is None or decision.label is None:
            reason = result.stop_reason or "the debate reached no decision"
            return self.verdict(
                label=None,
                abstained=True,
                abstain_reason=reason,
                evidence=evidence,
                metadata=metadata,
            )
        space = self.label_space
        label = ANSWER_TO_RUMOR[decision.label]
        probs = None
        if decision.probabilities:
            probs = {ANSWER_TO_RUMOR[a]: p for a, p in decision.probabilities.items()}
        decided_by = decision.judge if cfg.debate else "single_agent"
        metadata.update(answer=decision.label, decided_by=decided_by)
        note = decision.note
        if decision.confidence is None and note is None:
            note = f"decided by {decided_by.replace('_', ' ')}; no probability was measured"
        return self.verdict(
            label=label,
            score=space.expected_score(probs) if probs else space.score(label),
            confidence=decision.confidence,
            probabilities=probs,
            probability_note=note,
            rationale=decision.reason if decided_by == "judge" else _closing(result),
            evidence=evidence,
            metadata=metadata,
        )

    def evidence(self, sides: Sides) -> list[Evidence]:
        """The replies the agents started from, as evidence (P supports, N refutes)."""
        if sides.mode == "all":
            return [
                _evidence(s, Stance.UNKNOWN, "read by the single agent") for s in sides.everything
            ]
        if sides.mode == "random":
            p_note, n_note = "random half given to Agent P", "random half given to Agent N"
            p_stance = n_stance = Stance.UNKNOWN
        else:
            p_note, n_note = "in P (backs the post)", "in N (disputes the post)"
            p_stance, n_stance = Stance.SUPPORTS, Stance.REFUTES
        return [_evidence(s, p_stance, p_note) for s in sides.p] + [
            _evidence(s, n_stance, n_note) for s in sides.n
        ]


def _metadata(
    cfg: S2MADConfig,
    result: DebateResult,
    sides: Sides,
    family: str,
    post: Post,
    replies: list[Reply],
) -> dict[str, Any]:
    outcome = sides.outcome
    return {
        "prompt_family": family,
        "stance_mode": sides.mode,
        "replies_total": len(post.replies),
        "replies_used": len(replies),
        "P": [s.reply.id for s in sides.p],
        "N": [s.reply.id for s in sides.n],
        "stance_scores": {s.reply.id: s.score for s in outcome.scored} if outcome else None,
        "stance_errors": outcome.errors if outcome else {},
        "stance_counts": outcome.counts if outcome else None,
        "rounds_run": result.rounds_run,
        "debate_rounds": result.last_round,  # update rounds after round 0
        "transcript": result.transcript.model_dump(mode="json"),
        "label_map": dict(ANSWER_TO_RUMOR),
    }


def _evidence(scored: ScoredReply, stance: Stance, note: str) -> Evidence:
    reply = scored.reply
    document = Document(
        id=reply.id,
        text=reply.text,
        source="reply",
        published_at=reply.created_at,
        metadata={
            "parent": reply.parent,
            "author": reply.author,
            "stance_score": scored.score,
            "stance_reason": scored.reason,
        },
    )
    credibility = abs(scored.score) if scored.score is not None else None
    if scored.score is not None:
        note = f"{note}; stance score {scored.score:+.2f}"
    return Evidence(document=document, stance=stance, credibility=credibility, note=note)


def _closing(result: DebateResult) -> str:
    """Rationale when no judge ruled: each agent's final reply."""
    turns = [result.transcript.last(name) for name in ("agent_p", "agent_n", "single_agent")]
    return "\n".join(
        f"{t.speaker.replace('_', ' ').title()} ({t.stance}): {t.text}" for t in turns if t
    )
