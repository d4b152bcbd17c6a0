"""MERMAID's "retain valid evidence" step (section 3.3, Update).

Once a check's verdict is given, the executor looks back over the documents its tool
calls returned and says which of them bear on the claim; only those go into the memory
M (``memory.retain: relevant``, the paper's reading). ``retain: all`` stores every
document of every successful call, as a variant.

The reply is validated against a model that allows only the numbers of the documents
shown (`retention_model`). A reply still invalid after the re-asks, or a model that
keeps failing, leaves the memory untouched for this check: nothing is stored rather
than everything, and the trace and the verdict's metadata say why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from veracity.core import context
from veracity.core.errors import LLMTransientError, StructuredOutputError
from veracity.core.events import Fault, Note
from veracity.core.types import Document
from veracity.deliberation.react import Trajectory
from veracity.llm.base import LLM
from veracity.llm.structured import complete_structured
from veracity.prompting import render_messages, truncate_chars

PACKAGE = "veracity.methods.mermaid"
TAG = "retain"


def retrieved_documents(trajectory: Trajectory) -> list[Document]:
    """The distinct documents the check's successful tool calls returned (replays from
    memory excluded: those are remembered already), in the order they came."""
    seen: dict[str, Document] = {}
    for step in trajectory.tool_calls:
        obs = step.observation
        if obs is None or obs.error:
            continue
        for doc in obs.documents:
            seen.setdefault(doc.id, doc)
    return list(seen.values())


def retention_model(n: int) -> type[BaseModel]:
    """The reply: the numbers (1..n) of the documents to keep, none or several."""
    number = Literal[tuple(range(1, n + 1))]  # type: ignore[valid-type]
    return create_model(
        "Retention",
        __config__=ConfigDict(extra="forbid"),
        relevant=(
            list[number],  # type: ignore[valid-type]
            Field(max_length=n, description="numbers of the documents to keep; [] for none"),
        ),
    )


@dataclass
class Retained:
    """What the retention step decided for one check."""

    retrieved: list[Document]
    kept: set[str] = field(default_factory=set)  # document ids
    error: str | None = None


async def retain(
    llm: LLM,
    documents: list[Document],
    *,
    kind: str,
    shown: str,
    how: Literal["relevant", "all"],
    doc_chars: int = 500,
    temperature: float = 0.0,
) -> Retained:
    """Decide which of `documents` the memory keeps (see the module docstring).

    Raises:
        LLMError: a model fault other than an unusable reply or a transient failure
            (e.g. rejected credentials).
    """
    if not documents:
        return Retained([])
    if how == "all":
        found = Retained(documents, {d.id for d in documents})
    else:
        found = await _judge(llm, documents, kind, shown, doc_chars, temperature)
    _record(found)
    return found


async def _judge(
    llm: LLM, documents: list[Document], kind: str, shown: str, doc_chars: int, temp: float
) -> Retained:
    listed = "\n".join(
        f"[{i}] {d.title + ': ' if d.title else ''}{truncate_chars(d.text, doc_chars)}"
        for i, d in enumerate(documents, 1)
    )
    messages = render_messages(PACKAGE, "retain.j2", kind=kind, input=shown, documents=listed)
    try:
        result = await complete_structured(
            llm, messages, retention_model(len(documents)),
            temperature=temp, max_tokens=32 + 6 * len(documents), tag=TAG,
        )  # fmt: skip
    except (StructuredOutputError, LLMTransientError) as exc:
        context.current().emit(Fault(name=TAG, error=str(exc), fatal=False))
        return Retained(documents, error=f"nothing stored: {exc}")
    picked = sorted(set(result.value.relevant))
    return Retained(documents, {documents[i - 1].id for i in picked})


def _record(found: Retained) -> None:
    kept = [d.id for d in found.retrieved if d.id in found.kept]
    context.current().emit(
        Note(
            name="memory retention",
            text=f"kept {len(kept)} of {len(found.retrieved)} retrieved documents",
            detail={
                "kept": kept,
                "dropped": [d.id for d in found.retrieved if d.id not in found.kept],
                "error": found.error,
            },
        )
    )
