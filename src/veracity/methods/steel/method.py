"""``steel``: STEEL, multi-round retrieval-augmented verification (a baseline).

Round 1 searches the input's own text. Each round the model reads the evidence
established so far and the new results, keeps the useful passages (the established
evidence carried to the next round), and either decides — a label, when the evidence
suffices — or asks for a re-search with a new query built on what it has. The last
round must give a label. Searches that bring nothing new or a query already made end
the rounds early. See README.md for the map from STEEL's description to the code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from veracity.core import context
from veracity.core.context import CheckContext
from veracity.core.errors import MethodConfigError
from veracity.core.events import AgentStep, Note
from veracity.core.types import CheckInput, Document, Evidence, Verdict
from veracity.evidence.passages import passage_rows, search_source
from veracity.llm.choice import ChoiceResult, ask_choice
from veracity.methods.base import BaseMethod
from veracity.methods.kit import check_tool
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.methods.steel.config import SteelConfig
from veracity.methods.steel.replies import RESEARCH, final_model, round_model
from veracity.prompt_layout import make_layout
from veracity.prompting import input_kind_name, render, render_input, truncate_chars
from veracity.retrieval.base import Source
from veracity.retrieval.defaults import SourceNeed
from veracity.tools.base import SourceTool
from veracity.tools.searching import traced_search

PROMPTS = "veracity.methods.steel"
TAGS = ("claim", "passage", "query")  # every tag the prompts of a check fence


class SteelMethod(BaseMethod):
    """Retrieve, judge whether the evidence suffices, re-search, then decide (STEEL)."""

    name = "steel"
    config_class = SteelConfig
    default_labels = "true_false"
    description = (
        "STEEL: search, keep what is useful, re-search until the evidence suffices (baseline)"
    )
    config: SteelConfig

    def setup(self) -> None:
        super().setup()
        try:
            source = search_source(self.sources, self.config.source)
        except KeyError:
            source = self.pick_source(self.config.source)  # raises, naming the sources
        if source is None:
            raise MethodConfigError(
                "steel needs a source to search: give one with --source web=duckduckgo or "
                "--source web=local:INDEX"
            )
        self.source: Source = source

    @classmethod
    def source_needs(cls, config: Mapping[str, Any]) -> list[SourceNeed]:
        cfg = cls.parse_config(config)
        if not isinstance(cfg, SteelConfig):
            return []
        return [SourceNeed(cfg.source or "web", purpose="STEEL's retrieval rounds")]

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        ctx.claim = item.content  # recorded sources replay this claim's searches
        return await self._verify(item, ctx)

    def _messages(self, template: str, item: CheckInput, **variables: Any) -> list[Any]:
        """A round's or the final prompt; shared-first (`prompt_layout: shared`): one
        system note for the check, the claim and the evidence first, then the searches,
        the instructions and the template's own system text last."""
        kind = input_kind_name(item)
        shown = render_input(item, max_chars=self.config.max_input_chars)
        material = render(PROMPTS, "_claim.j2", kind=kind, input=shown)
        return make_layout(self.config.prompt_layout, TAGS).messages(
            PROMPTS,
            template,
            material=material,
            kind=kind,
            input=shown,
            labels=self.label_space.describe(),
            research=RESEARCH,
            **variables,
        )

    async def _verify(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        tool = check_tool(self.source, cfg, item)
        query = truncate_chars(" ".join(item.content.split()), cfg.query_chars)
        kept: list[Document] = []
        rounds: list[dict[str, Any]] = []
        for r in range(1, cfg.max_rounds + 1):
            shown, failed = await self._retrieve(tool, query, kept, r)
            rounds.append({"round": r, "query": query, "new": len(shown) - len(kept),
                           "error": failed})  # fmt: skip
            if r == cfg.max_rounds:
                return await self._final(item, shown, rounds, f"round budget spent ({r})")
            answer = await self._round(item, shown, [x["query"] for x in rounds], r)
            kept = _useful(answer.value.useful, shown)[: cfg.max_kept]
            rounds[-1]["kept"] = [d.id for d in kept]
            if answer.label != RESEARCH:
                return self._verdict(answer, kept or shown, rounds, f"decided in round {r}")
            query = " ".join(str(answer.value.query).split())
            if not query or query.lower() in {x["query"].lower() for x in rounds}:
                why = "no new query written" if not query else "the query repeated"
                ctx.emit(
                    Note(name=self.name, text=f"re-search stopped: {why}", detail={"round": r})
                )
                return await self._final(item, kept or shown, rounds, f"{why} in round {r}")
        raise AssertionError("unreachable: the last round returns")

    async def _retrieve(
        self, tool: SourceTool, query: str, kept: list[Document], r: int
    ) -> tuple[list[Document], str | None]:
        """The established evidence followed by this round's new results."""
        obs = await traced_search(tool, query, actor=self.name, round=r)
        have = {d.id for d in kept}
        new = [d for d in obs.documents if d.id not in have]
        return kept + new, obs.error

    async def _round(
        self, item: CheckInput, shown: list[Document], queries: list[str], r: int
    ) -> ChoiceResult:
        cfg, space = self.config, self.label_space
        answer = await ask_choice(
            self.llm,
            self._messages(
                "round.j2", item, passages=passage_rows(shown, cfg.max_result_chars),
                queries=queries,
            ),
            round_model(space, len(shown), cfg.max_reasoning_chars, cfg.query_chars),
            "decision",
            (RESEARCH, *space.labels),
            tag=f"{self.name}:round{r}",
            policy=cfg.choice,
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
        )  # fmt: skip
        searching = answer.label == RESEARCH
        context.current().emit(
            AgentStep(
                name=self.name,
                step=r,
                steps=cfg.max_rounds,
                thought=answer.value.reasoning,
                action="re-search" if searching else "answer",
                input=answer.value.query if searching else "",
                answer=None if searching else answer.label,
                detail={"p_research": (answer.probabilities or {}).get(RESEARCH)},
            )
        )
        return answer

    async def _final(
        self, item: CheckInput, shown: list[Document], rounds: list[dict[str, Any]], ended: str
    ) -> Verdict:
        cfg = self.config
        answer = await ask_label(
            self.llm,
            self._messages("final.j2", item, passages=passage_rows(shown, cfg.max_result_chars)),
            final_model(self.label_space, cfg.max_reasoning_chars),
            self.label_space,
            tag=f"{self.name}:final",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )
        return self._verdict(answer, shown, rounds, f"{ended}; a verdict was required")

    def _verdict(
        self, answer: ChoiceResult, docs: list[Document], rounds: list[dict[str, Any]], ended: str
    ) -> Verdict:
        space = self.label_space
        if answer.label in space.labels and "label" in type(answer.value).model_fields:
            fields = label_fields(answer, space)
        else:  # a round's decision: its RESEARCH share is dropped by `verdict` (and noted)
            label = space.parse(answer.label or "")
            fields = {
                "label": label, "score": space.score(label), "confidence": answer.confidence,
                "probabilities": answer.probabilities, "probability_note": answer.note,
            }  # fmt: skip
        return self.verdict(
            **fields,
            rationale=whole_sentences(answer.value.reasoning),
            evidence=[Evidence(document=d, note="established evidence") for d in docs],
            metadata={"ended": ended, "rounds": rounds},
        )


def _useful(numbers: list[int], shown: list[Document]) -> list[Document]:
    """The passages the model called useful, by their numbers (from 1), each once."""
    return [shown[n - 1] for n in dict.fromkeys(numbers) if 1 <= n <= len(shown)]
