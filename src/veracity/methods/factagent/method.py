"""``factagent``: FactAgent, zero-shot fake-news detection by an agent with tools (a baseline).

FactAgent follows an expert workflow: each tool looks at the news from one angle
(`config.TOOLS`: sensational phrasing, language, common sense, political standing, a
search for other reports, the URL's source) and reports its reasoning and whether it
found a sign of fake news; a last call weighs the findings against the checklist and
chooses the label. The search tool searches the title (else the start of the text) and
reads the results; the URL tool runs only for inputs that carry a URL. See README.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from veracity.core.context import CheckContext
from veracity.core.errors import MethodConfigError
from veracity.core.events import AgentStep, Note
from veracity.core.types import CheckInput, Evidence, Verdict
from veracity.evidence.passages import search_source
from veracity.llm.structured import complete_structured
from veracity.methods.base import BaseMethod
from veracity.methods.factagent import replies
from veracity.methods.factagent.config import FactAgentConfig
from veracity.methods.kit import check_tool
from veracity.methods.labelling import ask_label, label_fields, whole_sentences
from veracity.prompt_layout import make_layout
from veracity.prompting import input_kind_name, render, render_input, truncate_chars
from veracity.retrieval.base import Source
from veracity.retrieval.defaults import SourceNeed
from veracity.tools.base import Observation
from veracity.tools.searching import traced_search

PROMPTS = "veracity.methods.factagent"
TAGS = ("news", "results", "url", "finding")  # every tag the prompts of a check fence


class FactAgentMethod(BaseMethod):
    """Tools look at the news one angle at a time; a last call weighs their findings."""

    name = "factagent"
    config_class = FactAgentConfig
    default_labels = "real_fake"
    description = (
        "FactAgent: tools check wording, language, common sense, standing, search and URL, "
        "then a verdict (baseline)"
    )
    config: FactAgentConfig

    def setup(self) -> None:
        super().setup()
        self.source: Source | None = None
        if "search" in self.config.tools:
            try:
                self.source = search_source(self.sources, self.config.source)
            except KeyError:
                self.source = self.pick_source(self.config.source)  # raises, naming them
            if self.source is None:
                raise MethodConfigError(
                    "factagent's search tool needs a source: give one with --source "
                    "web=duckduckgo or --source web=local:INDEX, or leave `search` out of tools"
                )

    @classmethod
    def source_needs(cls, config: Mapping[str, Any]) -> list[SourceNeed]:
        cfg = cls.parse_config(config)
        if not isinstance(cfg, FactAgentConfig) or "search" not in cfg.tools:
            return []
        return [SourceNeed(cfg.source or "web", purpose="FactAgent's search tool")]

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        ctx.claim = item.content  # recorded sources replay this claim's searches
        return await self._detect(item, ctx)

    def _messages(self, template: str, item: CheckInput, **variables: Any) -> list[Any]:
        """A tool's or the verdict's prompt; shared-first (`prompt_layout: shared`): one
        system note for the check, the news first (`_news.j2`, as the templates show it),
        the template's own system text last (see `veracity.prompt_layout`)."""
        kind = input_kind_name(item)
        shown = render_input(item, max_chars=self.config.max_input_chars)
        news = render(PROMPTS, "_news.j2", kind=kind, input=shown)
        layout = make_layout(self.config.prompt_layout, TAGS)
        return layout.messages(PROMPTS, template, material=news, kind=kind, **variables)

    async def _detect(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg, space = self.config, self.label_space
        findings: list[dict[str, Any]] = []
        evidence: list[Evidence] = []
        url = getattr(item, "url", None)
        for tool in dict.fromkeys(cfg.tools):  # each tool once, in the configured order
            if tool == "url" and not url:
                ctx.emit(Note(name=self.name, text="url tool skipped: the input has no URL"))
                continue
            results = None
            if tool == "search":
                obs = await self._search(item)
                results = obs.text
                evidence += [Evidence(document=d, note="search tool") for d in obs.documents]
            found = await self._finding(item, tool, results, url)
            findings.append({"tool": tool, **found.model_dump()})
            ctx.emit(
                AgentStep(
                    name=self.name,
                    step=len(findings),
                    thought=found.reasoning,
                    action=tool,
                    detail={"tool": tool, "suspicious": found.suspicious},
                )
            )
        answer = await ask_label(
            self.llm,
            self._messages("verdict.j2", item, findings=findings, labels=space.describe()),
            replies.verdict_model(space, self._chars()),
            space,
            tag=f"{self.name}:verdict",
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            policy=cfg.choice,
        )
        return self.verdict(
            **label_fields(answer, space),
            rationale=whole_sentences(answer.value.reasoning),
            evidence=evidence,
            metadata={
                "findings": findings,
                "suspicious": [f["tool"] for f in findings if f["suspicious"]],
            },
        )

    def _chars(self) -> int:
        """The reasoning cap: within the output-token budget, so that constrained decoding
        (which makes room for every capped string) keeps each call under ``max_tokens``."""
        cfg = self.config
        return min(cfg.max_reasoning_chars, max(20, cfg.max_tokens - 200))

    async def _search(self, item: CheckInput) -> Observation:
        cfg = self.config
        assert self.source is not None  # set whenever `search` is among the tools
        tool = check_tool(self.source, cfg, item)
        title = getattr(item, "title", "") or item.content
        query = truncate_chars(" ".join(title.split()), cfg.query_chars)
        return await traced_search(tool, query, actor=self.name)

    async def _finding(
        self, item: CheckInput, tool: str, results: str | None, url: str | None
    ) -> BaseModel:
        cfg = self.config
        result = await complete_structured(
            self.llm,
            self._messages("tool.j2", item, tool=tool, results=results, url=url),
            replies.finding_model(self._chars()),
            temperature=cfg.temperature,
            max_tokens=cfg.max_tokens,
            tag=f"{self.name}:{tool}",
        )
        return result.value
