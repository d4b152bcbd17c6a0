"""One search tool over a method's source, with each search recorded in the trace.

The baselines that search for one statement at a time (SAFE, FacTool, FactCheck-GPT,
FOLK, ProgramFC, Self-Ask) share this: `source_tool` builds the `SourceTool` (the
input's date as the cutoff, the evaluation's guards through `SourceTool.run`) and
`traced_search` runs one query and records it as a ``tool_call`` event, so every front
end shows it and a failed search is knowledge the model reads, never an exception.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from veracity.core import context
from veracity.core.events import ToolCall
from veracity.retrieval.base import Source
from veracity.tools.base import Observation, SourceTool
from veracity.tools.evidence import SOURCE_HINTS

__all__ = ["source_tool", "traced_search"]


def source_tool(
    source: Source, *, top_k: int, max_chars: int, before: _dt.date | None = None
) -> SourceTool:
    """A `SourceTool` named after `source` (``search_<name>``)."""
    kind = getattr(source, "kind", "")
    return SourceTool(
        source,
        re.sub(r"\W+", "_", f"search_{getattr(source, 'name', 'source')}"),
        SOURCE_HINTS.get(kind, f"{kind or 'a'} source"),
        top_k=top_k,
        max_chars=max_chars,
        before=before,
    )


async def traced_search(
    tool: SourceTool,
    query: str,
    *,
    actor: str,
    step: int | None = None,
    round: int | None = None,
    **detail: Any,
) -> Observation:
    """Search `query` with `tool`; a ``tool_call`` event by `actor` records it (with the
    agent's `step` or debate `round`, and what else places the search in the method in
    `detail`: a claim's or a predicate's number)."""
    obs = await tool.run(query)
    where = {k: v for k, v in (("step", step), ("round", round)) if v is not None}
    context.current().emit(
        ToolCall(
            name=actor,
            tool=tool.name,
            arguments={"query": query},
            error=obs.error,
            documents=[d.id for d in obs.documents],
            **where,
            detail=detail,
        )
    )
    return obs
