"""Failed searches weighed against a verdict: no confident label over zero evidence.

Sources and evidence tools count every search that failed after its retries in the
check's context (`CheckContext.record_search_failure`). After a method has run,
`weigh_search_failures` looks at those counts:

- no search failed: the verdict is unchanged;
- some failed and some answered: the verdict is kept and carries the count and the first
  error (``metadata["search_failures"]``, read by every front end as
  `Verdict.search_warning`);
- every search failed, the method retrieves, and the verdict still has a label but no
  evidence: the label rests on nothing the method found, so the verdict becomes an
  abstention whose reason names the count and the first error. What the method answered
  is kept in the metadata (``unsupported_label``, ``unsupported_score``, ...).
"""

from __future__ import annotations

from veracity.core.context import CheckContext
from veracity.core.events import Note
from veracity.core.types import SearchFailures, Verdict

_KEPT = ("label", "score", "confidence", "probabilities", "probability_note")


def search_failures(ctx: CheckContext) -> SearchFailures | None:
    """The failed searches of the check `ctx` records (None: none failed)."""
    failed = ctx.usage.failed_searches
    if not failed:
        return None
    answered = ctx.usage.searches + ctx.tool_answers
    return SearchFailures(
        failed=failed,
        answered=answered,
        first_error=ctx.first_search_error,
        all_failed=answered == 0,
    )


def weigh_search_failures(verdict: Verdict, ctx: CheckContext, *, retrieves: bool) -> Verdict:
    """`verdict` with the check's failed searches recorded, or turned into an abstention
    when every search failed (see the module docstring).

    Args:
        verdict: what the method returned.
        ctx: the check's context (its usage counts the failed searches).
        retrieves: whether the method searches for its evidence (its declared needs).
    """
    found = search_failures(ctx)
    if found is None:
        return verdict
    metadata = {**verdict.metadata, "search_failures": found.model_dump()}
    unsupported = (
        found.all_failed and retrieves and verdict.label is not None and not verdict.evidence
    )
    if not unsupported:
        return verdict.model_copy(update={"metadata": metadata})
    for name in _KEPT:
        value = getattr(verdict, name)
        if value is not None:
            metadata[f"unsupported_{name}"] = value
    reason = (
        f"every search failed ({found.failed} failed, none answered; first error: "
        f"{found.first_error or 'unknown'}), so the method had no evidence; its answer "
        f"({verdict.label}) is kept in the metadata as unsupported_label"
    )
    ctx.emit(Note(name="search_failures", text=reason, detail=found.model_dump()))
    update = {name: None for name in _KEPT}
    return verdict.model_copy(
        update={**update, "abstained": True, "abstain_reason": reason, "metadata": metadata}
    )


__all__ = ["search_failures", "weigh_search_failures"]
