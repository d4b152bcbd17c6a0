"""MERMAID (Algorithm 1): decompose, recall, ReAct with MCP tools, answer, update memory.

``mermaid`` is the multi-agent framework: the decomposer agent φ turns the claim into
D_c = (G_c, k_c); the executor recalls M_c for the entity keys E_c, runs the ReAct loop
over the toolset τ (at most T_max steps, then a forced answer), keeps the evidence it
judges relevant and writes it back to the memory M. ``mermaid_single`` is the
single-agent comparison: one agent analyses the claim as step 0 of its own loop and goes
on from there. Without the decomposer (``decompose: false``, Table 3) the entity
keys are the claim's named entities (the shared NER), so only the decomposer is removed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from veracity.core import context
from veracity.core.context import CheckContext
from veracity.core.errors import MethodConfigError
from veracity.core.events import AgentStep, Decision, Note
from veracity.core.types import CheckInput, Evidence, Stance, Verdict
from veracity.evidence.memory import EvidenceMemory
from veracity.llm.probs import choice_probabilities
from veracity.methods.base import BaseMethod
from veracity.methods.mermaid.config import MermaidConfig
from veracity.methods.mermaid.decomposer import Decomposition, decompose
from veracity.methods.mermaid.executor import PromptParts, Toolbox, execute
from veracity.methods.mermaid.memory import (
    CheckMemory,
    named_memory_path,
    needs_home,
    open_memory,
)
from veracity.methods.mermaid.retention import Retained, retain, retrieved_documents
from veracity.nlp.entities import recognise
from veracity.nlp.ner_backends import shared_ner
from veracity.prompting import input_kind_name, render_input, render_messages
from veracity.retrieval.defaults import SourceNeed
from veracity.retrieval.guards import eval_guards, guards_with_cutoff

PACKAGE = "veracity.methods.mermaid"
MAX_NER_KEYS = 8  # as many entity keys as four triplets give (subjects and objects)


class MermaidMethod(BaseMethod):
    """Decomposer + ReAct executor with MCP tools + persistent evidence memory."""

    name = "mermaid"
    config_class = MermaidConfig
    default_labels = "true_false"  # the paper's binary setting (TRUE/FALSE, SUPPORTED/REFUTED)
    allowed_labels = ("true_false", "supported_refuted")
    description = (
        "MERMAID: claim decomposition, ReAct over MCP evidence tools, reusable evidence memory"
    )
    config: MermaidConfig
    single_agent = False

    def setup(self) -> None:
        super().setup()
        self.toolbox = Toolbox(self.config, self.sources)
        self._memory: EvidenceMemory | None = None
        self._require_named_memory()

    def _require_named_memory(self) -> None:
        """A run that reads a named memory needs it built first (proxy memory)."""
        opts = self.config.memory
        if opts.name is None or self.config.memory.mode != "read-only":
            return
        path = named_memory_path(opts.name, self.home_paths("a named memory"))
        held = self.memory().stats().entries if path.is_file() else 0
        if not held:
            raise MethodConfigError(
                f"mermaid: the memory named {opts.name!r} ({path}, namespace "
                f"{opts.namespace or 'default'!r}) holds no evidence yet; build it first with "
                f"a run that names it in mode 'on' (for the proxy-memory experiment: veracity "
                f"eval --config configs/experiments/mermaid_proxy_memory.yaml --model BUILDER)"
            )

    @classmethod
    def source_needs(cls, config: Mapping[str, Any]) -> list[SourceNeed]:
        """Web search and Wikipedia (left out where it cannot be had) for the tools, unless
        the config brings its own MCP servers."""
        cfg = cls.parse_config(config)
        if not isinstance(cfg, MermaidConfig) or cfg.mcp_servers:
            return []
        return [
            SourceNeed("web", purpose="the web search tool"),
            SourceNeed("wikipedia", "encyclopedia", off={}, purpose="the Wikipedia tools"),
        ]

    @property
    def retrieves(self) -> bool:
        """Always: the executor's tools (sources or MCP servers) are its evidence."""
        return True

    def memory(self) -> EvidenceMemory | None:
        """The evidence memory M (opened on first use; None when memory is off)."""
        if self.config.memory.mode == "off":
            return None
        if self._memory is None:
            opts, state = self.config.memory, self.state_dir
            home = self.home_paths("the evidence memory") if needs_home(opts, state) else None
            self._memory = open_memory(opts, state, self.state_namespace, home)
        return self._memory

    async def aclose(self) -> None:
        """Let go of the tool servers (`Run.aclose` calls this): each stops once no other
        run of this process uses it."""
        await self.toolbox.aclose()

    def close(self) -> None:
        """`aclose` from synchronous code (the servers stop in the background)."""
        self.toolbox.close()

    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        cfg = self.config
        kind = input_kind_name(item)
        shown = render_input(item, max_chars=cfg.max_input_chars)
        memory = CheckMemory(
            self.memory(), cfg.memory.mode, cfg.memory.replay_searches, cfg.max_result_chars
        )
        ctx.claim = item.content  # recorded sources replay this claim's searches
        with eval_guards(guards_with_cutoff(item.cutoff)):
            tools = await self.toolbox.tools()
            decomposition = await self._decompose(kind, shown)
            entities = await self._entity_keys(decomposition, item.content, memory)
            await memory.recall(entities)
            parts = PromptParts(
                kind=kind,
                input=shown,
                background=decomposition.render() if decomposition else None,
                own_analysis=self.single_agent,
                memory=memory.render_recalled(cfg.max_recalled_chars) or None,
                focus=_focus(decomposition, item.content),
            )
            result = await execute(self.llm, cfg, self.label_space, parts, tools, memory)
        retained = await self._retain(result.trajectory, memory, kind, shown)
        keep = retained.kept if retained is not None else None
        await memory.update(entities, result.trajectory, {t.name: t for t in tools}, keep)
        verdict = self._verdict(result, decomposition, memory)
        verdict.metadata["entity_keys"] = {
            "from": "ner" if decomposition is None else "decomposer",
            "entities": entities,
        }
        if retained is not None and retained.error:
            verdict.metadata["memory"]["retain_error"] = retained.error
        return verdict

    async def _entity_keys(
        self, decomposition: Decomposition | None, text: str, memory: CheckMemory
    ) -> list[str]:
        """E_c: the decomposition's subjects and objects, or without a decomposer the
        claim's named entities (first mention first, at most `MAX_NER_KEYS`)."""
        if decomposition is not None:
            return decomposition.entities
        if not memory.active:
            return []
        found = await asyncio.to_thread(recognise, text, shared_ner())
        keys = [e.text for e in found][:MAX_NER_KEYS]
        if not keys:
            context.current().emit(
                Note(name="memory", text="no named entities in the input: nothing to recall by")
            )
        return keys

    async def _retain(
        self, trajectory: Any, memory: CheckMemory, kind: str, shown: str
    ) -> Retained | None:
        """The documents the update step stores (None when the memory stores nothing)."""
        documents = retrieved_documents(trajectory)
        memory.retrieved = len(documents)
        if memory.mode != "on" or memory.memory is None:
            return None
        cfg = self.config
        retained = await retain(
            self.llm, documents, kind=kind, shown=shown, how=cfg.memory.retain,
            doc_chars=cfg.max_result_chars, temperature=cfg.temperature,
        )  # fmt: skip
        memory.kept = len(retained.kept)
        return retained

    async def _decompose(self, kind: str, shown: str) -> Decomposition | None:
        """D_c (None without the decomposer)."""
        if not self.config.decompose:
            return None
        template = "single_analysis.j2" if self.single_agent else "decompose.j2"
        tag = "executor:0" if self.single_agent else "decomposer"
        messages = render_messages(PACKAGE, template, kind=kind, input=shown)
        found = await decompose(
            self.llm, messages, tag=tag, attempts=self.config.decomposer_attempts
        )
        context.current().emit(
            AgentStep(
                name=tag,
                step=0,
                detail={
                    "phase": "decompose",
                    "text": found.render(),
                    "entities": found.entities,
                    "topics": found.topics,
                },
            )
        )
        return found

    def _verdict(self, result: Any, decomposition: Decomposition | None, memory: CheckMemory):
        space = self.label_space
        label = space.parse(result.label)
        probs = (
            choice_probabilities(result.response, space.labels, field="answer")
            if result.response is not None
            else None
        )
        if probs is not None:
            context.current().emit(
                Decision(name="executor", probabilities=probs.probs, estimator=probs.method)
            )
        evidence = [Evidence(document=d) for d in result.trajectory.documents]
        seen = {e.document.id for e in evidence}
        evidence += [
            Evidence(document=h.document, stance=Stance.UNKNOWN, note="recalled from memory")
            for h in memory.recalled
            if h.document.id not in seen
        ]
        tool_calls = len(result.trajectory.tool_calls)
        return self.verdict(
            label=label,
            score=space.expected_score(probs.probs) if probs else space.score(label),
            confidence=probs.probs[label] if probs else None,
            probabilities=probs.probs if probs else None,
            rationale=result.thought,
            evidence=evidence,
            metadata={
                "decomposition": decomposition.model_dump() if decomposition else None,
                "steps": len(result.trajectory.steps),
                "finished": result.trajectory.finished,
                "forced_answer": result.forced,
                "tool_calls": [
                    {"tool": s.action, "arguments": s.arguments, "from_memory": s.from_memory}
                    for s in result.trajectory.steps
                    if s.observation is not None
                ],
                "memory": memory.stats(),
                "counters": {
                    "tool_calls": tool_calls,
                    "steps": len(result.trajectory.steps),
                    "forced_answers": int(result.forced),
                    "memory_recalled": len(memory.recalled),
                    "memory_hits": int(bool(memory.recalled)),
                    "searches_saved": memory.searches_saved,
                    "evidence_stored": memory.stored,
                    "evidence_retrieved": memory.retrieved,
                    "evidence_kept": memory.kept,
                },
            },
        )


def _focus(decomposition: Decomposition | None, text: str) -> str:
    """A first query: the first assertion's subject and object, or the claim's start."""
    if decomposition is not None:
        first = decomposition.triplets[0]
        return f"{first.subject} {first.object}"[:120]
    return " ".join(text.split()[:12])


class MermaidSingleMethod(MermaidMethod):
    """MERMAID with one agent: it analyses the claim itself (step 0), then investigates."""

    name = "mermaid_single"
    description = "MERMAID, single agent: one agent analyses and verifies in one loop"
    single_agent = True
