"""ToE's LLM calls other than evidence reading: claim features and base queries, one
query per search action, the LLM judge, and decomposition into sub-claims.

Every reply is validated against its model in `schema.py` (re-asked on failure by
`complete_structured`); nothing here turns a failed reply into a value.
"""

from __future__ import annotations

from typing import Any

from veracity.core import context
from veracity.core.errors import StructuredOutputError
from veracity.core.events import Fault
from veracity.llm.base import LLM, Message
from veracity.llm.structured import complete_structured
from veracity.methods.toe.config import ToEConfig
from veracity.methods.toe.schema import (
    DIMENSIONS,
    ClaimFeatures,
    EvidenceItem,
    JudgeScores,
    SearchQuery,
    SubClaim,
    decomposition_model,
)
from veracity.prompt_layout import claim_material, make_layout
from veracity.prompting import truncate_chars

# What each action's source is, for the query writer.
TOOL_HELP: dict[str, tuple[str, str]] = {
    "web": ("web search", "a general web search engine"),
    "counter": ("web search", "a general web search engine"),
    "arxiv": ("arXiv", "a search over academic papers; use technical terms"),
    "wiki": ("Wikipedia", "an encyclopedia; name the topic, person, place or event"),
    "social": ("social media", "a search over posts by public figures and organisations"),
    "factcheck": ("fact-check sites", "a search over fact-checking articles"),
    "reddit": ("Reddit", "a search over Reddit discussions"),
}
# Which of the three query types each action pursues.
GOALS: dict[str, str] = {
    "web": "background",
    "counter": "counter",
    "arxiv": "supporting",
    "wiki": "background",
    "social": "supporting",
    "factcheck": "supporting",
    "reddit": "supporting",
}
_GOAL_TEXT = {
    "background": "learn the general background of the topic",
    "supporting": "find material that would confirm the statement",
    "counter": "find material that would contradict or debunk the statement",
}
PROMPTS = "veracity.methods.toe"
TAGS = (
    "address", "context", "document", "evidence", "excerpt", "published", "queries", "query",
    "statement", "title",
)  # every tag ToE's prompts fence: the shared layout's one notice names them all  # fmt: skip


def toe_messages(cfg: ToEConfig, template: str, claim: str, **variables: Any) -> list[Message]:
    """Template `template` about `claim`. The material every ToE prompt shows is the
    statement, so the calls about one node open alike under the shared layout."""
    statement = claim_material(claim, heading="Statement:", tag="statement")
    layout = make_layout(cfg.prompt_layout, TAGS)
    return layout.messages(PROMPTS, template, material=statement, **variables)


class ToEAgents:
    """The LLM agents of one ToE run."""

    def __init__(self, llm: LLM, cfg: ToEConfig):
        self.llm = llm
        self.cfg = cfg

    async def features(self, claim: str, context: str | None, node_id: str) -> ClaimFeatures:
        messages = toe_messages(self.cfg, "features.j2", claim, context=context or "")
        result = await complete_structured(
            self.llm, messages, ClaimFeatures, temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens, tag=f"toe:features:{node_id}",
        )  # fmt: skip
        return result.value

    def base_query(self, action: str, features: ClaimFeatures) -> str:
        goal = GOALS[action]
        return {
            "background": features.background_query,
            "supporting": features.supporting_query,
            "counter": features.counter_query,
        }[goal]

    async def query(
        self, action: str, claim: str, features: ClaimFeatures, used: list[str], node_id: str
    ) -> str:
        """The query `action` sends: written by the LLM for the tool (paper), or the
        matching base query when `query_per_action` is off."""
        if not self.cfg.query_per_action:
            return self.base_query(action, features)
        tool, help_text = TOOL_HELP[action]
        messages = toe_messages(
            self.cfg,
            "query.j2",
            claim,
            tool=tool,
            tool_help=help_text,
            goal=_GOAL_TEXT[GOALS[action]],
            background=features.background_query,
            supporting=features.supporting_query,
            counter=features.counter_query,
            used=used,
        )
        try:
            result = await complete_structured(
                self.llm, messages, SearchQuery, temperature=self.cfg.temperature,
                max_tokens=128, tag=f"toe:query:{action}:{node_id}",
            )  # fmt: skip
        except StructuredOutputError as exc:
            # the node's own base query of the same type stands in, on the record
            fallback = self.base_query(action, features)
            context.current().emit(
                Fault(
                    name=f"toe:query:{action}",
                    error=str(exc),
                    detail={"node": node_id, "fallback": fallback},
                )
            )
            return fallback
        return result.value.query

    async def judge(self, claim: str, evidence: list[EvidenceItem], node_id: str) -> JudgeScores:
        """The LLM judge's soft veracity and reliability for a node's evidence."""
        messages = toe_messages(self.cfg, "judge.j2", claim, evidence=render_evidence(evidence))
        result = await complete_structured(
            self.llm, messages, JudgeScores, temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_tokens, tag=f"toe:judge:{node_id}",
        )  # fmt: skip
        return result.value

    async def decompose(self, claim: str, known: str, node_id: str) -> list[SubClaim]:
        """2–4 sub-claims on distinct dimensions, weights normalised to sum to 1.

        Raises:
            StructuredOutputError: no valid decomposition after the retries.
        """
        cfg = self.cfg
        output = decomposition_model(cfg.min_subclaims, cfg.max_subclaims, parent=claim)
        messages = toe_messages(
            cfg, "decompose.j2", claim, known=known,
            min_n=cfg.min_subclaims, max_n=cfg.max_subclaims, dimensions="; ".join(DIMENSIONS),
        )  # fmt: skip
        result = await complete_structured(
            self.llm, messages, output, temperature=cfg.temperature,
            max_tokens=cfg.max_tokens, tag=f"toe:decompose:{node_id}",
        )  # fmt: skip
        return list(result.value.subclaims)


def render_evidence(evidence: list[EvidenceItem], limit: int = 20) -> str:
    """The evidence objects as numbered lines for the judge."""
    lines = []
    for i, e in enumerate(evidence[:limit], 1):
        tags = [e.stance, f"relevance {e.relevance:.1f}", f"credibility {e.credibility:.1f}"]
        if e.official:
            tags.append("official source")
        tags.append("primary report" if e.primary else "republication")
        passages = " ".join(e.statements)
        lines.append(
            f"[E{i}] {e.title or e.doc_id} ({', '.join(tags)}): {e.key_point}"
            + (f" Passages: {truncate_chars(passages, 500)}" if passages else "")
        )
    return "\n".join(lines)
