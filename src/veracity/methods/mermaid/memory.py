"""MERMAID's recall-then-update use of the shared evidence memory (`evidence.memory`).

Per check (Algorithm 1):

- Recall (line 7): M_c ← Recall(M, E_c), evidence filed under the decomposition's
  subjects and objects (exact, normalised or similar names), put into P_0;
- during the loop, a tool call identical to one remembered (same tool, same input) is
  answered from memory instead of the tool — the memory acting as the cache of earlier
  searches the paper describes; such steps are marked "from memory" in the history;
- Update (lines 28–29): M ← Update(M, E_c, ΔM), the evidence the retention step kept
  (`retention.py`: what the executor judged relevant, or everything with ``retain:
  all``) filed under E_c, each call's query and tool kept as metadata; a call none of
  whose documents were kept is not remembered.

``read-only`` recalls and replays but never stores; ``off`` does nothing. Counters
(recalled items, searches saved, items stored) go to the verdict's metadata.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel

from veracity.core.paths import HomePaths
from veracity.deliberation.react import Trajectory
from veracity.evidence.memory import EvidenceMemory, MemoryHit
from veracity.methods.mermaid.config import MemoryMode, MemoryOptions
from veracity.prompting import truncate_chars
from veracity.tools.base import Observation, Tool, primary_argument, render_documents

MEMORY_FILE = "evidence_memory.sqlite"


def named_memory_path(name: str, home: HomePaths) -> Path:
    """Where a named memory lives: ``<home>/memory/<name>.sqlite``."""
    return home.memory / f"{name}.sqlite"


def needs_home(options: MemoryOptions, state_dir: Path | None) -> bool:
    """Whether the memory `options` name lives under the home folder (a named memory, or
    the user-level one when neither a path nor a run's state folder is given)."""
    return options.name is not None or (options.path is None and state_dir is None)


def open_memory(
    options: MemoryOptions,
    state_dir: Path | None,
    namespace: str | None,
    home: HomePaths | None,
) -> EvidenceMemory:
    """The evidence memory at the configured (or named, or the run's, or the user's under
    `home`) location. A named memory is shared across runs: its namespace is ``default``
    unless one is given.

    Raises:
        ValueError: the memory lives under the home folder and `home` is None (see
            `needs_home`).
    """
    if needs_home(options, state_dir) and home is None:
        raise ValueError("this evidence memory lives under the home folder: pass home")
    if options.name is not None:
        path = named_memory_path(options.name, home)  # type: ignore[arg-type]
        namespace = None
    elif options.path is not None:
        path = options.path
    elif state_dir is not None:
        path = state_dir / MEMORY_FILE
    else:
        path = home.default_memory  # type: ignore[union-attr]
    path.parent.mkdir(parents=True, exist_ok=True)
    return EvidenceMemory(
        path=path,
        namespace=options.namespace or namespace or "default",
        embedder=options.embedder,
        similarity_threshold=options.similarity_threshold,
        ttl_s=options.ttl_s,
        max_per_entity=options.max_per_entity,
        max_results=options.max_recalled,
    )


def call_key(tool: Tool, arguments: BaseModel) -> str:
    """How a call is remembered: its one string argument, else its arguments as JSON."""
    data = arguments.model_dump(mode="json", exclude_none=True)
    arg = primary_argument(tool)
    if arg is not None and len(data) == 1:
        return str(data[arg])
    return json.dumps(data, sort_keys=True)


@dataclass
class CheckMemory:
    """The memory as one check uses it."""

    memory: EvidenceMemory | None
    mode: MemoryMode
    replay_searches: bool = True
    max_result_chars: int = 500
    recalled: list[MemoryHit] = field(default_factory=list)
    searches_saved: int = 0
    stored: int = 0
    recalls: int = 0
    retrieved: int = 0  # distinct documents the check's tool calls returned
    kept: int = 0  # of those, the ones the retention step kept for the memory

    @property
    def active(self) -> bool:
        return self.memory is not None and self.mode != "off"

    async def recall(self, entities: list[str]) -> list[MemoryHit]:
        """M_c: evidence remembered under `entities` (nothing when off or no entities)."""
        if not self.active or not entities:
            return []
        assert self.memory is not None
        self.recalls += 1
        self.recalled = await self.memory.arecall(entities)
        return self.recalled

    def render_recalled(self, max_chars: int) -> str:
        """M_c as prompt text (empty when nothing was recalled)."""
        lines = []
        for hit in self.recalled:
            doc = hit.document
            origin = f"(filed under {hit.entity!r}"
            origin += f", found by {hit.source}: {hit.query!r})" if hit.query else ")"
            title = f"{doc.title}: " if doc.title else ""
            lines.append(f"[{doc.id}] {origin} {title}{truncate_chars(doc.text, 400)}")
        return truncate_chars("\n".join(lines), max_chars)

    async def replay(self, tool: Tool, arguments: BaseModel) -> Observation | None:
        """The remembered result of an identical earlier call, or None (the `before_call`)."""
        if not (self.active and self.replay_searches):
            return None
        assert self.memory is not None
        docs = await self.memory.alookup_search(call_key(tool, arguments), tool.name)
        if docs is None:
            return None
        self.searches_saved += 1
        return Observation(text=render_documents(docs, self.max_result_chars), documents=docs)

    async def update(
        self,
        entities: list[str],
        trajectory: Trajectory,
        tools: dict[str, Tool],
        keep: set[str] | None = None,
    ) -> int:
        """ΔM: file the kept documents of each successful tool call under `entities`.

        Args:
            keep: ids of the documents to store (None: every document).
        """
        if self.mode != "on" or self.memory is None:
            return 0
        for step in trajectory.tool_calls:
            obs, tool = step.observation, tools.get(step.action)
            if obs is None or obs.error or tool is None or step.arguments is None:
                continue
            docs = [d for d in obs.documents if keep is None or d.id in keep]
            if not docs:
                continue  # nothing of this call is worth remembering, nor the call itself
            arguments = tool.input_model.model_validate(step.arguments)
            self.stored += await self.memory.astore(
                entities, docs, query=call_key(tool, arguments), source=tool.name
            )
        return self.stored

    def stats(self) -> dict[str, int | str]:
        return {
            "mode": self.mode,
            "recalls": self.recalls,
            "recalled": len(self.recalled),
            "hit": int(bool(self.recalled)),
            "searches_saved": self.searches_saved,
            "stored": self.stored,
            "retrieved": self.retrieved,
            "kept": self.kept,
        }
